"""Score a stream of rollouts into a records file: resumable, with progress, and nothing silently dropped.

Every benchmark's ``score`` command funnels through :func:`score_to_file`. Importers yield rollouts, or
:class:`~prefix_exec.trajectory.Skipped` for an input unit they could not read; replay errors become ``Skipped``
too when the user asked to keep going. Records are appended and fsynced one by one, so a kill loses at most
the rollout in flight, and ``resume`` skips units already in the file.
"""

from __future__ import annotations

import fcntl
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from prefix_exec import budget
from prefix_exec.envs.base import Environment
from prefix_exec.errors import InputError
from prefix_exec.io import RECORD_KIND, JsonlWriter, completed_keys, record_to_json
from prefix_exec.jsonl import UnitKey
from prefix_exec.redaction import redact_json
from prefix_exec.replay import ReplayError, replay
from prefix_exec.trajectory import PrefixRecord, Rollout, Skipped


@dataclass
class ScoreReport:
    """What a scoring run did. ``skipped`` lists every unit not scored, with the reason."""

    written: int = 0
    resumed: int = 0
    executable: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def summary(self) -> str:
        text = f"scored {self.written} rollouts ({self.executable} fully executable)"
        if self.resumed:
            text += f"; {self.resumed} already in the output were kept (--resume)"
        if self.skipped:
            text += f"; {len(self.skipped)} could not be scored (listed above)"
        return text


def score_to_file(
    units: Iterable[Rollout | Skipped],
    env_for: Callable[[Rollout], Environment],
    out: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    keep_going: bool = False,
    total: int | None = None,
    desc: str = "scoring",
    log: TextIO | None = None,
    on_record: Callable[[PrefixRecord], None] | None = None,
    prepare: Callable[[Rollout], Rollout] | None = None,
    rollout_seconds: float | None = budget.DEFAULT_ROLLOUT_SECONDS,
    call_memory_mb: int = budget.DEFAULT_CALL_MEMORY_MB,
    inputs: Iterable[str | Path] = (),
) -> ScoreReport:
    """Replay every rollout in ``units`` and append its record to ``out``.

    Without ``keep_going`` the first unit that cannot be scored raises :class:`InputError` (records written
    before it stay on disk). With it, each such unit is reported on ``log`` and in the returned report.
    A rollout whose key (dataset, task, model, method, trial) already came earlier in the input is such a
    unit: two rollouts of one unit would count one task twice. An existing non-empty ``out`` is continued
    with ``resume``, replaced with ``overwrite``, and otherwise refused, so a forgotten flag never erases
    finished work.

    ``prepare`` (say, computing a benchmark's final success) and the replay of each rollout run inside
    its budget (:func:`prefix_exec.budget.rollout_budget`: ``rollout_seconds`` of wall clock, ``None`` for
    none, and ``call_memory_mb`` per call); a rollout past it is unscorable, reported with the reason.
    ``prepare`` may raise :class:`ReplayError` or :class:`InputError` for a unit it cannot handle.
    ``inputs`` are the files read: an ``out`` that is one of them is refused before anything is touched.
    """
    log = log if log is not None else sys.stderr
    path = Path(out)
    refuse_input_as_output(path, inputs)
    if path.exists() and not path.is_file():
        raise InputError(
            "the output is not a regular file (a folder or a device)", path=path, hint="pass a file path as --out"
        )
    if not resume and not overwrite and path.is_file() and path.stat().st_size > 0:
        raise InputError(
            "the output file already holds records",
            path=path,
            hint="pass --resume to continue it, --overwrite to replace it, or choose another --out",
        )
    fresh = not path.exists() or path.stat().st_size == 0
    report = ScoreReport()
    with hold_lock(path):
        try:
            _score_locked(
                units,
                env_for,
                path,
                report,
                resume=resume,
                keep_going=keep_going,
                total=total,
                desc=desc,
                log=log,
                on_record=on_record,
                prepare=prepare,
                rollout_seconds=rollout_seconds,
                call_memory_mb=call_memory_mb,
            )
        except BaseException:
            # A failed run leaves no empty output behind (a non-empty one keeps its records for --resume).
            _drop_if_empty(path, fresh)
            raise
        if report.skipped:  # exit 2: nothing scored leaves nothing behind
            _drop_if_empty(path, fresh)
    return report


def _drop_if_empty(path: Path, fresh: bool) -> None:
    if fresh and path.is_file() and path.stat().st_size == 0:
        path.unlink()


def _score_locked(
    units: Iterable[Rollout | Skipped],
    env_for: Callable[[Rollout], Environment],
    path: Path,
    report: ScoreReport,
    *,
    resume: bool,
    keep_going: bool,
    total: int | None,
    desc: str,
    log: TextIO,
    on_record: Callable[[PrefixRecord], None] | None,
    prepare: Callable[[Rollout], Rollout] | None,
    rollout_seconds: float | None,
    call_memory_mb: int,
) -> None:
    done = completed_keys(path, kind=RECORD_KIND) if resume else set()
    seen: set[UnitKey] = set()
    with (
        JsonlWriter(path, append=resume) as writer,
        tqdm(total=total, desc=desc, unit="rollout", disable=None, file=sys.stderr) as bar,
    ):
        for unit in units:
            bar.update(1)
            if isinstance(unit, Skipped):
                _skip(report, unit, keep_going, log)
                continue
            if unit.key in seen:
                _skip(report, Skipped(_name(unit), "duplicate: the input holds this rollout twice"), keep_going, log)
                continue
            seen.add(unit.key)
            if unit.key in done:
                report.resumed += 1
                continue
            try:
                with budget.rollout_budget(rollout_seconds, call_memory_mb):
                    ready = prepare(unit) if prepare is not None else unit
                    record = replay(ready, env_for(ready))
            except (ReplayError, InputError, budget.OverBudget) as exc:
                _skip(report, Skipped(_name(unit), str(exc)), keep_going, log)
                continue
            row = record_to_json(record)
            if "metadata" in row:  # an input's settings (another tool's api_base) lose URL credentials
                row["metadata"] = redact_json(row["metadata"])
            writer.write(row)
            report.written += 1
            report.executable += int(record.executable)
            if on_record is not None:
                on_record(record)


def refuse_input_as_output(out: Path, inputs: Iterable[str | Path]) -> None:
    """An :class:`InputError` when ``out`` is (the same file as) one of ``inputs``: writing it would erase
    the input it is reading, ``--overwrite`` or not."""
    if not out.exists():
        return
    for item in inputs:
        source = Path(item)
        try:
            same = source.is_file() and out.samefile(source)
        except OSError:
            same = False
        if same:
            raise InputError(
                "the output is also an input of this command",
                path=out,
                hint="choose another --out; writing it would erase the input",
            )


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


def _name(unit: Rollout) -> str:
    return f"task {unit.task_id} (model {unit.model}, method {unit.method}, trial {unit.trial})"


def _skip(report: ScoreReport, unit: Skipped, keep_going: bool, log: TextIO) -> None:
    if not keep_going:
        raise InputError(
            f"{unit.where}: {unit.error}",
            hint="fix the input, or pass --keep-going to score the rest and list the failures",
        )
    report.skipped.append(unit)
    print(f"prefix-exec: skipped {unit.where}: {unit.error}", file=log)
