"""Which units a scoring run replays, in input order (:func:`prefix_exec.scoring.run.score_to_file`).

A rollout whose identity (dataset, task, model, method, trial) an earlier one has is not scored (two rollouts of
one unit would count one task twice); one already in the output is kept by ``--resume``; an unreadable unit is
reported. An :class:`~prefix_exec.scoring.units.Undecoded` unit is decoded where it is replayed: in this process
with one worker; with ``--workers N`` in a worker process, which sends back the rollout's identity, digest and name
as read with its outcome, and this process admits it in its turn (:meth:`Admission.takes`, from
:mod:`prefix_exec.scoring.pool.settlement`). Whatever the worker's answer cannot settle exactly as one worker would
(a rollout numbering gives another trial, a repeated identity, a unit that does not decode, a worker that died) is
decoded again here and scored as one worker scores it: the records are byte for byte the same at every worker
count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prefix_exec.scoring.numbering import Numbering, rollout_digest
from prefix_exec.scoring.replayer import Outcome
from prefix_exec.scoring.units import Batch, Scorable, ScoringUnit, Undecoded, unit_name
from prefix_exec.trajectory import Rollout, Skipped, UnitKey


class Admission:
    """One run's identities met so far and those ``done`` (in the output, kept by ``--resume``)."""

    def __init__(self, done: set[UnitKey]) -> None:
        self.done = frozenset(done)
        self.seen: dict[UnitKey, tuple[str, str]] = {}  # key -> (digest, name) of the first rollout with it

    def tickets(self, units: Iterable[Scorable | Undecoded | Skipped]) -> Iterator[Scorable | Outcome]:
        """``units`` in input order, each a rollout to replay or already settled (:meth:`admit`); an
        :class:`Undecoded` one is decoded here first (a :class:`Batch` is read first:
        :func:`~prefix_exec.scoring.units.unbatched`)."""
        for unit in units:
            yield self.admit(unit.scorable() if isinstance(unit, Undecoded) else unit)

    def deferring(self, units: Iterable[ScoringUnit]) -> Iterator[Scorable | Undecoded | Batch | Outcome]:
        """As :meth:`tickets`, but an :class:`Undecoded` unit or a :class:`Batch` is passed on as it is, for a
        worker to decode; each of its units must be settled (:mod:`prefix_exec.scoring.pool.settlement`) in its
        turn, before any later ticket is read. A stream holds either kind of rollout, not both: an undecoded one
        is admitted when settled, later than a :class:`Scorable` read after it would be."""
        kinds: set[bool] = set()
        for unit in units:
            if not isinstance(unit, Skipped):
                kinds.add(isinstance(unit, Scorable))
                if len(kinds) > 1:
                    raise ValueError("a scoring stream mixes undecoded units (Undecoded, Batch) and Scorable ones")
            yield self.admit(unit) if isinstance(unit, Scorable | Skipped) else unit

    def admit(self, unit: Scorable | Skipped) -> Scorable | Outcome:
        """``unit`` as a rollout to replay, or settled: not readable, a repeated identity (:func:`repeated`), or in
        ``done`` (kept by resume: ``None``)."""
        if isinstance(unit, Skipped):
            return unit
        key = unit.rollout.key
        digest = rollout_digest(unit.rollout)
        if key in self.seen:
            return repeated(unit.rollout, digest, *self.seen[key])
        self.seen[key] = (digest, unit_name(unit.rollout))
        return None if key in self.done else unit

    def takes(self, key: UnitKey, digest: str, name: str, numbering: Numbering | None) -> bool:
        """Whether a rollout decoded elsewhere (a worker process), of identity ``key``, digest ``digest`` and name
        ``name`` as read, is admitted as it was read: the first of its identity, and kept as read by ``numbering``
        (:meth:`~prefix_exec.scoring.numbering.Numbering.keeps`). If so it is counted as met, as :meth:`admit`
        counts it; if not, nothing is counted, and the rollout must be decoded here and admitted."""
        if key in self.seen or (numbering is not None and not numbering.keeps(key, digest)):
            return False
        self.seen[key] = (digest, name)
        return True


def repeated(rollout: Rollout, digest: str, first_digest: str, first: str) -> Skipped:
    """Why a rollout whose identity an earlier one has is not scored: the same rollout read twice, or (numbering
    left them so: ``--unique-task``, or a caller that does not number) a different rollout of that identity."""
    if digest == first_digest:
        return Skipped(unit_name(rollout), "duplicate: the input holds this rollout twice")
    return Skipped(
        unit_name(rollout),
        f"a different rollout has this dataset, task, model, method and trial: {first}. Give them distinct trial "
        "numbers (--trial-field PATH, --trial N), or leave out --unique-task to number them as trials in input order",
    )
