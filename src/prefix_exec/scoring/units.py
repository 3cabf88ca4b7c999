"""What a scoring run takes (:data:`ScoringUnit`): a rollout with the environment it replays on (:class:`Scorable`),
an input unit a worker process may decode first (:class:`Undecoded`), a file's worth of those (:class:`Batch`), or
an input unit that could not be read (:class:`~prefix_exec.trajectory.Skipped`); and how messages name a rollout
(:func:`unit_name`).

A scoring unit is a work item of :func:`prefix_exec.scoring.run.score_to_file`; a rollout's identity (dataset, task,
model, method, trial) is :class:`prefix_exec.trajectory.Unit`'s, another thing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TextIO

from prefix_exec.envs.base import Environment
from prefix_exec.envs.recipe import Recipe
from prefix_exec.errors import InputError
from prefix_exec.scoring.numbering import Numbering, where_read
from prefix_exec.trajectory import Rollout, Skipped

#: An environment built for one rollout, from the rollout: tau's reads its transcript (the information
#: check), ToolSandbox's recorded one its recorded replies.
EnvFor = Callable[[Rollout], Environment]


@dataclass(frozen=True)
class Scorable:
    """One rollout to score and the environment it replays on.

    ``env`` is the environment, or an :data:`EnvFor` that builds the rollout's own from it. That runs only
    when the rollout is replayed (not for one kept by ``resume``), inside its budget, on the rollout as
    ``prepare`` returned it; a rollout ``prepare`` returns keeps this pair's environment, and a ``Scorable`` it
    returns names its own (BFCL's, taking over what its final-success check ran).
    ``recipe`` builds ``env`` again in a worker process (:mod:`prefix_exec.envs.recipe`); without one the environment
    itself is pickled to the workers, and one that does not pickle is replayed in the reading process.
    ``affinity`` names the work the rollout's replay shares with every other rollout of the same name, which the
    process that replays them caches (BFCL's ground truth and initial state of a task: most of a rollout's cost
    the first time, a tenth after): with ``score --workers N`` the rollouts of one name are replayed in one process
    (:mod:`prefix_exec.scoring.pool.schedule`), so that work is done once; ``None``: in any.
    """

    rollout: Rollout
    env: Environment | EnvFor
    recipe: Recipe | None = None
    affinity: str | None = None

    def environment(self, rollout: Rollout) -> Environment:
        """The environment ``rollout`` (this pair's, or ``prepare``'s copy of it) replays on."""
        return self.env if isinstance(self.env, Environment) else self.env(rollout)


@dataclass(frozen=True)
class Undecoded:
    """One input unit read but not yet made a rollout, with the environment it replays on: with ``score --workers
    N`` a worker process decodes it (for a transcript, its messages into actions: most of the reading's cost),
    and the reading process only admits it in its turn (:mod:`prefix_exec.scoring.admission`).

    ``decode`` gives the rollout (or a :class:`~prefix_exec.trajectory.Skipped` for a unit that cannot be read),
    raising :class:`InputError` as reading would; it must pickle (a module-level function or a
    ``functools.partial`` of one, with plain data) and give the same rollout every time. ``numbering`` numbers the
    rollout once decoded (:func:`numbered`); ``affinity`` is :attr:`Scorable.affinity`, known before decoding.
    """

    decode: Callable[[], Rollout | Skipped]
    env: Environment | EnvFor
    recipe: Recipe | None = None
    numbering: Numbering | None = None
    affinity: str | None = None

    def scorable(self) -> Scorable | Skipped:
        """The unit decoded in this process (numbered when it has a numbering): what one worker scores."""
        unit = self.decode()
        if isinstance(unit, Skipped):
            return unit
        return Scorable(self.numbering.number(unit) if self.numbering is not None else unit, self.env, self.recipe)


#: What a :class:`Batch` reads: its units in input order (each a decoding, as :attr:`Undecoded.decode`, or a
#: :class:`~prefix_exec.trajectory.Skipped` one that cannot be read), the :class:`InputError` that stopped the
#: reading after them (``None``: read to the end), and a note said on the log once they are written (or ``None``).
Reading = tuple[list[Callable[[], Rollout | Skipped] | Skipped], InputError | None, str | None]


@dataclass(frozen=True)
class Batch:
    """Input units read in one go (a file's conversations) and the environment they replay on: with ``score
    --workers N`` a worker process reads, decodes and replays them all, so the reading process neither parses
    them nor sends them one by one (its share of the work was the pool's ceiling); it settles each unit in its
    turn, as an :class:`Undecoded` one (:mod:`prefix_exec.scoring.pool.settlement`).

    ``read`` gives the :data:`Reading`; it must pickle (a ``functools.partial`` of a module-level function, with
    plain data) and give the same every time: the reading process reads it again itself for a unit whose answer
    it cannot take as it is, and to raise the error that stopped it. ``env``, ``recipe`` and ``numbering`` are
    every unit's, as in :class:`Undecoded`; ``name`` names the batch in a message (its file).
    """

    read: Callable[[], Reading]
    env: Environment | EnvFor
    recipe: Recipe | None = None
    numbering: Numbering | None = None
    name: str = "a batch of input units"

    def expand(self) -> tuple[list[Undecoded | Skipped], InputError | None, str | None]:
        """The :data:`Reading` read in this process, each decoding an :class:`Undecoded` unit."""
        units, error, note = self.read()
        undecoded = [
            unit if isinstance(unit, Skipped) else Undecoded(unit, self.env, self.recipe, self.numbering)
            for unit in units
        ]
        return undecoded, error, note


#: What a scoring run takes: a rollout to replay, one to decode first, a batch of those, or an input unit that
#: could not be read.
ScoringUnit = Scorable | Undecoded | Batch | Skipped


def with_environment(
    units: Iterable[Rollout | Skipped],
    env: Environment | EnvFor,
    recipe: Recipe | None = None,
    affinity: Callable[[Rollout], str] | None = None,
) -> Iterator[Scorable | Skipped]:
    """``units`` (a reader's rollouts and skipped inputs, read as they are asked for) with every rollout paired
    with ``env`` (built again in a worker process by ``recipe``, when given), and named by ``affinity`` (see
    :class:`Scorable`; ``None``: named by none)."""
    for unit in units:
        if isinstance(unit, Rollout):
            yield Scorable(unit, env, recipe, affinity(unit) if affinity is not None else None)
        else:
            yield unit


def numbered(units: Iterable[ScoringUnit], numbering: Numbering) -> Iterator[ScoringUnit]:
    """``units`` with every rollout numbered by ``numbering`` (:mod:`prefix_exec.scoring.numbering`), as they are
    asked for (an :class:`Undecoded` one once decoded, in its turn)."""
    for unit in units:
        if isinstance(unit, Scorable):
            yield replace(unit, rollout=numbering.number(unit.rollout))
        elif isinstance(unit, Undecoded | Batch):
            yield replace(unit, numbering=numbering)
        else:
            yield unit


def unbatched[T](units: Iterable[T | Batch], log: TextIO) -> Iterator[T | Undecoded | Skipped]:
    """``units`` with each :class:`Batch` read here in its turn: its units, then its error raised or its note said
    on ``log``, as a worker process's answer for it is settled (:mod:`prefix_exec.scoring.pool.settlement`); any
    other unit (or settled ticket) as it is."""
    for unit in units:
        if not isinstance(unit, Batch):
            yield unit
            continue
        expanded, error, note = unit.expand()
        yield from expanded
        if error is not None:
            raise error
        if note is not None:
            print(note, file=log)


def unit_name(unit: Rollout) -> str:
    """How messages name a rollout: its task, model, method, trial and source file."""
    return f"task {unit.task_id} (model {unit.model}, method {unit.method}, trial {unit.trial}){where_read(unit)}"
