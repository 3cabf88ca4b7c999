"""Canonical JSONL: one rollout or one scored record per line, each carrying a schema version.

Readers validate every field at this edge and raise :class:`~prefix_exec.errors.InputError` naming the
file, the 1-based line and the field. The file mechanics (clear errors for broken lines, crash-safe appends,
resume keys) live in :mod:`prefix_exec.records.jsonl`; the rows ``prefix-exec metrics`` reads (any JSONL with
the metric fields) in :mod:`prefix_exec.analysis.rows`, with the typed access (:class:`Fields`) defined here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonObject
from prefix_exec.records import infrastructure
from prefix_exec.records.jsonl import JsonlWriter, iter_json_lines
from prefix_exec.records.redaction import redact_json
from prefix_exec.records.values import Fields, message_list, seconds, token_count
from prefix_exec.trajectory import (
    CallCost,
    FailureLabel,
    Observation,
    PrefixRecord,
    Rollout,
    ToolCall,
    UnitKey,
    Verdict,
    excerpt,
)

SCHEMA_VERSION = 1
ROLLOUT_KIND = "rollout"
RECORD_KIND = "record"
#: The layout before tau3 was pooled: these datasets, with a bare task id (``18``, not ``airline/18``), were
#: written by prefix-exec 0.1.0 until 2026-12-01. Their records are refused with the fix (:func:`check_layout`).
UNPOOLED_DATASETS = ("tau3-airline", "tau3-retail")


# ---------------------------------------------------------------------------------------------- encoding


def call_to_json(call: ToolCall) -> JsonObject:
    row: JsonObject = {"name": call.name, "arguments": dict(call.arguments), "turn": call.turn}
    if call.call_id is not None:
        row["call_id"] = call.call_id
    if call.observation is not None:
        row["observation"] = {"content": call.observation.content, "error": call.observation.error}
        if call.observation.error_type is not None:
            row["observation"]["error_type"] = call.observation.error_type
    if call.raw is not None:
        row["raw"] = call.raw
    if call.parse_error is not None:
        row["parse_error"] = call.parse_error
    return row


def cost_to_json(cost: CallCost) -> JsonObject:
    row: JsonObject = {
        "role": cost.role,
        "prompt_tokens": cost.prompt_tokens,
        "completion_tokens": cost.completion_tokens,
        "reasoning_tokens": cost.reasoning_tokens,
        "latency_s": cost.latency_s,
        "model": cost.model,
    }
    # Written only when there was a wait, so records without contention or retries keep their old form.
    for name in ("queue_s", "backoff_s"):
        if getattr(cost, name):
            row[name] = getattr(cost, name)
    return row


def rollout_to_json(rollout: Rollout) -> JsonObject:
    row: JsonObject = {
        "kind": ROLLOUT_KIND,
        "schema_version": SCHEMA_VERSION,
        "dataset": rollout.dataset,
        "task_id": rollout.task_id,
        "model": rollout.model,
        "method": rollout.method,
        "trial": rollout.trial,
        "success": rollout.success,
        "actions": [call_to_json(a) for a in rollout.actions],
    }
    if rollout.success_absent:  # written only then: rollouts with Y (or Y still to compute) keep their old form
        row["success_absent"] = True
    if rollout.transcript is not None:
        row["transcript"] = [dict(m) for m in rollout.transcript]
    if rollout.cost:
        row["cost"] = [cost_to_json(c) for c in rollout.cost]
    if rollout.metadata:
        row["metadata"] = dict(rollout.metadata)
    return row


def verdict_to_json(step: int, call: ToolCall | None, verdict: Verdict) -> JsonObject:
    row: JsonObject = {
        "step": step,
        "tool": call.name if call is not None else None,
        "accepted": verdict.accepted,
        "label": verdict.label.value if verdict.label else None,
        "causes": [c.value for c in verdict.causes],
        "reason": verdict.reason,
    }
    if verdict.result is not None:
        row["result"] = excerpt(verdict.result)
    if verdict.notes:
        row["notes"] = list(verdict.notes)
    return row


def record_to_json(record: PrefixRecord) -> JsonObject:
    """``record``'s JSON row; one an infrastructure failure ended is written with that label and its text as the
    reason (:func:`prefix_exec.records.infrastructure.labelled`), its verdicts as replay made them."""
    label, reason = infrastructure.record_labelled(record)
    calls: list[ToolCall | None] = list(record.actions) or [None]
    row: JsonObject = {
        "kind": RECORD_KIND,
        "schema_version": SCHEMA_VERSION,
        "dataset": record.dataset,
        "task_id": record.task_id,
        "model": record.model,
        "method": record.method,
        "trial": record.trial,
        "T": record.T,
        "fed": record.fed,
        "success": record.success,
        "executable": record.executable,
        "label": label,
        "reason": reason,
        "no_tool": record.no_tool,
        "verdicts": [verdict_to_json(i + 1, calls[i], v) for i, v in enumerate(record.verdicts)],
        "actions": [call_to_json(a) for a in record.actions],
    }
    if record.cost:
        row["cost"] = [cost_to_json(c) for c in record.cost]
    if record.metadata:
        row["metadata"] = dict(record.metadata)
    return row


# ---------------------------------------------------------------------------------------------- decoding


def call_from_json(f: Fields) -> ToolCall:
    obs = None
    if f.data.get("observation") is not None:
        o = f.sub(f.data["observation"], "observation")
        obs = Observation(
            content=o.data.get("content"),
            error=o.get("error", bool, required=False),
            error_type=o.get("error_type", str, required=False),
        )
    return ToolCall(
        name=f.get("name", str),
        arguments=f.get("arguments", dict, required=False, default={}),
        call_id=f.text("call_id", required=False),
        turn=f.get("turn", int, required=False, default=0),
        observation=obs,
        raw=f.get("raw", str, required=False),
        parse_error=f.get("parse_error", str, required=False),
    )


def cost_from_json(f: Fields) -> CallCost:
    return CallCost(
        role=f.get("role", str),
        prompt_tokens=token_count(f, "prompt_tokens"),
        completion_tokens=token_count(f, "completion_tokens"),
        reasoning_tokens=token_count(f, "reasoning_tokens"),
        latency_s=seconds(f, "latency_s"),
        model=f.get("model", str, required=False),
        queue_s=seconds(f, "queue_s"),
        backoff_s=seconds(f, "backoff_s"),
    )


def costs_from_json(f: Fields) -> tuple[CallCost, ...]:
    """The row's ``cost`` list (``()`` when absent), each entry checked."""
    return tuple(cost_from_json(f.sub(c, f"cost[{i}]")) for i, c in enumerate(f.items("cost")))


def calls_from_json(f: Fields) -> tuple[ToolCall, ...]:
    """The row's ``actions`` list (``()`` when absent), each entry checked."""
    return tuple(call_from_json(f.sub(a, f"actions[{i}]")) for i, a in enumerate(f.items("actions")))


def _check_version(f: Fields, kind: str) -> None:
    version = f.data.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        f.fail(
            "schema_version",
            f"unsupported version {version!r}; this prefix-exec reads version {SCHEMA_VERSION}",
            hint="upgrade prefix-exec, or re-export the file with this version",
        )
    found = f.data.get("kind", kind)
    if kind == RECORD_KIND and found == ROLLOUT_KIND:
        raise rollouts_here(f.path, f.line)
    if found != kind:
        f.fail("kind", f"expected a {kind} row, got {found!r}")


def is_unpooled(dataset: str, task_id: str) -> bool:
    """True for a unit in the layout before tau3 was pooled: ``tau3-airline`` or ``tau3-retail`` with a bare id."""
    return dataset in UNPOOLED_DATASETS and "/" not in task_id


def first_unpooled(keys: Iterable[UnitKey]) -> UnitKey | None:
    """The first of ``keys`` (in sorted order) in the layout before tau3 was pooled, or ``None``: an output holding
    one cannot be resumed, since its units would be scored again under their qualified ids beside the old ones."""
    return next((key for key in sorted(keys) if is_unpooled(key[0], key[1])), None)


def check_layout(f: Fields, unit: JsonObject) -> None:
    """Raise for a scored row in the layout before tau3 was pooled (:func:`is_unpooled`), which this version no
    longer reads: its unit would not match the same rollout scored now."""
    dataset, task_id = unit["dataset"], unit["task_id"]
    if is_unpooled(dataset, task_id):
        domain = dataset.removeprefix("tau3-")
        f.fail(
            "dataset",
            f"{dataset!r} with the bare task id {task_id!r} is the layout prefix-exec 0.1.0 wrote before tau3 was "
            f"pooled (until 2026-12-01); this version reads dataset 'tau3' with domain-qualified task ids "
            f"('{domain}/{task_id}') and no longer maps the old layout",
            hint="re-score the source log with this version (prefix-exec score tau RESULTS.json --out records.jsonl)",
        )


def rollout_from_json(data: Any, *, path: str | None = None, line: int | None = None) -> Rollout:
    f = Fields(data, path, line)
    _check_version(f, ROLLOUT_KIND)
    actions = calls_from_json(f)
    success, absent = f.success(required=False), f.get("success_absent", bool, required=False, default=False)
    if absent and success is not None:
        f.fail("success_absent", f"true, but success is {success}", hint="success_absent goes with success null")
    return Rollout(
        **f.unit(),
        trial_given=f.data.get("trial") is not None,
        actions=actions,
        success=success,
        success_absent=absent,
        transcript=message_list(f),
        cost=costs_from_json(f),
        metadata=f.get("metadata", dict, required=False, default={}),
    )


def verdict_from_json(f: Fields) -> Verdict:
    causes = [FailureLabel.parse(c) for c in f.get("causes", list, required=False, default=[])]
    label = f.get("label", str, required=False)
    if label is not None and not causes:
        causes = [FailureLabel.parse(label)]
    accepted = f.get("accepted", bool)
    if not accepted and not causes:
        f.fail("label", "a rejected verdict needs a label")
    return Verdict(
        accepted=accepted,
        reason=f.get("reason", str, required=False, default=""),
        causes=tuple(sorted(set(causes))),
        result=f.data.get("result"),
        notes=tuple(f.strings("notes")),
    )


def record_from_json(data: Any, *, path: str | None = None, line: int | None = None) -> PrefixRecord:
    f = Fields(data, path, line)
    _check_version(f, RECORD_KIND)
    unit = f.unit()
    metadata = f.get("metadata", dict, required=False, default={})
    check_layout(f, unit)
    try:
        return PrefixRecord(
            **unit,
            T=f.depth("T"),
            fed=f.depth("fed"),
            success=f.final_success(),
            verdicts=tuple(verdict_from_json(f.sub(v, f"verdicts[{i}]")) for i, v in enumerate(f.items("verdicts"))),
            actions=calls_from_json(f),
            no_tool=f.get("no_tool", bool, required=False, default=False),
            cost=costs_from_json(f),
            metadata=metadata,
        )
    except ValueError as exc:
        raise InputError(str(exc), path=path, line=line) from None


def rollouts_here(path: str | None, line: int | None) -> InputError:
    """The error for a rollouts file given where scored records belong (metrics, report)."""
    return InputError(
        "this is a rollouts file (tool calls not yet replayed), not scored records: score it first",
        path=path,
        line=line,
        hint=f"prefix-exec score custom --tools SPEC {path or 'ROLLOUTS.jsonl'} --out records.jsonl (or the "
        "score command of its benchmark), then pass records.jsonl",
    )


def is_rollout(data: Any) -> bool:
    """A rollout row (``kind: rollout``, or actions without T and fed), read where scored records belong."""
    return isinstance(data, Mapping) and (
        data.get("kind") == ROLLOUT_KIND or ("actions" in data and "T" not in data and "fed" not in data)
    )


def read_rollouts(path: str | Path) -> Iterator[Rollout]:
    for number, data in iter_json_lines(path):
        yield rollout_from_json(data, path=str(path), line=number)


def read_records(path: str | Path, *, redact: bool = False) -> Iterator[PrefixRecord]:
    """The records of ``path``; ``redact``: with credentials in URLs removed from every string of each row
    (:func:`~prefix_exec.records.redaction.redact_json`), for records that are shown or written elsewhere."""
    for number, data in iter_json_lines(path):
        yield record_from_json(redact_json(data) if redact else data, path=str(path), line=number)


def write_rollouts(path: str | Path, rollouts: Iterable[Rollout]) -> int:
    with JsonlWriter(path, append=False) as out:
        return sum(out.write(rollout_to_json(r)) for r in rollouts)


def write_records(path: str | Path, records: Iterable[PrefixRecord]) -> int:
    with JsonlWriter(path, append=False) as out:
        return sum(out.write(record_to_json(r)) for r in records)
