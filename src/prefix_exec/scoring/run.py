"""Score a stream of rollouts into a records file: resumable, with progress, and nothing silently dropped.

Every benchmark's ``score`` command funnels through :func:`score_to_file`. It takes scoring units
(:data:`~prefix_exec.scoring.units.ScoringUnit`): :class:`~prefix_exec.scoring.units.Scorable` pairs, each rollout
with the environment it replays on (so one run may mix environments: two tau domains, BFCL and tau samples of
inspect logs), or :class:`~prefix_exec.trajectory.Skipped` for an input unit that could not be read; replay errors
become ``Skipped`` too when the user asked to keep going. Records are appended and flushed one by one, so a kill
loses at most the rollouts in flight, and fsynced in groups (:data:`~prefix_exec.scoring.replayer.SYNC_SECONDS`), so
a crash of the machine loses at most the last group; ``resume`` skips units already in the file.

This module replays in this process. A :class:`Dispatch` handed in with the options (the pool of ``--workers N``,
:class:`prefix_exec.scoring.pool.dispatch.Pool`) replays elsewhere instead, and the records are written in input
order all the same: the file is byte for byte the one a single worker writes. This module never imports the pool.
"""

from __future__ import annotations

import contextlib
import fcntl
import sys
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from prefix_exec import budget
from prefix_exec.errors import InputError
from prefix_exec.records import outputs
from prefix_exec.records.codec import RECORD_KIND
from prefix_exec.records.infrastructure import Exclusion, failure_of
from prefix_exec.records.jsonl import JsonlWriter, completed_keys
from prefix_exec.scoring.admission import Admission
from prefix_exec.scoring.replayer import Observer, OnRecord, Outcome, Replayer, Sync, Written, add_syncs, record_line
from prefix_exec.scoring.units import Scorable, ScoringUnit, unbatched
from prefix_exec.terminal import draws_bars, unescaped
from prefix_exec.trajectory import PrefixRecord, Rollout, Skipped


class Dispatch(Protocol):
    """Replays a run's units somewhere other than this process (worker processes, Ray actors:
    :class:`prefix_exec.scoring.pool.dispatch.Pool`) and gives back every outcome in input order, with
    :data:`~prefix_exec.scoring.replayer.SYNC` between two of them at most every
    :data:`~prefix_exec.scoring.replayer.SYNC_SECONDS`. ``replayer`` replays each rollout; ``admission`` admits
    each unit in its turn, as this process would (identities, ``--resume``); ``log`` takes its notes."""

    def __call__(
        self, units: Iterable[ScoringUnit], replayer: Replayer, admission: Admission, log: TextIO
    ) -> Generator[Outcome | Sync]: ...


@dataclass(frozen=True)
class ScoreOptions:
    """How :func:`score_to_file` writes its output and replays (the ``score`` commands' options, all but
    ``--out``: :func:`prefix_exec.cli.common.output_options`).

    Without ``keep_going`` the first unit that cannot be scored raises :class:`InputError` (records written before it
    stay on disk); with it, each such unit is reported on the log and in the returned report. An existing non-empty
    output is continued with ``resume``, replaced with ``overwrite``, and otherwise refused, so a forgotten flag
    never erases finished work. Each rollout (and its ``prepare``) runs inside its budget
    (:func:`prefix_exec.budget.rollout_budget`: ``rollout_seconds`` of wall clock, ``None`` for none, and
    ``call_memory_mb`` per call); a rollout past it is unscorable, reported with the reason. ``dispatch``, when
    given, replays elsewhere (:class:`Dispatch`); ``None``: every rollout is replayed in this process. A rollout an
    infrastructure failure ended (:mod:`prefix_exec.records.infrastructure`) is replayed but its record left out
    of the output, and listed in the report; with ``keep_infrastructure`` it is written, under its own label.
    """

    resume: bool = False
    overwrite: bool = False
    keep_going: bool = False
    rollout_seconds: float | None = budget.DEFAULT_ROLLOUT_SECONDS
    call_memory_mb: int = budget.DEFAULT_CALL_MEMORY_MB
    dispatch: Dispatch | None = None
    keep_infrastructure: bool = False


@dataclass
class ScoreReport:
    """What a scoring run did. ``skipped`` lists every unit not scored, with the reason; ``lost`` those the system
    lost (:attr:`~prefix_exec.trajectory.Skipped.infrastructure`: the Ray actors replaying one died or never
    answered); ``infrastructure`` the rollouts an infrastructure failure ended, left out of the output or kept."""

    written: int = 0
    resumed: int = 0
    executable: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    lost: list[Skipped] = field(default_factory=list)
    infrastructure: Exclusion = field(default_factory=Exclusion)

    def describe(self) -> str:
        """What the scoring did, in one line (the CLI prints it last)."""
        text = f"scored {self.written} rollouts ({self.executable} fully executable)"
        if self.resumed:
            text += f"; {self.resumed} already in the output were kept (--resume)"
        if self.skipped:
            text += f"; {len(self.skipped)} could not be scored (listed above)"
        if self.lost:
            text += f"; {len(self.lost)} not scored for an infrastructure failure (listed above; --resume scores them)"
        if left := len(self.infrastructure.excluded):
            text += f"; {left} ended by an infrastructure failure left out (listed above)"
        return text


def score_to_file(
    units: Iterable[ScoringUnit],
    out: str | Path,
    options: ScoreOptions | None = None,
    *,
    prepare: Callable[[Rollout], Rollout | Scorable] | None = None,
    on_record: OnRecord | None = None,
    inputs: Iterable[str | Path] = (),
    total: int | None = None,
    desc: str = "scoring",
    log: TextIO | None = None,
) -> ScoreReport:
    """Replay every rollout in ``units`` on its environment and append its record to ``out``, as ``options`` say
    (:class:`ScoreOptions`; ``None``: the defaults).

    A rollout whose key (dataset, task, model, method, trial) already came earlier in the input cannot be scored:
    two rollouts of one unit would count one task twice. It is called a duplicate when it is the same rollout
    (:func:`~prefix_exec.scoring.numbering.rollout_digest`); different rollouts of one task get distinct trials
    from :class:`~prefix_exec.scoring.numbering.Numbering` before they come here
    (:func:`~prefix_exec.scoring.units.numbered`).
    ``prepare`` (say, computing a benchmark's final success) runs inside the rollout's budget; it may raise
    :class:`~prefix_exec.errors.ReplayError` or :class:`InputError` for a unit it cannot handle, and may return a
    :class:`Scorable` to replay the rollout on an environment of its own (see there); with a dispatch it must pickle.
    ``on_record`` is given every record written, in input order (an :class:`Observer` has its ``look`` run where the
    record is made; a worker then sends each record back as its line, made there, unless ``on_record`` is a plain
    function, which needs the record itself). ``inputs`` are the files read: an ``out`` that is one of them is
    refused before anything is touched. ``total`` and ``desc`` label the progress bar; skipped units go to ``log``
    (stderr when ``None``).
    """
    options = options if options is not None else ScoreOptions()
    path = Path(out)
    target = _check_output(path, inputs, resume=options.resume, overwrite=options.overwrite)
    # Only a file this run made is removed when the run fails: not an empty file (or a link) the user made.
    fresh = not target.exists()
    scorer = _Scorer(
        ScoreReport(infrastructure=Exclusion(keep=options.keep_infrastructure)),
        keep_going=options.keep_going,
        log=log if log is not None else sys.stderr,
        on_record=on_record,
        replayer=_replayer(options, prepare, on_record),
        dispatch=options.dispatch,
    )
    with hold_lock(path), contextlib.ExitStack() as replaced:
        if options.overwrite and not options.resume and not fresh:
            # Replaced, never written into: another name of the old file (a hard link) keeps its records.
            outputs.write_new(target, b"")
            replaced.enter_context(hold_lock(target))  # the new file is locked too, as the old one is
            fresh = True
        try:
            scorer.score(units, path, resume=options.resume, total=total, desc=desc)
        except BaseException:
            # A failed run leaves no empty output behind (a non-empty one keeps its records for --resume).
            _drop_if_empty(target, fresh)
            raise
        if scorer.report.skipped or scorer.report.lost:  # exit 2 or 1: nothing scored leaves nothing behind
            _drop_if_empty(target, fresh)
    return scorer.report


def _replayer(
    options: ScoreOptions, prepare: Callable[[Rollout], Rollout | Scorable] | None, on_record: OnRecord | None
) -> Replayer:
    """The run's replayer: ``prepare`` and the budgets of ``options``; records sent back from workers as lines
    unless ``on_record`` is a plain function (it needs the record itself), with an :class:`Observer`'s look."""
    return Replayer(
        prepare,
        options.rollout_seconds,
        options.call_memory_mb,
        lines=on_record is None or isinstance(on_record, Observer),
        look=on_record.look if isinstance(on_record, Observer) else None,
    )


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


class _NoBar:
    """What :func:`progress_bar` gives off a terminal: updates that draw nothing."""

    def update(self, n: int = 1) -> None:
        """Nothing to draw."""


def progress_bar(total: int | None, desc: str) -> contextlib.AbstractContextManager[Any]:
    """A tqdm bar of ``total`` rollouts on stderr when a bar can be drawn there (:func:`~prefix_exec.terminal.
    draws_bars`, as the runner's progress); elsewhere (a file, a pipe, CI) one that draws nothing, and tqdm is not
    imported: its import is about 20 ms
    of every command's start, paid by each of the many short commands a script runs. The bar draws on the
    stream under the CLI's :class:`~prefix_exec.terminal.Escaping` one: its carriage returns are its own, and
    escaped they would print as ``\\r`` text, every redraw on one ever longer line."""
    if not draws_bars(sys.stderr):
        return contextlib.nullcontext(_NoBar())
    from tqdm import tqdm

    stream = unescaped(sys.stderr)
    bar: contextlib.AbstractContextManager[Any] = tqdm(total=total, desc=desc, unit="rollout", file=stream)
    return bar


@dataclass(frozen=True)
class _Scorer:
    """One scoring run's settings (see :func:`score_to_file`) and the report it fills."""

    report: ScoreReport
    keep_going: bool
    log: TextIO
    on_record: OnRecord | None
    replayer: Replayer
    dispatch: Dispatch | None = None

    def score(self, units: Iterable[ScoringUnit], path: Path, *, resume: bool, total: int | None, desc: str) -> None:
        """Score ``units`` into ``path`` (held locked by the caller), appending when ``resume``."""
        admission = Admission(completed_keys(path, kind=RECORD_KIND) if resume else set())
        outcomes: Generator[Outcome | Sync]
        if self.dispatch is not None:
            outcomes = self.dispatch(units, self.replayer, admission, self.log)
        else:
            settled = admission.tickets(unbatched(units, self.log))
            outcomes = add_syncs(self.replayer(t.rollout, t.env) if isinstance(t, Scorable) else t for t in settled)
        with (
            JsonlWriter(path, append=resume) as writer,
            progress_bar(total, desc) as bar,
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
        failure = failure_of(record.metadata) if isinstance(record, PrefixRecord) else record.infrastructure
        if not self.report.infrastructure.admit(record.key, failure):  # the system's failure: left out, listed
            return
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
        if unit.infrastructure:  # the system's failure, not the input's: the run goes on, --resume scores it
            self.report.lost.append(unit)
            print(f"prefix-exec: not scored {unit.where}: {unit.error}", file=self.log)
            return
        if not self.keep_going:
            raise InputError(
                f"{unit.where}: {unit.error}",
                hint="fix the input, or pass --keep-going to score the rest and list the failures",
            )
        self.report.skipped.append(unit)
        print(f"prefix-exec: skipped {unit.where}: {unit.error}", file=self.log)


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
