"""Hostile traces for the sweep (tests/test_hostile_sweep.py): one small good trace per format (OTLP/JSON with GenAI
spans, the Agents SDK's export, a LangSmith run tree) whose every path is filled with hostile values between two good
traces, and structural cases: cycles in parent links, missing ids, a million spans in one trace, huge attributes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hostile_cases import CANARY_FILE, CANARY_URL, Case, register

#: The spec every case is scored on.
TOOLS = [{"type": "function", "function": {"name": "login", "parameters": {"type": "object"}}}]
#: Hostile values, as raw JSON text: every path of a good record gets each.
VALUES = {
    "null": "null",
    "number": "42",
    "huge-int": "9" * 5000,
    "surrogate": '"\\ud800"',
    "nested-900": "[" * 900 + "]" * 900,
    "empty-object": "{}",
    "long-text": json.dumps("x" * 200_000),
    "canary": json.dumps({"$ref": CANARY_URL, "file": CANARY_FILE}),
}
#: The values tried at paths deeper than two keys (every value is tried at the others).
CORE = ("null", "number", "nested-900", "canary")
#: The failure each good trace's model call records (the request's, a 400: it marks nothing, so the good rows are
#: scored), so that every path a reader reads a model call's failure from gets the hostile values.
TOO_LONG = "Error code: 400 - maximum context length exceeded"


def values_at(path: tuple[str | int, ...]) -> dict[str, str]:
    return VALUES if len(path) <= 2 else {k: VALUES[k] for k in CORE}


def _trace_id(task: str) -> str:
    return (task.encode().hex() + "0" * 32)[:32]


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)}}


def otlp(task: str) -> dict[str, Any]:
    """A GenAI trace: a root span naming the conversation, a chat span calling login (with a recorded failure:
    status, exception event, error.type), its execute_tool span."""
    trace = _trace_id(task)
    output = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "login", "arguments": {}}]}]
    spans = [
        {
            "traceId": trace,
            "spanId": "1" * 16,
            "name": "agent",
            "startTimeUnixNano": "1",
            "attributes": [_kv("gen_ai.conversation.id", task), _kv("ok", True)],
        },
        {
            "traceId": trace,
            "spanId": "2" * 16,
            "parentSpanId": "1" * 16,
            "name": "chat",
            "startTimeUnixNano": "2",
            "status": {"code": 2, "message": TOO_LONG},
            "events": [
                {
                    "name": "exception",
                    "attributes": [_kv("exception.type", "BadRequestError"), _kv("exception.message", TOO_LONG)],
                }
            ],
            "attributes": [
                _kv("gen_ai.operation.name", "chat"),
                _kv("gen_ai.request.model", "m"),
                _kv("gen_ai.input.messages", [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]),
                _kv("gen_ai.output.messages", output),
                _kv("error.type", "openai.BadRequestError"),
            ],
        },
        {
            "traceId": trace,
            "spanId": "3" * 16,
            "parentSpanId": "1" * 16,
            "name": "execute_tool login",
            "startTimeUnixNano": "3",
            "status": {"code": 2, "message": "denied"},
            "events": [{"name": "exception", "attributes": [_kv("exception.type", "ValueError")]}],
            "attributes": [
                _kv("gen_ai.tool.name", "login"),
                _kv("gen_ai.tool.call.id", "c1"),
                _kv("gen_ai.tool.call.arguments", "{}"),
                {"key": "n", "value": {"intValue": "3"}},
            ],
        },
    ]
    return {
        "resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "s"}, "spans": spans}]}]
    }


def otlp_logs(task: str) -> dict[str, Any]:
    """The same run with its content in a GenAI details log event instead of on the chat span."""
    spans = otlp(task)
    chat = spans["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    content = [
        a for a in chat["attributes"] if a["key"] in ("gen_ai.input.messages", "gen_ai.output.messages", "error.type")
    ]
    chat["attributes"] = [a for a in chat["attributes"] if a not in content]
    event = {
        "traceId": chat["traceId"],
        "spanId": chat["spanId"],
        "timeUnixNano": "2",
        "attributes": content,
        "eventName": "gen_ai.client.inference.operation.details",
        "body": {},
    }
    return {**spans, "resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {}, "logRecords": [event]}]}]}


def agents_sdk(task: str) -> list[dict[str, Any]]:
    """The Agents SDK's exported items of one run: the trace, a generation calling login, its function span."""
    trace = f"trace_{task}"
    call = {"id": "c1", "type": "function", "function": {"name": "login", "arguments": "{}"}}
    return [
        {"object": "trace", "id": trace, "workflow_name": "w", "group_id": task, "metadata": {"ok": "1"}},
        {
            "object": "trace.span",
            "id": "span_1",
            "trace_id": trace,
            "parent_id": None,
            "started_at": "2026-01-01T00:00:01+00:00",
            "ended_at": None,
            "error": {"message": "Error getting response", "data": {"error": TOO_LONG}},
            "span_data": {
                "type": "generation",
                "model": "m",
                "input": [{"role": "user", "content": "hi"}],
                "output": [{"role": "assistant", "content": None, "tool_calls": [call]}],
            },
        },
        {
            "object": "trace.span",
            "id": "span_2",
            "trace_id": trace,
            "parent_id": None,
            "started_at": "2026-01-01T00:00:02+00:00",
            "ended_at": None,
            "error": {"message": "failed", "data": {}},
            "span_data": {"type": "function", "name": "login", "input": "{}", "output": "no"},
        },
    ]


def langsmith(task: str) -> dict[str, Any]:
    """A LangSmith run tree: a chain, its model run calling login, the tool run."""
    ai = {
        "lc": 1,
        "id": ["AIMessage"],
        "kwargs": {"content": "", "tool_calls": [{"name": "login", "args": {}, "id": "c1"}]},
    }
    return {
        "id": f"run-{task}",
        "run_type": "chain",
        "name": "agent",
        "inputs": {},
        "outputs": {},
        "start_time": "2026-01-01T00:00:00",
        "extra": {"metadata": {"task_id": task}},
        "child_runs": [
            {
                "id": f"llm-{task}",
                "run_type": "llm",
                "name": "m",
                "start_time": "2026-01-01T00:00:01",
                "extra": {"metadata": {"ls_model_name": "m"}},
                "inputs": {"messages": [[{"role": "user", "content": "hi"}]]},
                "outputs": {"generations": [[{"message": ai}]]},
                "error": f"BadRequestError('{TOO_LONG}')",
            },
            {
                "id": f"tool-{task}",
                "run_type": "tool",
                "name": "login",
                "start_time": "2026-01-01T00:00:02",
                "inputs": {"input": "{}"},
                "outputs": {"output": "ok"},
                "error": None,
            },
        ],
    }


def paths_of(value: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every key path in a JSON value, every list element included."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from paths_of(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield (*prefix, index)
            yield from paths_of(child, (*prefix, index))


def mutate(record: Any, path: tuple[str | int, ...], raw: str) -> str:
    """``record`` as JSON text with the value at ``path`` replaced by the raw JSON text ``raw``."""
    marker = "\u0000MARK\u0000"
    copy = json.loads(json.dumps(record))
    node = copy
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = marker
    return json.dumps(copy).replace(json.dumps(marker), raw)


def _argv(name: str) -> Any:
    def argv(d: Path) -> list[str]:
        return [
            "score",
            "traces",
            str(d / name),
            "--tools",
            str(d / "tools.json"),
            "--keep-going",
            "--out",
            str(d / "out.jsonl"),
        ]

    return argv


def _case(name: str, lines: list[str], good: tuple[str, ...] = ("g0", "g1"), file: str = "in.jsonl") -> Case:
    return Case(
        f"traces:{name}",
        {file: "\n".join(lines) + "\n", "tools.json": json.dumps(TOOLS)},
        _argv(file),
        "out.jsonl",
        good,
    )


@register("traces")
def trace_cases() -> Iterator[Case]:
    for form, make in (("otlp", otlp), ("otlp-logs", otlp_logs), ("langsmith", langsmith)):
        base = make("hostile")
        for path in paths_of(base):
            for label, raw in values_at(path).items():
                line = mutate(base, path, raw)
                yield _case(
                    f"{form}:{'.'.join(map(str, path))}={label}", [json.dumps(make("g0")), line, json.dumps(make("g1"))]
                )
    items = agents_sdk("hostile")
    good = [json.dumps(i) for task in ("g0", "g1") for i in agents_sdk(task)]
    for index, item in enumerate(items):
        for path in paths_of(item):
            for label, raw in values_at(path).items():
                bad = [json.dumps(i) if k != index else mutate(item, path, raw) for k, i in enumerate(items)]
                yield _case(f"agents-sdk:{index}.{'.'.join(map(str, path))}={label}", [*good[:3], *bad, *good[3:]])
    yield from structural_cases()


def _spans_line(spans: list[dict[str, Any]]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(depth):
        value = {"kvlistValue": {"values": [{"key": "a", "value": value}]}}
    return value


def structural_cases() -> Iterator[Case]:
    good = [json.dumps(otlp("g0")), json.dumps(otlp("g1"))]
    trace = _trace_id("hostile")
    tool = [_kv("gen_ai.tool.name", "login"), _kv("gen_ai.tool.call.arguments", "{}")]
    cycle = [
        {"traceId": trace, "spanId": f"{k:016x}", "parentSpanId": f"{(k + 1) % 3:016x}", "attributes": tool}
        for k in range(3)
    ]
    self_parent = [{"traceId": trace, "spanId": "a" * 16, "parentSpanId": "a" * 16, "attributes": tool}]
    missing = [
        {"spanId": "a" * 16, "attributes": tool},
        {"traceId": "", "attributes": tool},
        {"traceId": trace, "attributes": tool},
        {"traceId": "zz", "spanId": "a" * 16},
    ]
    shapes = {
        "cycle": _spans_line(cycle),
        "self-parent": _spans_line(self_parent),
        "missing-ids": _spans_line(missing),
        "huge-attribute": _spans_line([{"traceId": trace, "attributes": [_kv("gen_ai.tool.name", "x" * 5_000_000)]}]),
        "many-attributes": _spans_line([{"traceId": trace, "attributes": [_kv(f"k{i}", "v") for i in range(200_000)]}]),
        "deep-kvlist": _spans_line([{"traceId": trace, "attributes": [{"key": "k", "value": _deep(200)}]}]),
        "bad-time": _spans_line([{"traceId": trace, "startTimeUnixNano": "-1e400", "attributes": tool}]),
        "resource-logs": json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {}}] * 3}]}]}),
        "wrong-containers": json.dumps({"resourceSpans": {"scopeSpans": 5}}),
        "scope-not-list": json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": "x"}]}]}),
    }
    for name, line in shapes.items():
        yield _case(f"shape:{name}", [good[0], line, good[1]])
    # A million spans in one trace, 20 lines of 50,000: counted past the per-trace limit, never held.
    span = '{"traceId":"%s","spanId":"%s"}'
    lines = [
        _spans_line([]).replace(
            "[]", "[" + ",".join(span % (trace, f"{n * 50_000 + k:016x}") for k in range(50_000)) + "]"
        )
        for n in range(20)
    ]
    yield _case("shape:million-spans", [good[0], *lines, good[1]])
