"""A SQLite file that several threads and processes use at once: the response cache and the plan store.

The file is in WAL mode with a 30 s busy timeout, and each access is one short transaction, so readers and a
writer do not block each other. Each thread has its own connection (a connection must not cross threads),
opened on first use with ``synchronous=NORMAL``: WAL then skips the fsync per commit; after a crash the file is
still consistent and at worst the last rows are missing, which costs a re-request. A pickled copy (a Ray
worker's) opens its own connections; connections never cross process boundaries.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from prefix_exec.json_types import JsonObject


class SqliteFile:
    """``path`` (its folder made if missing) with ``schema`` (one ``CREATE TABLE IF NOT EXISTS``) applied.

    Raises ``sqlite3.DatabaseError`` when ``path`` is not a SQLite file; callers say what the file is for."""

    def __init__(self, path: Path, schema: str) -> None:
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        # Switching a fresh file to WAL fails at once ("database is locked") instead of waiting when another
        # worker is doing the same, so several workers opening one new file retry here.
        for attempt in range(1, 41):
            try:
                with self.connect() as db:
                    if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                        db.execute("PRAGMA journal_mode=WAL")
                    db.execute(schema)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 40:
                    raise
                time.sleep(0.025 * attempt)

    def connect(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0)
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def __getstate__(self) -> JsonObject:
        return {"path": self.path}

    def __setstate__(self, state: JsonObject) -> None:
        self.path = state["path"]
        self._local = threading.local()
