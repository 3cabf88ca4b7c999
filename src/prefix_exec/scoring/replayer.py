"""Replaying one rollout inside its budget (:class:`Replayer`, pickled to worker processes), and what becomes of it:
its record, or its line made where it was replayed (:class:`Written`), a :class:`~prefix_exec.trajectory.Skipped`,
or ``None`` (:data:`Outcome`); what a run's ``on_record`` may be (a function, or an :class:`Observer` in two
halves); and the group fsyncs between outcomes (:class:`Sync`, :func:`add_syncs`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from prefix_exec import budget
from prefix_exec.envs.base import Environment
from prefix_exec.errors import InputError, ReplayError
from prefix_exec.json_types import dumps
from prefix_exec.records.codec import record_to_json
from prefix_exec.records.infrastructure import failure_of
from prefix_exec.records.redaction import redact_json
from prefix_exec.replay import replay
from prefix_exec.scoring.units import EnvFor, Scorable, unit_name
from prefix_exec.trajectory import PrefixRecord, Rollout, Skipped, UnitKey


@runtime_checkable
class Observer(Protocol):
    """An ``on_record`` of :func:`~prefix_exec.scoring.run.score_to_file` in two halves, so that worker processes
    take the costly one: :attr:`look`, a function of a record that pickles (a module-level function, or a
    ``functools.partial`` of one with plain data), runs where the record is made; :meth:`take` runs in the reading
    process, in input order, with the record's key and what ``look`` gave (say, a consistency check's
    disagreements and count). ``look`` must have no effect but its result: it runs in whichever process replayed
    the record, out of the reading process's sight and not in input order. It sees the record before redaction
    (secrets in metadata included): what it gives goes to ``take``, which must redact what it writes."""

    @property
    def look(self) -> Callable[[PrefixRecord], object]: ...

    def take(self, key: UnitKey, seen: object) -> None: ...


#: A function given every record written (:func:`~prefix_exec.scoring.run.score_to_file`'s ``on_record``), or an
#: :class:`Observer`.
OnRecord = Callable[[PrefixRecord], None] | Observer


def record_line(record: PrefixRecord) -> str:
    """The JSONL line of ``record`` (no newline) as the records file holds it: an input's settings in its
    metadata (another tool's ``api_base``) lose their URL credentials."""
    row = record_to_json(record)
    if "metadata" in row:
        # Through JSON and back before redaction: a value JSON cannot hold as it is (a tuple, a set, an object made
        # by code) becomes what the line holds (a list, its repr), so a secret in it is redacted too (redact_json
        # walks JSON's types only); and the record's own metadata, which the row shares, is not changed in place.
        row["metadata"] = redact_json(json.loads(dumps(row["metadata"])))
    return dumps(row)


@dataclass(frozen=True)
class Written:
    """A record as a worker process sends it back: its line (:func:`record_line`, the costly part of writing it,
    made there), its key, whether it is executable, what the run's :class:`Observer` looked at in it (``None``
    without one), and the infrastructure failure it is marked with (:mod:`prefix_exec.records.infrastructure`)."""

    line: str
    key: UnitKey
    executable: bool
    seen: object
    infrastructure: str | None = None


#: What became of one input unit: its record (or, from a worker, its line), why it was not scored, or ``None``:
#: kept from the output (resume).
Outcome = PrefixRecord | Written | Skipped | None


#: Records are fsynced in a group at most this often, and at the end (each is flushed to the kernel as it is
#: written, so a kill of the process keeps it; a crash of the machine may lose the last group). One fsync a
#: record costs about a millisecond on these machines: as much as reading and writing the record.
SYNC_SECONDS = 0.5


class Sync:
    """Between outcomes: the records written since the last fsync are fsynced now, one fsync for the group
    (:class:`records.jsonl.JsonlWriter`); those written after it are fsynced at the next (or at the end)."""


SYNC = Sync()


def add_syncs(outcomes: Iterator[Outcome]) -> Generator[Outcome | Sync]:
    """``outcomes`` with :data:`SYNC` after any of them that comes :data:`SYNC_SECONDS` or more after the last."""
    synced = time.monotonic()
    for outcome in outcomes:
        yield outcome
        if time.monotonic() - synced >= SYNC_SECONDS:
            yield SYNC
            synced = time.monotonic()


@dataclass(frozen=True)
class Replayer:
    """Replays one rollout inside its budget (see :func:`~prefix_exec.scoring.run.score_to_file`); pickled to
    worker processes."""

    prepare: Callable[[Rollout], Rollout | Scorable] | None
    rollout_seconds: float | None
    call_memory_mb: int
    #: Whether a worker sends back a record as its line (:meth:`sent`): false when the run's ``on_record`` is a
    #: plain function, which needs the record itself; ``look``: the run's :attr:`Observer.look`, if any.
    lines: bool = False
    look: Callable[[PrefixRecord], object] | None = None

    def __call__(self, rollout: Rollout, env: Environment | EnvFor) -> PrefixRecord | Skipped:
        """The record of ``rollout`` prepared and replayed on ``env`` (or the environment ``env`` builds for
        it), or a :class:`Skipped` saying why it cannot be scored."""
        try:
            with budget.rollout_budget(self.rollout_seconds, self.call_memory_mb):
                ready = self.prepare(rollout) if self.prepare is not None else rollout
                if isinstance(ready, Scorable):
                    return replay(ready.rollout, ready.environment(ready.rollout))
                return replay(ready, env if isinstance(env, Environment) else env(ready))
        except (ReplayError, InputError, budget.OverBudget) as exc:
            return Skipped(unit_name(rollout), str(exc))

    def sent(self, outcome: PrefixRecord | Skipped) -> PrefixRecord | Written | Skipped:
        """``outcome`` as a worker sends it back: a record as :class:`Written` when :attr:`lines`."""
        return self.written(outcome) if self.lines and isinstance(outcome, PrefixRecord) else outcome

    def written(self, record: PrefixRecord) -> Written:
        """``record`` as its line, with what :attr:`look` gives of it."""
        seen = self.look(record) if self.look is not None else None
        return Written(record_line(record), record.key, record.executable, seen, failure_of(record.metadata))
