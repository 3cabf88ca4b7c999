"""What ``prefix-exec report`` reads: records files and run directories.

A *run directory* is a folder holding scored records as ``records*.jsonl`` files, at any depth below it (the
``score`` commands' ``--out`` files and a grid run's per-condition files both qualify). Files are read in
sorted path order. The same rollout (dataset, task_id, model, method, trial) may appear only once over all
inputs: two copies would be counted twice, so that is an input error. A method whose records carry several
verifier settings (``metadata.verifier_model`` / ``k_val``) is split into one method per setting first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path

from prefix_exec import methods
from prefix_exec.analysis.rows import MetricRow
from prefix_exec.envs.tau.pooled import domain_of_record
from prefix_exec.errors import InputError
from prefix_exec.records import infrastructure
from prefix_exec.records.codec import read_records
from prefix_exec.records.jsonl import expand_inputs
from prefix_exec.trajectory import PrefixRecord, UnitKey

RUN_DIR_PATTERN = "records*.jsonl"


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Files to read: a file as given, a directory as its ``records*.jsonl`` files (recursively)."""
    return expand_inputs(
        paths,
        lambda folder: folder.rglob(RUN_DIR_PATTERN),
        none_found=f"no {RUN_DIR_PATTERN} files in this run directory",
        hint="pass records files, or a folder that holds records*.jsonl",
    )


def load(paths: Sequence[str | Path]) -> list[PrefixRecord]:
    """Every record of ``paths``, with verifier variants split into their own methods (see
    :func:`split_verifier_variants`); a rollout key seen twice is an :class:`InputError`. Credentials in URLs
    (old records, other tools' metadata) are removed as the records are read: everything a report shows or
    writes comes from these records, and the input files stay as they are."""
    found: list[tuple[PrefixRecord, Path]] = []
    for path in expand(paths):
        found += [(record, path) for record in read_records(path, redact=True)]
    if not found:
        raise InputError("no records found", path=", ".join(str(p) for p in paths), hint="score some rollouts first")
    records = split_verifier_variants([r for r, _ in found])
    seen: dict[UnitKey, Path] = {}
    for record, (_, path) in zip(records, found, strict=True):
        if record.key in seen:
            raise InputError(
                f"rollout {record.key} appears twice (first in {seen[record.key]})",
                path=path,
                hint="pass each records file once; split or deduplicate merged files",
            )
        seen[record.key] = path
    return records


def verifier_setting(record: PrefixRecord) -> tuple[str, str] | None:
    """The record's verifier setting (:func:`prefix_exec.methods.verifier_setting`)."""
    return methods.verifier_setting(record.metadata)


def split_verifier_variants(records: Sequence[PrefixRecord]) -> list[PrefixRecord]:
    """A method whose records carry two or more verifier settings (a sensitivity grid run under one method
    name) becomes one method per setting, named ``dual-loop [verifier=M, K_val=K]``, so that each setting
    is its own condition (:func:`prefix_exec.methods.split_verifier_variants`)."""
    return methods.split_verifier_variants(
        records,
        lambda r: r.condition,
        verifier_setting,
        lambda r, name: dataclasses.replace(r, method=name),
    )


def metric_rows(records: Iterable[PrefixRecord]) -> list[MetricRow]:
    """The rows :func:`~prefix_exec.analysis.summary.summarize` needs; a pooled dataset's rows name their domain."""
    return [
        MetricRow(
            r.dataset,
            r.task_id,
            r.model,
            r.method,
            r.trial,
            r.T,
            r.fed,
            r.success,
            infrastructure.record_label(r),
            domain=domain_of_record(r.dataset, r.task_id, r.metadata),
            infrastructure=infrastructure.failure_of(r.metadata),
        )
        for r in records
    ]


def is_synthetic(records: Iterable[PrefixRecord]) -> bool:
    """True when any record says ``metadata.synthetic``: the report then says so on every page and plot."""
    return any(bool(r.metadata.get("synthetic")) for r in records)
