"""The trace readers' tables on small spans built here (the real frameworks' files: tests/cli/test_score_traces.py):
legacy GenAI attributes, pydantic-ai's tool attributes, MLflow, LangSmith run trees, tool spans no model call names,
cycles in parent links, and the grouping's bounds (spilling to disk, the per-trace limit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.importers.traces import TraceFile, TraceIdentity
from prefix_exec.importers.traces.attributes import any_value, unflatten
from prefix_exec.importers.traces.grouping import Trace, traces
from prefix_exec.importers.traces.spans import Span
from prefix_exec.importers.transcripts import Identity, Transcript

IDENTITY = TraceIdentity(
    Identity({}, {"model": "m"}, {"method": "default", "trial": None, "dataset": "d", "success": None})
)
TRACE = "0af7651916cd43dd8448eb211c80319c"


def value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    return {"stringValue": v if isinstance(v, str) else json.dumps(v)}


def otlp_span(
    span_id: str, attributes: dict[str, Any], *, parent: str = "", start: int = 0, **extra: Any
) -> dict[str, Any]:
    return {
        "traceId": TRACE,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": extra.pop("name", "span"),
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + extra.pop("length", 10)),
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
        **extra,
    }


def otlp_file(tmp_path: Path, *spans: dict[str, Any]) -> Path:
    path = tmp_path / "spans.jsonl"
    line = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}
    path.write_text(json.dumps(line) + "\n")
    return path


def read(path: Path) -> list[Transcript | InputError]:
    return list(TraceFile(path, IDENTITY, tolerant=True))


def calls(item: Transcript | InputError) -> list[tuple[Any, ...]]:
    assert isinstance(item, Transcript), item
    return [
        (a.name, a.arguments, a.call_id, a.observation.error if a.observation else None) for a in item.rollout.actions
    ]


def test_otlp_values_and_flattened_keys() -> None:
    assert any_value({"intValue": "-5"}, "v") == -5
    assert any_value({"kvlistValue": {"values": [{"key": "a", "value": {"boolValue": True}}]}}, "v") == {"a": True}
    flat = {"p.1.message.role": "tool", "p.0.message.tool_calls.0.tool_call.id": "c1", "p.99999999.x": 1}
    assert unflatten(flat, "p") == [
        {"message": {"tool_calls": [{"tool_call": {"id": "c1"}}]}},
        {"message": {"role": "tool"}},
    ]


def test_legacy_genai_prompt_attributes_and_pydantic_ai_tool_spans(tmp_path: Path) -> None:
    """gen_ai.prompt.N / gen_ai.completion.N, and tool spans with tool_arguments / tool_response, no call id."""
    chat = {
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": "weather?",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.tool_calls.0.id": "c1",
        "gen_ai.completion.0.tool_calls.0.name": "weather",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Oslo"}',
        "gen_ai.completion.0.tool_calls.1.id": "c2",
        "gen_ai.completion.0.tool_calls.1.name": "weather",
        "gen_ai.completion.0.tool_calls.1.arguments": '{"city": "Rome"}',
    }
    first = {"gen_ai.tool.name": "weather", "tool_arguments": '{"city": "Oslo"}', "tool_response": "cold"}
    second = {"gen_ai.tool.name": "weather", "tool_arguments": '{"city": "Rome"}', "error.type": "ValueError"}
    path = otlp_file(
        tmp_path,
        otlp_span("a" * 16, chat, start=1),
        otlp_span("b" * 16, first, start=5),
        otlp_span("c" * 16, second, start=6, status={"code": 2, "message": "no such city"}),
    )
    [found] = read(path)
    assert calls(found) == [("weather", {"city": "Oslo"}, "c1", None), ("weather", {"city": "Rome"}, "c2", True)]
    assert isinstance(found, Transcript)
    assert found.rollout.actions[1].observation.content == "no such city"  # type: ignore[union-attr]
    assert found.rollout.task_id == TRACE  # no conversation attribute: the trace id


def test_mlflow_spans(tmp_path: Path) -> None:
    llm = {
        "mlflow.spanType": '"CHAT_MODEL"',
        "mlflow.spanInputs": json.dumps({"messages": [{"role": "user", "content": "hi"}]}),
        "mlflow.spanOutputs": json.dumps(
            {
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "tool_calls": [
                                {"id": "t1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
                            ],
                        }
                    }
                ]
            }
        ),
        "mlflow.trace.session": "s-1",
        "session.id": "task-9",
    }
    tool = {"mlflow.spanType": '"TOOL"', "mlflow.spanInputs": '{"a": 1}', "mlflow.spanOutputs": "2"}
    path = otlp_file(tmp_path, otlp_span("a" * 16, llm, start=1), otlp_span("b" * 16, tool, start=3, name="add"))
    [found] = read(path)
    assert calls(found) == [("add", {"a": 1}, "t1", None)]
    assert isinstance(found, Transcript) and found.rollout.task_id == "task-9"


def test_tool_spans_no_model_call_names_are_calls_parallel_when_they_overlap(tmp_path: Path) -> None:
    """CrewAI-like traces: tool spans only, no call ids; two overlapping under one parent are one message."""

    def tool(span_id: str, start: int, city: str) -> dict[str, Any]:
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "weather",
            "gen_ai.tool.call.arguments": json.dumps({"city": city}),
        }
        return otlp_span(span_id, attrs, parent="f" * 16, start=start, length=10)

    root = otlp_span("f" * 16, {"gen_ai.conversation.id": "conv-1"}, start=0, length=100)
    path = otlp_file(tmp_path, root, tool("a" * 16, 1, "Oslo"), tool("b" * 16, 5, "Rome"), tool("c" * 16, 50, "Bern"))
    [found] = read(path)
    assert [c[1]["city"] for c in calls(found)] == ["Oslo", "Rome", "Bern"]
    assert isinstance(found, Transcript) and found.rollout.task_id == "conv-1"
    said = [m for m in found.rollout.transcript if m.get("tool_calls")]
    assert [len(m["tool_calls"]) for m in said] == [2, 1]


def test_cycles_in_parent_links_end(tmp_path: Path) -> None:
    attrs = {"gen_ai.tool.name": "t", "gen_ai.tool.call.arguments": "{}", "session.id": "loop"}
    path = otlp_file(
        tmp_path, otlp_span("a" * 16, attrs, parent="b" * 16), otlp_span("b" * 16, attrs, parent="a" * 16, start=1)
    )
    [found] = read(path)
    assert isinstance(found, Transcript) and found.rollout.task_id == "loop" and len(found.rollout.actions) == 2


def test_langsmith_run_tree(tmp_path: Path) -> None:
    ai = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {"content": "", "tool_calls": [{"name": "add", "args": {"a": 1}, "id": "call_1"}]},
    }
    tree = {
        "id": "r0",
        "trace_id": "r0",
        "run_type": "chain",
        "name": "agent",
        "inputs": {},
        "outputs": {},
        "start_time": "2026-01-01T00:00:00",
        "extra": {"metadata": {"task_id": "ls-1", "passed": True}},
        "child_runs": [
            {
                "id": "r1",
                "run_type": "llm",
                "name": "ChatOpenAI",
                "start_time": "2026-01-01T00:00:01",
                "inputs": {"messages": [[{"lc": 1, "id": ["HumanMessage"], "kwargs": {"content": "add"}}]]},
                "outputs": {"generations": [[{"message": ai}]]},
            },
            {
                "id": "r2",
                "run_type": "tool",
                "name": "add",
                "start_time": "2026-01-01T00:00:02",
                "inputs": {"input": '{"a": 1}'},
                "outputs": None,
                "error": "ValueError: b is required",
            },
        ],
    }
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(tree) + "\n")
    identity = TraceIdentity(IDENTITY.identity, success_field="metadata.passed")
    [found] = list(TraceFile(path, identity, tolerant=True))
    assert calls(found) == [("add", {"a": 1}, "call_1", True)]
    assert isinstance(found, Transcript) and (found.rollout.task_id, found.rollout.success) == ("ls-1", 1)
    assert not found.rollout.success_absent
    # Without --success-field the trace's Y is absent (not 0), and the rollout says so, so replay scores it.
    [bare] = list(TraceFile(path, IDENTITY, tolerant=True))
    assert isinstance(bare, Transcript) and (bare.rollout.success, bare.rollout.success_absent) == (None, True)
    assert "success_given" not in bare.rollout.metadata


def test_agents_sdk_bad_item_loses_only_itself(tmp_path: Path) -> None:
    good = (Path(__file__).resolve().parents[1] / "data" / "traces" / "agents-sdk.jsonl").read_text().splitlines()
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join([*good[:3], '{"object": "trace.span", "id": 5}', *good[3:]]) + "\n")
    found = read(path)
    errors = [f for f in found if isinstance(f, InputError)]
    assert len(errors) == 1 and errors[0].line == 4 and errors[0].field == "trace_id"
    assert len(found) == 8


def _spans(count: int, trace: str) -> list[Span]:
    return [Span(trace, f"s{i}", None, i, "other", "w", line=i) for i in range(count)]


def test_grouping_spills_to_disk_and_bounds_a_trace() -> None:
    items = [s for k in range(30) for s in _spans(4, f"t{k}")] + _spans(100, "big")
    found = list(traces(items, "f", held=10, per_trace=50))
    whole = [t for t in found if isinstance(t, Trace)]
    assert sorted(t.trace_id for t in whole) == sorted(f"t{k}" for k in range(30))
    assert all(len(t.spans) == 4 for t in whole)
    [error] = [t for t in found if isinstance(t, InputError)]
    assert "100 spans, more than 50" in error.message
    in_memory = list(traces(items, "f", per_trace=50))
    assert [t.trace_id for t in in_memory if isinstance(t, Trace)] == [f"t{k}" for k in range(30)]


def test_a_trace_of_several_conversations_is_one_rollout_each(tmp_path: Path) -> None:
    """A batch root naming no conversation, over two agent runs that each name theirs; a root naming one keeps its
    runs together (the outermost conversation wins)."""

    def run(root: str, conversation: str, start: int, parent: str = "") -> list[dict[str, Any]]:
        call = {"gen_ai.tool.name": "t", "gen_ai.tool.call.arguments": "{}"}
        return [
            otlp_span(root, {"gen_ai.conversation.id": conversation}, parent=parent, start=start),
            otlp_span(root[:-1] + "1", call, parent=root, start=start + 1),
        ]

    batch = otlp_span("f" * 16, {"job": "nightly"})
    path = otlp_file(
        tmp_path, batch, *run("a" * 15 + "0", "conv-a", 1, "f" * 16), *run("b" * 15 + "0", "conv-b", 5, "f" * 16)
    )
    found = read(path)
    assert [f.rollout.task_id for f in found if isinstance(f, Transcript)] == ["conv-a", "conv-b"]
    wrapped = otlp_span("f" * 16, {"gen_ai.conversation.id": "outer"})
    path = otlp_file(
        tmp_path, wrapped, *run("a" * 15 + "0", "conv-a", 1, "f" * 16), *run("b" * 15 + "0", "conv-b", 5, "f" * 16)
    )
    [one] = read(path)
    assert isinstance(one, Transcript) and one.rollout.task_id == "outer" and len(one.rollout.actions) == 2
