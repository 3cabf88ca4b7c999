"""Canonical JSONL: one rollout or one scored record per line, each carrying a schema version.

Readers validate every field at this edge and raise :class:`~prefix_exec.errors.InputError` naming the
file, the 1-based line and the field. The file mechanics (clear errors for broken lines, crash-safe appends,
resume keys) live in :mod:`prefix_exec.records.jsonl` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from prefix_exec.analysis.tasksets import task_set_of
from prefix_exec.envs.tau.pooled import read_key
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonObject
from prefix_exec.methods import split_verifier_variants, verifier_setting
from prefix_exec.records.jsonl import JsonlWriter as JsonlWriter
from prefix_exec.records.jsonl import UnitKey
from prefix_exec.records.jsonl import completed_keys as completed_keys
from prefix_exec.records.jsonl import dumps as dumps
from prefix_exec.records.jsonl import iter_json_lines as iter_json_lines
from prefix_exec.records.jsonl import utf8_lines as utf8_lines
from prefix_exec.records.redaction import redact_json, redact_text
from prefix_exec.trajectory import (
    CallCost,
    FailureLabel,
    MetricRow,
    Observation,
    PrefixRecord,
    Rollout,
    ToolCall,
    Verdict,
    agent_cost,
    excerpt,
)

SCHEMA_VERSION = 1
ROLLOUT_KIND = "rollout"
RECORD_KIND = "record"
#: Largest T (evaluated action slots) a record may carry. Curves and tables run to the largest T, so one
#: hostile ``"T": 10**18`` would otherwise ask for exabytes; real rollouts have tens to hundreds of calls.
MAX_T = 100_000
#: Fields ``prefix-exec metrics`` needs in any JSONL row.
METRIC_FIELDS = ("dataset", "task_id", "model", "method", "T", "fed", "success")


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
    label = record.label
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
        "label": label.value if label else None,
        "reason": record.reason,
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


class _Fields:
    """Typed access to one JSON object, raising InputError with the file, line and field path."""

    def __init__(self, data: Any, path: str | None, line: int | None, prefix: str = "") -> None:
        self.path, self.line, self.prefix = path, line, prefix
        if not isinstance(data, dict):
            self.fail("", f"expected a JSON object, got {type(data).__name__}")
        self.data: JsonObject = data

    def fail(self, name: str, message: str, hint: str | None = None) -> NoReturn:
        raise InputError(message, path=self.path, line=self.line, field=self.prefix + name or None, hint=hint)

    def sub(self, value: Any, name: str) -> _Fields:
        return _Fields(value, self.path, self.line, self.prefix + name + ".")

    def get(self, name: str, kind: type | tuple[type, ...], *, required: bool = True, default: Any = None) -> Any:
        if name not in self.data or self.data[name] is None:
            if required:
                self.fail(name, "missing", hint=f"every row needs '{self.prefix}{name}'")
            return default
        value = self.data[name]
        # bool is an int in Python; a JSON true is never a valid count or depth.
        if not isinstance(value, kind) or (kind in (int, (int, float)) and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.fail(
                name,
                f"expected {names}, got {type(value).__name__} {value!r:.60}",
                hint="the canonical row format is described under 'Formats' in README.md",
            )
        return value

    def text(self, name: str, *, required: bool = True) -> Any:
        value = self.get(name, (str, int), required=required)
        return None if value is None else str(value)


def call_from_json(f: _Fields) -> ToolCall:
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


def cost_from_json(f: _Fields) -> CallCost:
    return CallCost(
        role=f.get("role", str),
        prompt_tokens=f.get("prompt_tokens", int, required=False, default=0),
        completion_tokens=f.get("completion_tokens", int, required=False, default=0),
        reasoning_tokens=f.get("reasoning_tokens", int, required=False, default=0),
        latency_s=float(f.get("latency_s", (int, float), required=False, default=0.0)),
        model=f.get("model", str, required=False),
        queue_s=float(f.get("queue_s", (int, float), required=False, default=0.0)),
        backoff_s=float(f.get("backoff_s", (int, float), required=False, default=0.0)),
    )


def _list(f: _Fields, name: str) -> list[Any]:
    return list(f.get(name, list, required=False, default=[]))


def _success(f: _Fields, *, required: bool) -> int | None:
    value = f.get("success", (int, float, bool), required=required)
    if value is None:
        return None
    if value not in (0, 1):
        f.fail("success", f"must be 0 or 1, got {value!r}")
    return int(value)


def _check_version(f: _Fields, kind: str) -> None:
    version = f.data.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        f.fail(
            "schema_version",
            f"unsupported version {version!r}; this prefix-exec reads version {SCHEMA_VERSION}",
            hint="upgrade prefix-exec, or re-export the file with this version",
        )
    found = f.data.get("kind", kind)
    if kind == RECORD_KIND and found == ROLLOUT_KIND:
        raise _rollouts_here(f.path, f.line)
    if found != kind:
        f.fail("kind", f"expected a {kind} row, got {found!r}")


def _unit(f: _Fields) -> JsonObject:
    """The unit identity every row carries (dataset, task_id, model, method; trial 0 when absent), read in
    that order, so the first bad one is the one reported."""
    return {
        "dataset": f.text("dataset"),
        "task_id": f.text("task_id"),
        "model": f.text("model"),
        "method": f.text("method"),
        "trial": f.get("trial", int, required=False, default=0),
    }


def rollout_from_json(data: Any, *, path: str | None = None, line: int | None = None) -> Rollout:
    f = _Fields(data, path, line)
    _check_version(f, ROLLOUT_KIND)
    actions = tuple(call_from_json(f.sub(a, f"actions[{i}]")) for i, a in enumerate(_list(f, "actions")))
    transcript = f.get("transcript", list, required=False)
    return Rollout(
        **_unit(f),
        trial_given=f.data.get("trial") is not None,
        actions=actions,
        success=_success(f, required=False),
        transcript=tuple(transcript) if transcript is not None else None,
        cost=tuple(cost_from_json(f.sub(c, f"cost[{i}]")) for i, c in enumerate(_list(f, "cost"))),
        metadata=f.get("metadata", dict, required=False, default={}),
    )


def verdict_from_json(f: _Fields) -> Verdict:
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
        notes=tuple(_strings(f, "notes")),
    )


def _strings(f: _Fields, name: str) -> list[str]:
    items = _list(f, name)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            f.fail(f"{name}[{i}]", f"expected str, got {type(item).__name__} {item!r:.60}")
    return items


def _depth_count(f: _Fields, name: str) -> int:
    """T or fed: an integer no larger than MAX_T + 1 (the depth arrays run to it)."""
    value: int = f.get(name, int)
    if value > MAX_T + 1:
        f.fail(
            name,
            f"{value:.3g} is beyond the largest supported horizon T = {MAX_T:,}",
            hint="a rollout has at most tens of thousands of actions; is this field corrupt?",
        )
    return value


def record_from_json(data: Any, *, path: str | None = None, line: int | None = None) -> PrefixRecord:
    f = _Fields(data, path, line)
    _check_version(f, RECORD_KIND)
    unit = _unit(f)
    metadata = f.get("metadata", dict, required=False, default={})
    key = read_key(unit["dataset"], unit["task_id"], metadata)  # the layout before tau3's pooling mapped
    try:
        return PrefixRecord(
            **{**unit, **key.names()},
            T=_depth_count(f, "T"),
            fed=_depth_count(f, "fed"),
            success=int(_success(f, required=True) or 0),
            verdicts=tuple(verdict_from_json(f.sub(v, f"verdicts[{i}]")) for i, v in enumerate(_list(f, "verdicts"))),
            actions=tuple(call_from_json(f.sub(a, f"actions[{i}]")) for i, a in enumerate(_list(f, "actions"))),
            no_tool=f.get("no_tool", bool, required=False, default=False),
            cost=tuple(cost_from_json(f.sub(c, f"cost[{i}]")) for i, c in enumerate(_list(f, "cost"))),
            metadata=key.annotate(metadata),
        )
    except ValueError as exc:
        raise InputError(str(exc), path=path, line=line) from None


def metric_row_from_json(data: Any, *, path: str | None = None, line: int | None = None) -> MetricRow:
    if _is_rollout(data):
        raise _rollouts_here(path, line)
    f = _Fields(data, path, line)
    T = _depth_count(f, "T")
    fed = _depth_count(f, "fed")
    if T < 1:
        f.fail("T", f"must be >= 1 (an empty rollout counts as T = 1), got {T}")
    if not 1 <= fed <= T + 1:
        f.fail("fed", f"must lie in 1..T+1 = 1..{T + 1}, got {fed}")
    unit = _unit(f)
    key = read_key(unit["dataset"], unit["task_id"], metadata := data.get("metadata"))
    return MetricRow(
        **{**unit, **key.names()},
        T=T,
        fed=fed,
        success=int(_success(f, required=True) or 0),
        label=f.get("label", str, required=False),
        task_set=task_set_of(metadata) if isinstance(metadata, Mapping) else None,
        domain=key.domain,
        renamed_from=key.renamed_from,
        # agent telemetry, for the cost columns (checked as a record's is, only when the row has a cost list)
        agent_cost=agent_cost(cost_from_json(f.sub(c, f"cost[{i}]")) for i, c in enumerate(_list(f, "cost"))),
        verifier=verifier_setting(metadata) if isinstance(metadata, Mapping) else None,
    )


def _rollouts_here(path: str | None, line: int | None) -> InputError:
    """The error for a rollouts file given where scored records belong (metrics, report)."""
    return InputError(
        "this is a rollouts file (tool calls not yet replayed), not scored records: score it first",
        path=path,
        line=line,
        hint=f"prefix-exec score custom --tools SPEC {path or 'ROLLOUTS.jsonl'} --out records.jsonl (or the "
        "score command of its benchmark), then pass records.jsonl",
    )


def _is_rollout(data: Any) -> bool:
    """A rollout row (``kind: rollout``, or actions without T and fed), read where scored records belong."""
    if not isinstance(data, Mapping):
        return False
    return data.get("kind") == ROLLOUT_KIND or ("actions" in data and "T" not in data and "fed" not in data)


# ---------------------------------------------------------------------------------------------- files


def read_rollouts(path: str | Path) -> Iterator[Rollout]:
    for number, data in iter_json_lines(path):
        yield rollout_from_json(data, path=str(path), line=number)


def read_records(path: str | Path, *, redact: bool = False) -> Iterator[PrefixRecord]:
    """The records of ``path``; ``redact``: with credentials in URLs removed from every string of each row
    (:func:`~prefix_exec.records.redaction.redact_json`), for records that are shown or written elsewhere."""
    for number, data in iter_json_lines(path):
        yield record_from_json(redact_json(data) if redact else data, path=str(path), line=number)


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
        lambda r: (r.dataset, r.model, r.method),
        lambda r: r.verifier,
        lambda r, name: replace(r, method=name),
    )
    first: dict[UnitKey, str] = {}
    for row, (_, path, number) in zip(rows, found, strict=True):
        key = (row.dataset, row.task_id, row.model, row.method, row.trial)
        if key in first:
            raise InputError(
                f"this rollout (dataset {row.dataset}, task {row.task_id}, model {row.model}, method "
                f"{row.method}, trial {row.trial}) is already at {first[key]}",
                path=path,
                line=number,
                hint="pass each records file once; give repeated runs distinct trial numbers",
            )
        first[key] = f"{path}:{number}"
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


def write_rollouts(path: str | Path, rollouts: Iterable[Rollout]) -> int:
    with JsonlWriter(path, append=False) as out:
        return sum(out.write(rollout_to_json(r)) for r in rollouts)


def write_records(path: str | Path, records: Iterable[PrefixRecord]) -> int:
    with JsonlWriter(path, append=False) as out:
        return sum(out.write(record_to_json(r)) for r in records)
