"""On-disk response cache (SQLite) keyed by the request, for reproducible reruns and cheap resume.

The key is the SHA-256 of the canonical JSON of everything that determines the answer: endpoint URL,
model, messages, tools, temperature, seed, reasoning effort, token cap and tool mode. Trials differ by
seed, so they never share an answer. The file is safe for several threads and processes (WAL journal, a
busy timeout, one short transaction per access).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prefix_exec.jsonl import dumps


def request_key(request: Mapping[str, Any]) -> str:
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)
    # surrogatepass: a conversation holding a model's lone surrogate still has a key (the same bytes as
    # UTF-8 for every other text).
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """``get``/``put`` of a JSON response (plus its original latency in seconds) by request."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._setup()

    def _setup(self) -> None:
        # Switching a fresh file to WAL fails at once ("database is locked") instead of waiting when another
        # worker is doing the same, so several workers opening one new cache retry here.
        for attempt in range(1, 41):
            try:
                with self._connect() as db:
                    if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                        db.execute("PRAGMA journal_mode=WAL")
                    db.execute(
                        "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, response TEXT NOT NULL, "
                        "latency_s REAL NOT NULL)"
                    )
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 40:
                    raise
                time.sleep(0.025 * attempt)

    def _connect(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0)
            # WAL with synchronous=NORMAL skips the fsync per commit; after a crash the file is still
            # consistent and at worst the last answers are missing, which only costs a re-request.
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def get(self, request: Mapping[str, Any]) -> tuple[dict[str, Any], float] | None:
        row = (
            self._connect()
            .execute("SELECT response, latency_s FROM responses WHERE key = ?", (request_key(request),))
            .fetchone()
        )
        if row is None:
            return None
        return json.loads(row[0]), float(row[1])

    def put(self, request: Mapping[str, Any], response: Mapping[str, Any], latency_s: float) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO responses (key, response, latency_s) VALUES (?, ?, ?)",
                (request_key(request), dumps(response), latency_s),  # lone surrogates escaped
            )

    def __len__(self) -> int:
        return int(self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def __getstate__(self) -> dict[str, Any]:
        # Connections do not cross process boundaries (Ray workers); each process opens its own.
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self._local = threading.local()
