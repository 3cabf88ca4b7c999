"""Settling a worker's answers in input order, as one worker would have scored the units
(:mod:`prefix_exec.scoring.admission` admits them): a :class:`~prefix_exec.scoring.pool.messages.Decoded` unit is
taken as the worker read it when it is the first of its identity and numbering keeps it as read; otherwise (a
rollout numbering gives another trial, a repeated identity, a unit that does not decode, a worker that died) it is
decoded again in this process and scored here. A :class:`~prefix_exec.scoring.units.Batch` a worker answered is
read again here only for such a unit, and to raise the error its reading stopped on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TextIO

from prefix_exec.envs.base import Environment
from prefix_exec.errors import InputError
from prefix_exec.scoring.admission import Admission
from prefix_exec.scoring.numbering import Numbering
from prefix_exec.scoring.pool.messages import Batched, Decoded, Died, Raised
from prefix_exec.scoring.pool.window import Entry, Note
from prefix_exec.scoring.replayer import Outcome, Replayer
from prefix_exec.scoring.units import Batch, EnvFor, Scorable, Undecoded, unit_name
from prefix_exec.trajectory import Rollout, Skipped

#: A batch's reading: its units, the error that stopped it, its note (:meth:`~prefix_exec.scoring.units.Batch.expand`).
Expanded = tuple[list[Undecoded | Skipped], InputError | None, str | None]


def caught(replayer: Replayer, rollout: Rollout, env: Environment | EnvFor) -> Outcome | Raised:
    """``rollout`` replayed here as a worker replays it: an exception the replay lets through is raised in its
    turn (:func:`raised`), after the units before it are written."""
    try:
        return replayer(rollout, env)
    except Exception as exc:
        return Raised(exc)


def lost(name: str, died: Died) -> Skipped:
    """What becomes of the unit ``name`` whose worker ``died`` on it as many times as it is sent
    (:attr:`Died.attempts`): a local process's culprit is unscorable (it killed its worker); a Ray actor's, the
    system's failure (:attr:`~prefix_exec.trajectory.Skipped.infrastructure`: listed apart, ``--resume`` scores it)."""
    if not died.infrastructure:
        return Skipped(name, f"the worker process died replaying it ({died.why})")
    times = "once" if died.attempts == 1 else f"{died.attempts} times"
    return Skipped(
        name,
        f"the Ray actor replaying it was lost {times} (the last: {died.why}): an infrastructure failure (the "
        "system's, not the input's nor the agent's); --resume scores it",
        infrastructure=True,
    )


def raised(outcome: Outcome | Raised) -> Outcome:
    """``outcome``, or its error raised (a reading error, or one the replay let through: one worker raises it)."""
    if isinstance(outcome, Raised):
        raise outcome.error
    return outcome


@dataclass(frozen=True)
class Settlement:
    """One run's settling of answers: its ``admission``, the ``replayer`` that scores here what an answer cannot
    settle, and the ``log`` a note goes to."""

    admission: Admission
    replayer: Replayer
    log: TextIO

    def settle(self, unit: Undecoded, answer: Decoded | Died | None) -> Outcome | Raised:
        """The outcome of ``unit`` in its turn, from a worker's ``answer`` when that is the one a single worker
        has (the rollout the first of its identity and kept as read by numbering); otherwise decoded, admitted
        and replayed here (``answer`` ``None``: no worker had it), or, when the worker died on it, reported."""
        return self.settle_lazily(lambda: unit, unit.numbering, answer)

    def settle_entry(self, entry: Entry) -> Iterator[Outcome]:
        """The outcomes of the window's oldest ``entry``, in its turn: a unit's admitted (:class:`Admission`), or
        each of a batch's; a note is said on the log."""
        _, outcome, unit, _ = entry
        if isinstance(outcome, Note):
            print(outcome.text, file=self.log)
        elif isinstance(unit, Batch):
            yield from self.settle_batch(unit, outcome)
        elif unit is not None:  # admitted now, in its turn (and decoded here if need be)
            yield raised(self.settle(unit, outcome))
        else:
            yield raised(outcome)

    def settle_lazily(
        self, unit: Callable[[], Undecoded], numbering: Numbering | None, answer: Decoded | Died | None
    ) -> Outcome | Raised:
        """As :meth:`settle`, for a unit asked of ``unit`` only when the answer cannot settle it (a unit of a
        :class:`Batch` a worker read: this process then reads the batch again); ``numbering``: the unit's."""
        if isinstance(answer, Decoded) and self.admission.takes(answer.key, answer.digest, answer.name, numbering):
            return None if answer.key in self.admission.done else answer.outcome
        ticket = self.admission.admit(unit().scorable())
        if not isinstance(ticket, Scorable):
            return ticket
        if isinstance(answer, Died):
            return lost(unit_name(ticket.rollout), answer)
        return self.replayer(ticket.rollout, ticket.env)

    def settle_batch(self, batch: Batch, answer: Batched) -> Iterator[Outcome]:
        """The outcomes of ``batch``'s units from a worker's ``answer``; the batch is read again here only for a
        unit the answer cannot settle as one worker would, and to raise the error its reading stopped on."""
        again: list[Expanded] = []

        def read_again() -> Expanded:
            if not again:
                again.append(batch.expand())
                if len(again[0][0]) < len(answer.answers):
                    raise InputError(
                        f"{batch.name} read differently the second time: changed while it was scored?",
                        hint="score files that do not change during the run",
                    )
            return again[0]

        def unit(index: int) -> Undecoded:
            found = read_again()[0][index]
            assert isinstance(found, Undecoded), "a unit read twice is the same unit"
            return found

        for index, each in enumerate(answer.answers):
            if isinstance(each, Skipped):
                yield each
            else:
                yield raised(self.settle_lazily(partial(unit, index), batch.numbering, each))
        note = answer.note
        if answer.stopped:  # read here what follows what the worker answered: the error it stopped on is raised
            units, error, note = read_again()
            for rest in units[len(answer.answers) :]:
                yield rest if isinstance(rest, Skipped) else raised(self.settle(rest, None))
            if error is not None:
                raise error
        if note is not None:
            print(note, file=self.log)
