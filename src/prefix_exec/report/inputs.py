"""What ``prefix-exec report`` reads: records files and run directories.

A *run directory* is a folder holding scored records as ``records*.jsonl`` files, at any depth below it (the
``score`` commands' ``--out`` files and a grid run's per-condition files both qualify). Files are read in
sorted path order. The same rollout (dataset, task_id, model, method, trial) may appear only once over all
inputs: two copies would be counted twice, so that is an input error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from prefix_exec.errors import InputError
from prefix_exec.io import MetricRow, read_records
from prefix_exec.trajectory import PrefixRecord

RUN_DIR_PATTERN = "records*.jsonl"


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Files to read: a file as given, a directory as its ``records*.jsonl`` files (recursively)."""
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(p.rglob(RUN_DIR_PATTERN))
            if not found:
                raise InputError(f"no {RUN_DIR_PATTERN} files in this run directory", path=p,
                                 hint="pass records files, or a folder that holds records*.jsonl")
            files += found
        elif p.exists():
            files.append(p)
        else:
            raise InputError("no such file or directory", path=p)
    return files


def load(paths: Sequence[str | Path]) -> list[PrefixRecord]:
    records: list[PrefixRecord] = []
    seen: dict[tuple[str, str, str, str, int], Path] = {}
    for path in expand(paths):
        for record in read_records(path):
            if record.key in seen:
                raise InputError(f"rollout {record.key} appears twice (first in {seen[record.key]})", path=path,
                                 hint="pass each records file once; split or deduplicate merged files")
            seen[record.key] = path
            records.append(record)
    if not records:
        raise InputError("no records found", path=", ".join(str(p) for p in paths), hint="score some rollouts first")
    return records


def metric_rows(records: Iterable[PrefixRecord]) -> list[MetricRow]:
    return [
        MetricRow(r.dataset, r.task_id, r.model, r.method, r.trial, r.T, r.fed, r.success,
                  r.label.value if r.label else None)
        for r in records
    ]


def is_synthetic(records: Iterable[PrefixRecord]) -> bool:
    """True when any record says ``metadata.synthetic``: the report then says so on every page and plot."""
    return any(bool(r.metadata.get("synthetic")) for r in records)
