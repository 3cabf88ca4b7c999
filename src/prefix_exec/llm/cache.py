"""On-disk response cache (SQLite) keyed by the request, for reproducible reruns and cheap resume.

The key is the SHA-256 of the canonical JSON of everything that determines the answer: endpoint URL,
model, messages, tools, temperature, seed, reasoning effort, token cap and tool mode. Trials differ by
seed, so they never share an answer. Beside the answers, the file keeps each request as it was asked, bounded
and redacted (:mod:`prefix_exec.llm.request_copy`), with how it is read (role, mode, text format, the declared
tools' names) and when it was asked, in the order asked (:meth:`ResponseCache.asked`): a request that has no
answer yet is in flight (or was cut short). ``prefix-exec show`` reads them, during a run too. The file is safe
for several threads and processes (WAL journal, a busy timeout, one short transaction per access).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prefix_exec.json_types import JsonMapping, JsonObject, dumps
from prefix_exec.llm.request_copy import kept_request
from prefix_exec.records.sqlite_file import SqliteFile

_SCHEMA = "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, response TEXT NOT NULL, latency_s REAL NOT NULL)"
#: The requests as asked, in order (rowid); ``reading``: how the answer is read (role, mode, text_format, tools).
_REQUESTS = (
    "CREATE TABLE IF NOT EXISTS requests (key TEXT PRIMARY KEY, asked_at REAL NOT NULL, reading TEXT NOT NULL, "
    "request TEXT NOT NULL)"
)


@dataclass(frozen=True)
class Exchange:
    """A request as the cache kept it (:func:`~prefix_exec.llm.request_copy.kept_request`), ``reading`` (role,
    mode, text_format, tools), when it was asked (Unix time), and its answer with the latency (``None``: no
    answer yet: in flight, or the run stopped before it came)."""

    key: str
    asked_at: float
    reading: JsonObject
    request: JsonObject
    response: JsonObject | None
    latency_s: float | None


def request_key(request: JsonMapping) -> str:
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)
    # surrogatepass: a conversation holding a model's lone surrogate still has a key (the same bytes as
    # UTF-8 for every other text).
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """``get``/``put`` of a JSON response (plus its original latency in seconds) by request."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = SqliteFile(self.path, _SCHEMA)
        with self._file.connect() as db:  # a cache written before requests were kept gains the table
            db.execute(_REQUESTS)

    def asked(self, request: JsonMapping, reading: JsonMapping) -> None:
        """Keep ``request`` (bounded and redacted) and how its answer is read, before it is sent; a request
        already kept keeps its first time."""
        with self._file.connect() as db:
            db.execute(
                "INSERT OR IGNORE INTO requests (key, asked_at, reading, request) VALUES (?, ?, ?, ?)",
                (request_key(request), time.time(), dumps(dict(reading)), dumps(kept_request(request))),
            )

    def exchanges(self) -> Iterator[Exchange]:
        """Every kept request in the order asked, with its answer where there is one."""
        rows = (
            self._file.connect()
            .execute(
                "SELECT q.key, q.asked_at, q.reading, q.request, r.response, r.latency_s FROM requests q "
                "LEFT JOIN responses r ON r.key = q.key ORDER BY q.rowid"
            )
            .fetchall()
        )
        for key, asked_at, reading, request, response, latency_s in rows:
            answer = json.loads(response) if response is not None else None
            late = float(latency_s) if latency_s is not None else None
            yield Exchange(str(key), float(asked_at), json.loads(reading), json.loads(request), answer, late)

    def get(self, request: JsonMapping) -> tuple[JsonObject, float] | None:
        row = (
            self._file.connect()
            .execute("SELECT response, latency_s FROM responses WHERE key = ?", (request_key(request),))
            .fetchone()
        )
        if row is None:
            return None
        return json.loads(row[0]), float(row[1])

    def put(self, request: JsonMapping, response: JsonMapping, latency_s: float) -> None:
        with self._file.connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO responses (key, response, latency_s) VALUES (?, ?, ?)",
                (request_key(request), dumps(response), latency_s),  # lone surrogates escaped
            )

    def entries(self) -> Iterator[tuple[str, JsonObject, float]]:
        """Every stored ``(key, response, latency_s)``, by key: a cache written out as data (a test fixture)."""
        rows = self._file.connect().execute("SELECT key, response, latency_s FROM responses ORDER BY key").fetchall()
        for key, response, latency_s in rows:
            yield str(key), json.loads(response), float(latency_s)

    def put_entry(self, key: str, response: JsonMapping, latency_s: float) -> None:
        """Store ``response`` under a key :meth:`entries` gave (a cache read back from data)."""
        with self._file.connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO responses (key, response, latency_s) VALUES (?, ?, ?)",
                (key, dumps(response), latency_s),
            )

    def __len__(self) -> int:
        return int(self._file.connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0])
