"""Score a stream of rollouts into a records file: resumable, with progress, and nothing silently dropped.

Every benchmark's ``score`` command funnels through :func:`score_to_file`. Importers yield rollouts, or
:class:`~prefix_exec.replay.Skipped` for an input unit they could not read; replay errors become ``Skipped``
too when the user asked to keep going. Records are appended and fsynced one by one, so a kill loses at most
the rollout in flight, and ``resume`` skips units already in the file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from prefix_exec.envs.base import Environment
from prefix_exec.errors import InputError
from prefix_exec.io import JsonlWriter, completed_keys, record_to_json
from prefix_exec.jsonl import UnitKey
from prefix_exec.replay import ReplayError, Skipped, replay
from prefix_exec.trajectory import PrefixRecord, Rollout


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
) -> ScoreReport:
    """Replay every rollout in ``units`` and append its record to ``out``.

    Without ``keep_going`` the first unit that cannot be scored raises :class:`InputError` (records written
    before it stay on disk). With it, each such unit is reported on ``log`` and in the returned report.
    A rollout whose key (dataset, task, model, method, trial) already came earlier in the input is such a
    unit: two rollouts of one unit would count one task twice. An existing non-empty ``out`` is continued
    with ``resume``, replaced with ``overwrite``, and otherwise refused, so a forgotten flag never erases
    finished work.
    """
    log = log if log is not None else sys.stderr
    path = Path(out)
    if not resume and not overwrite and path.is_file() and path.stat().st_size > 0:
        raise InputError(
            "the output file already holds records",
            path=path,
            hint="pass --resume to continue it, --overwrite to replace it, or choose another --out",
        )
    done = completed_keys(out) if resume else set()
    seen: set[UnitKey] = set()
    report = ScoreReport()
    with JsonlWriter(out, append=resume) as writer, tqdm(
        total=total, desc=desc, unit="rollout", disable=None, file=sys.stderr
    ) as bar:
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
                record = replay(unit, env_for(unit))
            except (ReplayError, InputError) as exc:
                _skip(report, Skipped(_name(unit), str(exc)), keep_going, log)
                continue
            writer.write(record_to_json(record))
            report.written += 1
            report.executable += int(record.executable)
            if on_record is not None:
                on_record(record)
    return report


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
