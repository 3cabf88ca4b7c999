"""On-disk response cache (SQLite) keyed by the request, for reproducible reruns and cheap resume.

The key is the SHA-256 of the canonical JSON of everything that determines the answer: endpoint URL,
model, messages, tools, temperature, seed, reasoning effort, token cap and tool mode. Trials differ by
seed, so they never share an answer. The file is safe for several threads and processes (WAL journal, a
busy timeout, one short transaction per access).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from prefix_exec.json_types import JsonMapping, JsonObject, dumps
from prefix_exec.records.sqlite_file import SqliteFile

_SCHEMA = "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, response TEXT NOT NULL, latency_s REAL NOT NULL)"


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
