"""What each request of a run asked, what the model answered, what was read from the answer and the verdict on
it: the data of ``prefix-exec show RUN_DIR``.

Read from the run folder alone: ``cache.sqlite`` keeps each request as asked (bounded and redacted, with how
its answer is read: :mod:`prefix_exec.llm.cache`) and each answer; ``records.jsonl`` the verdicts. A request
is read again from its answer exactly as the run read it (:func:`prefix_exec.llm.decode.decode_answer`, with
the run's mode, text format and declared tools). Works on a run in progress: a request without an answer is in
flight (or the run stopped before the answer came), and a unit without a record yet has no verdicts.

A call's verdict is found by order: a unit's executor calls, request after request, are its record's actions
in order (the record's verdicts are by step: replay stops at the first rejection, so calls after it have none).
A run written before requests were kept in the cache has no requests to show: :func:`unit_views` says so.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from prefix_exec.agents.planning import parse_plan, parse_verdict
from prefix_exec.llm.cache import Exchange, ResponseCache
from prefix_exec.llm.decode import decode_answer, response_problem
from prefix_exec.records import infrastructure
from prefix_exec.records.codec import read_records
from prefix_exec.trajectory import PrefixRecord, ToolCall

#: The run folder's files read here.
CACHE, RECORDS = "cache.sqlite", "records.jsonl"
#: Characters of a message or an answer shown unless asked for all.
SHOWN_CHARS = 1_200


@dataclass(frozen=True)
class CallView:
    """One call read from an answer: its name, arguments (JSON text), parse error and verdict text."""

    name: str
    arguments: str
    parse_error: str | None
    verdict: str


@dataclass(frozen=True)
class RequestView:
    """One request of a unit: ``index`` (from 1, in the order asked), the role, the exchange, and what was read
    (``format``: the text format that read the calls, ``native``, or ``None`` for no call; ``problem``: why the
    answer could not be used; ``plan``: a planner's answer read as a plan, a verifier's as a verdict)."""

    index: int
    role: str
    exchange: Exchange
    format: str | None
    calls: tuple[CallView, ...]
    problem: str | None
    plan: str | None = None


def unit_label(scope: str) -> str:
    """A unit's cache scope (its key joined by US) as ``dataset/task/model/method/trial``."""
    return "/".join(scope.split("\x1f")) if scope else "(no unit)"


def unit_views(run_dir: Path, unit: str | None = None) -> dict[str, list[RequestView]]:
    """The requests of each unit of ``run_dir`` (or of those whose label is ``unit`` or contains it), in the
    order asked; empty when the cache keeps no request (a run from before requests were kept, or none yet)."""
    cache_path = run_dir / CACHE
    if not cache_path.is_file():
        return {}
    by_unit: dict[str, list[Exchange]] = defaultdict(list)
    for exchange in ResponseCache(cache_path).exchanges():
        label = unit_label(str(exchange.request.get("scope") or ""))
        if unit is None or unit == label or unit in label:
            by_unit[label].append(exchange)
    records = _records(run_dir / RECORDS)
    return {label: list(_views(exchanges, records.get(label))) for label, exchanges in by_unit.items()}


def _records(path: Path) -> dict[str, PrefixRecord]:
    if not path.is_file():
        return {}
    out: dict[str, PrefixRecord] = {}
    for record in read_records(path):
        out["/".join(map(str, (record.dataset, record.task_id, record.model, record.method, record.trial)))] = record
    return out


def _views(exchanges: Sequence[Exchange], record: PrefixRecord | None) -> Iterator[RequestView]:
    verdicts = _Verdicts(record)
    at = 0  # the unit's executor calls so far: the record's action index
    for index, exchange in enumerate(exchanges, start=1):
        role = str(exchange.reading.get("role") or "?")
        if exchange.response is None:
            yield RequestView(index, role, exchange, None, (), None)
            continue
        problem = response_problem(exchange.response)
        if problem is not None:
            yield RequestView(index, role, exchange, None, (), problem)
            continue
        done = decode_answer(
            exchange.response,
            mode=str(exchange.reading.get("mode") or "native"),
            text_format=str(exchange.reading.get("text_format") or "auto"),
            role=role,
            model="",
            latency_s=0.0,
            tools=frozenset(str(name) for name in exchange.reading.get("tools") or ()),
        )
        calls = []
        for call in done.calls:
            verdict = verdicts(at) if role == "executor" else ""
            at += role == "executor"
            calls.append(CallView(call.name, _arguments(call), call.parse_error, verdict))
        shape = done.text_format or ("native" if done.calls else None)
        yield RequestView(index, role, exchange, shape, tuple(calls), None, plan_reading(role, done.content))


def plan_reading(role: str, content: str | None) -> str | None:
    """A planner's answer as the dual-loop read it (its steps, or why the structure check refused it) and a
    verifier's (approved, or its issues); ``None`` for other roles."""
    if role == "planner":
        plan = parse_plan(content)
        if plan.parse_error is not None:
            return f"plan refused by the structure check: {plan.parse_error}"
        return f"plan of {len(plan.steps)} steps: " + ", ".join(str(step.get("tool")) for step in plan.steps)
    if role == "verifier":
        verdict = parse_verdict(content)
        if verdict.approved:
            return "verdict: approved"
        issues = "; ".join(str(issue.get("message")) for issue in verdict.issues)
        return f"verdict: rejected ({verdict.origin}): {issues}"
    return None


class _Verdicts:
    """The verdict text of a unit's ``i``-th executor call (0-based), from its record."""

    def __init__(self, record: PrefixRecord | None) -> None:
        self.record = record

    def __call__(self, i: int) -> str:
        record = self.record
        if record is None:
            return "no record yet"
        if i >= len(record.actions):
            return "not in the record (beyond the unit's call limit)"
        if i >= len(record.verdicts):
            return "not replayed (after the first rejection)"
        verdict = record.verdicts[i]
        if verdict.accepted:
            return "accepted"
        if failure := infrastructure.failure_of(record.metadata):  # the system's failure: never one of the five
            return f"rejected at depth {i + 1}: {infrastructure.LABEL} (the system's, not the agent's: {failure})"
        label = verdict.label.value if verdict.label is not None else "rejected"
        return f"rejected at depth {i + 1}: {label}: {verdict.reason or ''}"


def _arguments(call: ToolCall) -> str:
    if call.parse_error is not None:
        return call.raw or ""
    return json.dumps(dict(call.arguments), ensure_ascii=False, sort_keys=True)


def render(views: Mapping[str, Sequence[RequestView]], *, full: bool = False, now: float | None = None) -> str:
    """``views`` as text: per unit, per request the messages sent (the last in full, the others counted), the
    raw answer, what was read and each call's verdict. ``full``: every message, and no text cut."""
    now = time.time() if now is None else now
    lines: list[str] = []
    for label, requests in views.items():
        lines.append(f"== {label}: {len(requests)} requests")
        for view in requests:
            lines += _request_lines(view, full=full, now=now)
    return "\n".join(lines)


def _request_lines(view: RequestView, *, full: bool, now: float) -> list[str]:
    exchange = view.exchange
    messages = [m for m in exchange.request.get("messages") or [] if isinstance(m, dict)]
    mode = exchange.reading.get("mode")
    tools = exchange.reading.get("tools") or []
    head = f"-- request {view.index} ({view.role}, mode {mode}, {len(tools)} tools declared, key {exchange.key[:12]})"
    lines = [head]
    dropped = exchange.request.get("messages_dropped")
    shown = messages if full else messages[-1:]
    if not full and len(messages) > 1:
        where = f"all: --full, or key {exchange.key} in cache.sqlite"
        lines.append(f"   sent {len(messages)} messages; the last ({where}):")
    elif dropped:
        lines.append(f"   {dropped} messages were not kept")
    for message in shown:
        lines.append(f"   [{message.get('role')}] {_clip(str(message.get('content') or ''), full)}")
    if exchange.response is None:
        lines.append(f"   no answer yet: asked {now - exchange.asked_at:.0f} s ago (in flight, or the run stopped)")
        return lines
    choice = (exchange.response.get("choices") or [{}])[0]
    answer = choice.get("message") if isinstance(choice, dict) else None
    content = answer.get("content") if isinstance(answer, dict) else None
    native = answer.get("tool_calls") if isinstance(answer, dict) else None
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    lines.append(f"   answer ({exchange.latency_s or 0:.1f} s, finish_reason {finish}): {_clip(str(content), full)}")
    if native:
        lines.append(f"   native tool_calls: {_clip(str(native), full)}")
    if view.problem is not None:
        lines.append(f"   unusable answer: {view.problem}")
    elif view.plan is not None:
        lines.append(f"   read: {_clip(view.plan, full)}")
    elif not view.calls:
        lines.append("   read: no call")
    for call in view.calls:
        lines.append(f"   read ({view.format}): {call.name}({_clip(call.arguments, full)})")
        if call.parse_error:
            lines.append(f"      parse error: {call.parse_error}")
        if call.verdict:
            lines.append(f"      verdict: {call.verdict}")
    return lines


def _clip(text: str, full: bool) -> str:
    flat = text.replace("\n", "\\n")
    if full or len(flat) <= SHOWN_CHARS:
        return flat
    return f"{flat[:SHOWN_CHARS]}... [{len(flat) - SHOWN_CHARS:,} more characters]"
