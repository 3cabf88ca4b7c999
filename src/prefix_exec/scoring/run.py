"""Score a stream of rollouts into a records file: resumable, with progress, and nothing silently dropped.

Every benchmark's ``score`` command funnels through :func:`score_to_file`. It takes :class:`Scorable` pairs,
each rollout with the environment it replays on (so one run may mix environments: two tau domains, BFCL and
tau samples of inspect logs), or :class:`~prefix_exec.trajectory.Skipped` for an input unit that could not be
read; replay errors become ``Skipped`` too when the user asked to keep going. Records are appended and flushed
one by one, so a kill loses at most the rollouts in flight, and fsynced in groups (:data:`SYNC_SECONDS`), so a
crash of the machine loses at most the last group; ``resume`` skips units already in the file.
With ``workers`` > 1 the replays run in worker processes (:mod:`prefix_exec.scoring.pool.dispatch`) and the records
are written in input order all the same: the file is byte for byte the one a single worker writes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import sys
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, TextIO, runtime_checkable

from prefix_exec import budget
from prefix_exec.envs.base import Environment
from prefix_exec.envs.recipe import Recipe
from prefix_exec.errors import InputError, ReplayError
from prefix_exec.importers.trials import Numbering, source_of
from prefix_exec.json_types import dumps
from prefix_exec.records import outputs
from prefix_exec.records.codec import RECORD_KIND, record_to_json
from prefix_exec.records.jsonl import JsonlWriter, completed_keys
from prefix_exec.records.redaction import redact_json
from prefix_exec.replay import replay
from prefix_exec.trajectory import PrefixRecord, Rollout, Skipped, UnitKey

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
    """

    rollout: Rollout
    env: Environment | EnvFor
    recipe: Recipe | None = None

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
    rollout once decoded (:func:`numbered`).
    """

    decode: Callable[[], Rollout | Skipped]
    env: Environment | EnvFor
    recipe: Recipe | None = None
    numbering: Numbering | None = None

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
    turn, as an :class:`Undecoded` one (:mod:`prefix_exec.scoring.admission`).

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
Unit = Scorable | Undecoded | Batch | Skipped


def paired(
    units: Iterable[Rollout | Skipped], env: Environment | EnvFor, recipe: Recipe | None = None
) -> Iterator[Scorable | Skipped]:
    """``units`` (a reader's rollouts and skipped inputs, read as they are asked for) with every rollout paired
    with ``env`` (built again in a worker process by ``recipe``, when given)."""
    for unit in units:
        yield Scorable(unit, env, recipe) if isinstance(unit, Rollout) else unit


def numbered(units: Iterable[Unit], numbering: Numbering) -> Iterator[Unit]:
    """``units`` with every rollout numbered by ``numbering`` (:mod:`importers.trials`), as they are asked for
    (an :class:`Undecoded` one once decoded, in its turn)."""
    for unit in units:
        if isinstance(unit, Scorable):
            yield replace(unit, rollout=numbering.number(unit.rollout))
        elif isinstance(unit, Undecoded | Batch):
            yield replace(unit, numbering=numbering)
        else:
            yield unit


@dataclass
class ScoreReport:
    """What a scoring run did. ``skipped`` lists every unit not scored, with the reason."""

    written: int = 0
    resumed: int = 0
    executable: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def describe(self) -> str:
        """What the scoring did, in one line (the CLI prints it last)."""
        text = f"scored {self.written} rollouts ({self.executable} fully executable)"
        if self.resumed:
            text += f"; {self.resumed} already in the output were kept (--resume)"
        if self.skipped:
            text += f"; {len(self.skipped)} could not be scored (listed above)"
        return text


def score_to_file(
    units: Iterable[Unit],
    out: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    keep_going: bool = False,
    total: int | None = None,
    desc: str = "scoring",
    log: TextIO | None = None,
    on_record: OnRecord | None = None,
    prepare: Callable[[Rollout], Rollout | Scorable] | None = None,
    rollout_seconds: float | None = budget.DEFAULT_ROLLOUT_SECONDS,
    call_memory_mb: int = budget.DEFAULT_CALL_MEMORY_MB,
    inputs: Iterable[str | Path] = (),
    workers: int = 1,
    launcher: str = "local",
) -> ScoreReport:
    """Replay every rollout in ``units`` on its environment and append its record to ``out``.

    Without ``keep_going`` the first unit that cannot be scored raises :class:`InputError` (records written
    before it stay on disk). With it, each such unit is reported on ``log`` and in the returned report.
    A rollout whose key (dataset, task, model, method, trial) already came earlier in the input is such a
    unit: two rollouts of one unit would count one task twice. It is called a duplicate when it is the same
    rollout (:func:`~prefix_exec.importers.trials.rollout_digest`); different rollouts of one task get distinct trials
    from :class:`importers.trials.Numbering` before they come here (:func:`numbered`). An existing non-empty
    ``out`` is continued with ``resume``, replaced with ``overwrite``, and otherwise refused, so a forgotten flag
    never erases finished work.

    ``prepare`` (say, computing a benchmark's final success) and the replay of each rollout run inside
    its budget (:func:`prefix_exec.budget.rollout_budget`: ``rollout_seconds`` of wall clock, ``None`` for
    none, and ``call_memory_mb`` per call); a rollout past it is unscorable, reported with the reason.
    ``prepare`` may raise :class:`ReplayError` or :class:`InputError` for a unit it cannot handle, and may return
    a :class:`Scorable` to replay the rollout on an environment of its own (see there).
    ``inputs`` are the files read: an ``out`` that is one of them is refused before anything is touched.

    ``workers`` > 1 (or ``launcher`` ``"ray"``) replays on that many worker processes or Ray actors
    (:mod:`prefix_exec.scoring.pool.dispatch`; ``prepare`` must then pickle); reading, checks of identity, ``on_record``
    and writing stay in this process, in input order, so the records and the report are those of one worker.
    A worker sends each record back as its line, made there, unless ``on_record`` is a plain function, which
    needs the record itself; an :class:`Observer` has its ``look`` run in the worker too.
    """
    path = Path(out)
    target = _check_output(path, inputs, resume=resume, overwrite=overwrite)
    # Only a file this run made is removed when the run fails: not an empty file (or a link) the user made.
    fresh = not target.exists()
    report = ScoreReport()
    scorer = _Scorer(
        report,
        keep_going=keep_going,
        log=log if log is not None else sys.stderr,
        on_record=on_record,
        replayer=Replayer(
            prepare,
            rollout_seconds,
            call_memory_mb,
            lines=on_record is None or isinstance(on_record, Observer),  # a plain on_record needs the record
            look=on_record.look if isinstance(on_record, Observer) else None,
        ),
    )
    with hold_lock(path), contextlib.ExitStack() as replaced:
        if overwrite and not resume and not fresh:
            # Replaced, never written into: another name of the old file (a hard link) keeps its records.
            outputs.write_new(target, b"")
            replaced.enter_context(hold_lock(target))  # the new file is locked too, as the old one is
            fresh = True
        try:
            scorer.score(units, path, resume=resume, total=total, desc=desc, workers=workers, launcher=launcher)
        except BaseException:
            # A failed run leaves no empty output behind (a non-empty one keeps its records for --resume).
            _drop_if_empty(target, fresh)
            raise
        if report.skipped:  # exit 2: nothing scored leaves nothing behind
            _drop_if_empty(target, fresh)
    return report


def _check_output(path: Path, inputs: Iterable[str | Path], *, resume: bool, overwrite: bool) -> Path:
    """The file to write, ``path`` with its symlinks resolved; an :class:`InputError` unless ``path`` may be
    written (:func:`prefix_exec.records.outputs.check_file`: not one of ``inputs``, not a folder, FIFO or device) and,
    when it already holds records, continued (``resume``) or replaced (``overwrite``) on purpose."""
    target = outputs.check_file(path, inputs)
    if not resume and not overwrite and path.is_file() and path.stat().st_size > 0:
        raise InputError(
            "the output file already holds records",
            path=path,
            hint="pass --resume to continue it, --overwrite to replace it, or choose another --out",
        )
    return target


def _drop_if_empty(path: Path, fresh: bool) -> None:
    if fresh and path.is_file() and path.stat().st_size == 0:
        path.unlink()


@runtime_checkable
class Observer(Protocol):
    """An ``on_record`` of :func:`score_to_file` in two halves, so that worker processes take the costly one:
    :attr:`look`, a function of a record that pickles (a module-level function, or a ``functools.partial`` of one
    with plain data), runs where the record is made; :meth:`take` runs in the reading process, in input order,
    with the record's key and what ``look`` gave (say, a consistency check's disagreements and count).
    ``look`` must have no effect but its result: it runs in whichever process replayed the record, out of the
    reading process's sight and not in input order. It sees the record before redaction (secrets in metadata
    included): what it gives goes to ``take``, which must redact what it writes."""

    @property
    def look(self) -> Callable[[PrefixRecord], object]: ...

    def take(self, key: UnitKey, seen: object) -> None: ...


#: A function given every record written (:func:`score_to_file`'s ``on_record``), or an :class:`Observer`.
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
    made there), its key, whether it is executable, and what the run's :class:`Observer` looked at in it
    (``None`` without one)."""

    line: str
    key: UnitKey
    executable: bool
    seen: object


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


@dataclass(frozen=True)
class Replayer:
    """Replays one rollout inside its budget (see :func:`score_to_file`); pickled to worker processes."""

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
        return Written(record_line(record), record.key, record.executable, seen)


@dataclass(frozen=True)
class _Scorer:
    """One scoring run's settings (see :func:`score_to_file`) and the report it fills."""

    report: ScoreReport
    keep_going: bool
    log: TextIO
    on_record: OnRecord | None
    replayer: Replayer

    def score(
        self,
        units: Iterable[Unit],
        path: Path,
        *,
        resume: bool,
        total: int | None,
        desc: str,
        workers: int = 1,
        launcher: str = "local",
    ) -> None:
        """Score ``units`` into ``path`` (held locked by the caller), appending when ``resume``."""
        from tqdm import tqdm  # here: a worker process imports this module, and never shows progress

        from prefix_exec.scoring.admission import Admission

        admission = Admission(completed_keys(path, kind=RECORD_KIND) if resume else set())
        outcomes: Generator[Outcome | Sync]
        if workers > 1 or launcher != "local":
            from prefix_exec.scoring.pool.dispatch import ordered

            tickets = admission.deferring(units)
            outcomes = ordered(tickets, self.replayer, admission, workers=workers, launcher=launcher, log=self.log)
        else:
            settled = admission.tickets(unbatched(units, self.log))
            outcomes = add_syncs(self.replayer(t.rollout, t.env) if isinstance(t, Scorable) else t for t in settled)
        with (
            JsonlWriter(path, append=resume) as writer,
            tqdm(total=total, desc=desc, unit="rollout", disable=None, file=sys.stderr) as bar,
            contextlib.closing(outcomes),
        ):
            for outcome in outcomes:
                if isinstance(outcome, Sync):
                    writer.sync()
                    continue
                bar.update(1)
                if isinstance(outcome, Skipped):
                    self.skip(outcome)
                elif outcome is None:
                    self.report.resumed += 1
                else:
                    self.write(writer, outcome)

    def write(self, writer: JsonlWriter, record: PrefixRecord | Written) -> None:
        if isinstance(record, PrefixRecord) and not self.replayer.lines:  # a plain on_record takes the record
            writer.write_line(record_line(record), sync=False)  # fsynced in groups (SYNC)
            self.count(record.executable)
            if self.on_record is not None and not isinstance(self.on_record, Observer):
                self.on_record(record)
            return
        written = self.replayer.written(record) if isinstance(record, PrefixRecord) else record
        writer.write_line(written.line, sync=False)
        self.count(written.executable)
        if isinstance(self.on_record, Observer):
            self.on_record.take(written.key, written.seen)

    def count(self, executable: bool) -> None:
        self.report.written += 1
        self.report.executable += int(executable)

    def skip(self, unit: Skipped) -> None:
        if not self.keep_going:
            raise InputError(
                f"{unit.where}: {unit.error}",
                hint="fix the input, or pass --keep-going to score the rest and list the failures",
            )
        self.report.skipped.append(unit)
        print(f"prefix-exec: skipped {unit.where}: {unit.error}", file=self.log)


def unbatched[T](units: Iterable[T | Batch], log: TextIO) -> Iterator[T | Undecoded | Skipped]:
    """``units`` with each :class:`Batch` read here in its turn: its units, then its error raised or its note said
    on ``log``, as a worker process's answer for it is settled (:mod:`prefix_exec.scoring.pool.schedule`); any other
    unit (or settled ticket) as it is."""
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


def add_syncs(outcomes: Iterator[Outcome]) -> Generator[Outcome | Sync]:
    """``outcomes`` with :data:`SYNC` after any of them that comes :data:`SYNC_SECONDS` or more after the last."""
    synced = time.monotonic()
    for outcome in outcomes:
        yield outcome
        if time.monotonic() - synced >= SYNC_SECONDS:
            yield SYNC
            synced = time.monotonic()


@contextmanager
def hold_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created when absent, never truncated here) for the block.

    A second ``score`` onto the same ``--out`` is refused at once instead of interleaving its lines with
    the first one's. Advisory (``flock``): it binds prefix-exec processes, not other programs.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                "another prefix-exec process is writing this output file",
                path=path,
                hint="wait for it to finish, or choose another --out",
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def unit_name(unit: Rollout) -> str:
    """How messages name a rollout: its task, model, method, trial and source file."""
    return f"task {unit.task_id} (model {unit.model}, method {unit.method}, trial {unit.trial}){source_of(unit)}"
