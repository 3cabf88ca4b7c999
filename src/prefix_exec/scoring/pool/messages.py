"""The pool's wire: what a worker (process or Ray actor) answers and what a transport reports, which both sides of
``score --workers N`` import (the worker, :mod:`.worker`; the reading process's transports, :mod:`.processes` and
:mod:`.ray`, and its schedule, :mod:`.schedule`). It sits at the bottom of the pool and imports nothing of it.

A worker process's first message is ``(READY, None)``, then ``(BUILT, token)`` for each environment built, then
``(seq, pickled answer)`` for each unit, in the order it was sent: an :data:`~prefix_exec.scoring.replayer.Outcome`,
:class:`Raised`, :class:`Decoded` (an :class:`~prefix_exec.scoring.units.Undecoded` unit) or :class:`Batched` (a
:class:`~prefix_exec.scoring.units.Batch`). The reading process reports an answer that does not load as
:class:`Unloadable`, and a worker's end as :class:`Died`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from prefix_exec.scoring.replayer import Outcome
from prefix_exec.scoring.units import Batch, Scorable, Undecoded
from prefix_exec.trajectory import Skipped, UnitKey

#: The sequence number of a worker process's first message, ``(READY, None)``: its imports and settings are done.
READY = -1
#: The sequence number of ``(BUILT, token)``, sent once an environment a worker process was sent is built (or
#: failed to build: its rollouts are told why): rollouts replay on it without waiting for its imports.
BUILT = -2


class Raised:
    """An exception met reading the input or replaying a unit: raised when every unit before it is written, as
    one worker would have raised it there."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


@dataclass(frozen=True)
class Decoded:
    """A worker's answer for a unit it decoded (:class:`~prefix_exec.scoring.units.Undecoded`): the rollout's
    identity, digest (:func:`~prefix_exec.scoring.numbering.rollout_digest`) and name as read, and its outcome
    (``None``: not replayed, its identity is in the output already). The reading process admits it in its turn
    (:mod:`prefix_exec.scoring.pool.settlement`)."""

    key: UnitKey
    digest: str
    name: str
    outcome: Outcome | Raised


@dataclass(frozen=True)
class Batched:
    """A worker's answer for a :class:`~prefix_exec.scoring.units.Batch`: each unit's answer in input order (a
    :class:`Decoded`, ``None`` for one that did not decode there, or the :class:`~prefix_exec.trajectory.Skipped`
    the reading gave), whether the reading stopped on an error after them (the reading process reads the batch
    again to raise it in its turn), and the note to say once they are written."""

    answers: list[Decoded | Skipped | None]
    stopped: bool
    note: str | None


@dataclass(frozen=True)
class Died:
    """A worker ended while it held rollouts; ``why`` says how (an exit code, a signal, Ray's message, or that it
    did not answer within the unit's bound). ``attempts``: how many times in all a unit its worker died on is sent
    (1: a local process's, never again: the unit is its culprit); ``infrastructure``: a unit still lost after them
    is the system's failure, not the input's (a Ray actor's: :func:`~prefix_exec.scoring.pool.settlement.lost`)."""

    why: str
    attempts: int = 1
    infrastructure: bool = False


@dataclass(frozen=True)
class Unloadable:
    """A worker's answer for a unit that does not load in the reading process (it pickled in the worker: an
    exception class whose ``__init__`` takes other arguments than its ``args``, say); ``why`` says what failed.
    The reading process replays that unit itself (:mod:`prefix_exec.scoring.pool.schedule`)."""

    why: str


#: What a transport reports: (worker index, sequence number of the unit, its outcome, or what the worker decoded
#: of it and its outcome, ``None`` when it did not decode, a batch's answers, or Unloadable), or (index, None, Died).
Event = tuple[int, int | None, Outcome | Raised | Decoded | Batched | Unloadable | Died]


class Transport(Protocol):
    """Worker processes (:class:`~prefix_exec.scoring.pool.processes.Processes`) or Ray actors
    (:class:`~prefix_exec.scoring.pool.ray.RayActors`), addressed by index; each runs the messages it is sent in
    order, from the moment it is ``launched`` (before it is ``available``: ready). ``depth``: the units a worker
    holds at least; ``queues``: whether a unit may be sent to a worker not :meth:`available` yet (a process's pipe
    keeps it until the worker is ready; an actor that never starts would keep it for good, so Ray's units go to
    started actors only)."""

    depth: int
    queues: bool

    def launched(self, worker: int) -> bool: ...
    def available(self, worker: int) -> bool: ...
    def holds(self, worker: int, token: int) -> bool: ...
    def send_env(self, worker: int, token: int, data: bytes) -> None: ...
    def send_unit(self, worker: int, seq: int, unit: Scorable | Undecoded | Batch, token: int) -> None: ...
    def collect(self, timeout: float | None = None) -> list[Event]: ...
    def restart(self, worker: int) -> None: ...
    def stop(self, worker: int) -> None: ...
    def close(self, *, settle: bool = True) -> None: ...
