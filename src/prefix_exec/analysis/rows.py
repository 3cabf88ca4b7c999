"""Metric rows: the fields the metrics need, read from any JSONL of scored records.

A :class:`MetricRow` is a record without its verdicts and actions. ``prefix-exec metrics`` reads them from any
JSON Lines file whose rows carry :data:`METRIC_FIELDS` (a records file, or rows another tool wrote), checked as
:mod:`prefix_exec.records.codec` checks a record's fields, with the file, line and field of the first bad one.
``success`` may be ``null``: Y was not recorded (absent, never counted as 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from prefix_exec.analysis.tasksets import task_set_of
from prefix_exec.envs.tau.pooled import domain_of_record
from prefix_exec.errors import InputError
from prefix_exec.methods import split_verifier_variants, verifier_setting
from prefix_exec.records import infrastructure
from prefix_exec.records.codec import check_layout, costs_from_json, is_rollout, rollouts_here
from prefix_exec.records.jsonl import iter_json_lines
from prefix_exec.records.redaction import redact_text
from prefix_exec.records.values import Fields
from prefix_exec.trajectory import AgentCost, Unit, UnitKey, agent_cost

#: Fields ``prefix-exec metrics`` needs in any JSONL row.
METRIC_FIELDS = ("dataset", "task_id", "model", "method", "T", "fed", "success")


@dataclass(frozen=True)
class MetricRow(Unit):
    """The minimal fields metrics need (a record without its verdicts); any JSONL with them can be summarized.
    ``success`` is ``None`` when the row's Y was not recorded (``"success": null``)."""

    T: int
    fed: int
    success: int | None
    label: str | None = None
    #: ``metadata.tau2.task_set`` (:mod:`prefix_exec.analysis.tasksets`), when the record says.
    task_set: str | None = None
    #: The domain of a pooled dataset's record (``airline`` for tau3's ``airline/18``; :mod:`envs.tau.pooled`).
    domain: str | None = None
    #: The agent-side cost of the rollout, from its ``cost`` list (:func:`agent_cost`), when it has one.
    agent_cost: AgentCost | None = None
    #: ``(verifier model or rule, K_val)`` from ``metadata`` (:func:`prefix_exec.methods.verifier_setting`).
    verifier: tuple[str, str] | None = None
    #: The infrastructure failure that ended the rollout (``metadata.infrastructure``), when one did: its label is
    #: then ``infrastructure`` (:mod:`prefix_exec.records.infrastructure`).
    infrastructure: str | None = None


def metric_row_from_json(data: Any, *, path: str | None = None, line: int | None = None) -> MetricRow:
    """The row of one parsed JSON line; an InputError names the file, line and field of the first bad field (a
    rollout row is refused with the command that scores it)."""
    if is_rollout(data):
        raise rollouts_here(path, line)
    f = Fields(data, path, line)
    T = f.depth("T")
    fed = f.depth("fed")
    if T < 1:
        f.fail("T", f"must be >= 1 (an empty rollout counts as T = 1), got {T}")
    if not 1 <= fed <= T + 1:
        f.fail("fed", f"must lie in 1..T+1 = 1..{T + 1}, got {fed}")
    unit = f.unit()
    check_layout(f, unit)
    metadata = data.get("metadata")
    return MetricRow(
        **unit,
        T=T,
        fed=fed,
        success=f.final_success(),
        # the label the record is counted under: an infrastructure failure's own, whatever the file says
        label=infrastructure.label_of(f.get("label", str, required=False), metadata),
        task_set=task_set_of(metadata) if isinstance(metadata, Mapping) else None,
        domain=domain_of_record(unit["dataset"], unit["task_id"], metadata),
        # agent telemetry, for the cost columns (checked as a record's is, only when the row has a cost list)
        agent_cost=agent_cost(costs_from_json(f)),
        verifier=verifier_setting(metadata) if isinstance(metadata, Mapping) else None,
        infrastructure=infrastructure.failure_of(metadata),
    )


def read_metric_rows(paths: Iterable[str | Path], *, redact: bool = False) -> list[MetricRow]:
    """Rows from every file; a unit (dataset, task, model, method, trial) seen twice is an InputError,
    since counting one rollout twice would narrow every interval. A method whose rows carry two or more
    verifier settings (verifier reruns) is split into one method per setting first, as the report does
    (:func:`~prefix_exec.methods.split_verifier_variants`). ``redact``: credentials in URLs are removed from
    the rows' names (dataset, task, model, method, label, task set)."""
    found: list[tuple[MetricRow, str, int]] = []
    for path in paths:
        where = str(path)  # one string per file, not per row
        for number, data in iter_json_lines(path):
            row = metric_row_from_json(data, path=where, line=number)
            found.append((_redacted(row) if redact else row, where, number))
    rows = split_verifier_variants(
        [row for row, _, _ in found],
        lambda r: r.condition,
        lambda r: r.verifier,
        lambda r, name: replace(r, method=name),
    )
    first: dict[UnitKey, str] = {}
    for row, (_, path, number) in zip(rows, found, strict=True):
        if row.key in first:
            raise InputError(
                f"this rollout (dataset {row.dataset}, task {row.task_id}, model {row.model}, method "
                f"{row.method}, trial {row.trial}) is already at {first[row.key]}",
                path=path,
                line=number,
                hint="pass each records file once; give repeated runs distinct trial numbers",
            )
        first[row.key] = f"{path}:{number}"
    return rows


def _redacted(row: MetricRow) -> MetricRow:
    names = (row.dataset, row.task_id, row.model, row.method, row.label, row.task_set)
    if not any(name and "://" in name for name in names):
        return row
    return replace(
        row,
        dataset=redact_text(row.dataset),
        task_id=redact_text(row.task_id),
        model=redact_text(row.model),
        method=redact_text(row.method),
        label=row.label and redact_text(row.label),
        task_set=row.task_set and redact_text(row.task_set),
    )
