"""The run's store of shared initial plans (``plans.sqlite``): one per (dataset, task, model, trial, turn, request).

:mod:`prefix_exec.agents.shared_plan` says what is shared and why. The worker hands each unit the
:class:`UnitPlans` of its (dataset, task, model, trial), so ``plan-conditioned``, ``dual-loop`` and
``dual-loop-accept-all`` of one task start every planned turn from the same plan. By default the store is the
run directory's ``plans.sqlite``; ``[run] plans = "PATH"`` in the grid names another file, so that a verifier
rerun in a run directory of its own (another ``k_val`` or ``verifier_model``) reuses the first run's plans.

The store keeps what it is given: a plan is written once and never replaced; ``--resume`` finds it again. While
one unit asks the planner for a plan, the others that need the same plan wait for it (:meth:`PlanStore.making`:
thread locks and a record lock on ``plans.sqlite.lock``), so the planner is asked once per plan; units on other
machines sharing the file may race, and then the first plan stored wins. Each row holds the key fields in the
clear, the planner request's digest, the planner's answer, the cost of the call that made it (JSON) and the
method of the unit that made it. The file is safe for several threads and processes, as the response cache
(WAL journal, a busy timeout, one short transaction per access).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from prefix_exec.agents.shared_plan import KeyedLocks, SharedPlan
from prefix_exec.errors import InputError
from prefix_exec.json_types import dumps, loads
from prefix_exec.records.codec import cost_from_json, cost_to_json
from prefix_exec.records.sqlite_file import SqliteFile
from prefix_exec.records.values import Fields

#: The store's file name in a run directory.
PLANS = "plans.sqlite"
#: The threads of this process making a plan, by (store path, key); every worker's store object shares them.
_THREAD_LOCKS = KeyedLocks()
#: Record locks are taken on byte (key hash mod this) of the lock file.
_LOCK_BYTES = 1 << 20
_COLUMNS = "dataset, task_id, model, trial, turn, request"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS plans (dataset TEXT NOT NULL, task_id TEXT NOT NULL, model TEXT NOT NULL, "
    "trial INTEGER NOT NULL, turn INTEGER NOT NULL, request TEXT NOT NULL, content TEXT NOT NULL, "
    f"cost TEXT NOT NULL, generated_by TEXT NOT NULL, PRIMARY KEY ({_COLUMNS}))"
)


class PlanStore:
    """Shared initial plans in a SQLite file; :meth:`for_unit` gives one unit's :class:`UnitPlans`.

    Opening a file that is not such a store is an :class:`~prefix_exec.errors.InputError` naming it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._file = SqliteFile(self.path, _SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise InputError(
                f"the plan store cannot be opened: {exc}",
                path=self.path,
                hint="it holds the run's shared initial plans; delete it only to have every plan asked again",
            ) from None

    def get(self, key: tuple[str, str, str, int, int, str]) -> SharedPlan | None:
        """The plan stored under ``(dataset, task_id, model, trial, turn, request digest)``, or ``None``."""
        where = " AND ".join(f"{c.strip()} = ?" for c in _COLUMNS.split(","))
        row = (
            self._file.connect().execute(f"SELECT content, cost, generated_by FROM plans WHERE {where}", key).fetchone()
        )
        return None if row is None else _plan(self.path, key, row)

    def put(self, key: tuple[str, str, str, int, int, str], plan: SharedPlan) -> SharedPlan:
        """Store ``plan`` under ``key`` unless a plan is there; return ``plan`` when stored, else the stored one."""
        with self._file.connect() as db:
            inserted = db.execute(
                f"INSERT OR IGNORE INTO plans ({_COLUMNS}, content, cost, generated_by) VALUES ({', '.join('?' * 9)})",
                (*key, json.dumps(plan.content), dumps(cost_to_json(plan.cost)), plan.generated_by),
            ).rowcount
        if inserted:
            return plan
        stored = self.get(key)
        if stored is None:  # pragma: no cover - a row is never deleted
            raise RuntimeError(f"{self.path}: a plan vanished after a conflicting insert")
        return stored

    @contextlib.contextmanager
    def making(self, key: tuple[str, str, str, int, int, str]) -> Iterator[None]:
        """Held while the plan of ``key`` is looked up and, if missing, made: a lock per key for the threads of
        this process, and a POSIX record lock on one byte of ``plans.sqlite.lock`` (chosen by the key's hash)
        for the processes on this machine (process pools, local Ray workers). Two keys rarely share a byte;
        when they do, one waits for the other's planner call, which is harmless."""
        with _THREAD_LOCKS((str(self.path), key)):
            byte = int.from_bytes(hashlib.sha256(json.dumps(list(key)).encode()).digest()[:4], "big") % _LOCK_BYTES
            with open(self.path.with_name(self.path.name + ".lock"), "a+b") as handle:
                fcntl.lockf(handle, fcntl.LOCK_EX, 1, byte)
                try:
                    yield
                finally:
                    fcntl.lockf(handle, fcntl.LOCK_UN, 1, byte)

    def check(self) -> None:
        """Read every stored plan, at a run's start: a row this module did not write is refused before any unit
        runs, and a count read as 0 is noted (:func:`~prefix_exec.records.values.noting_zeroed`) in this thread,
        where the workers reading it later note nothing."""
        columns = f"{_COLUMNS}, content, cost, generated_by"
        for row in self._file.connect().execute(f"SELECT {columns} FROM plans ORDER BY rowid"):
            _plan(self.path, tuple(row[:6]), (row[6], row[7], row[8]))

    def __len__(self) -> int:
        return int(self._file.connect().execute("SELECT COUNT(*) FROM plans").fetchone()[0])

    def for_unit(self, dataset: str, task_id: str, model: str, trial: int) -> UnitPlans:
        return UnitPlans(self, (dataset, task_id, model, trial))


class UnitPlans:
    """The :class:`~prefix_exec.agents.shared_plan.PlanBook` of one (dataset, task, model, trial): ``key``, which
    the units of every method of that task, model and trial share (a unit's identity without its method)."""

    def __init__(self, store: PlanStore, key: tuple[str, str, str, int]) -> None:
        self.store = store
        self.key = key

    def obtain(self, turn: int, request: str, make: Callable[[], SharedPlan]) -> SharedPlan:
        key = (*self.key, turn, request)
        with self.store.making(key):
            found = self.store.get(key)
            return found if found is not None else self.store.put(key, make())


def _plan(path: Path, key: tuple[Any, ...], row: tuple[str, str, str]) -> SharedPlan:
    """A stored row as a plan; a row this module did not write is an :class:`InputError`. Its cost is read as a
    rollout's is (:func:`~prefix_exec.records.codec.cost_from_json`): a count or time no call can have (an older
    version stored a server's 10^4000) is read as 0, noted where a collection is open (:meth:`PlanStore.check`)."""
    unreadable = InputError(
        f"the plan stored for {key[:5]} is unreadable",
        path=path,
        hint="the file is not one prefix-exec wrote; delete it to have its plans asked again",
    )
    try:
        content, cost, generated_by = loads(row[0]), loads(row[1]), row[2]  # bounded: never a RecursionError
    except (ValueError, TypeError):
        raise unreadable from None
    if not isinstance(content, str) or not isinstance(cost, dict) or not isinstance(generated_by, str):
        raise unreadable
    where = f"plans({', '.join(map(str, key[:5]))}).cost."
    return SharedPlan(content, cost_from_json(Fields(cost, str(path), None, where)), generated_by)
