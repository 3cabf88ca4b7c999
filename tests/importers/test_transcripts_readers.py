"""Each transcript reader's own fields: Anthropic blocks and flags, LangChain's invalid calls and status,
Responses items and MCP calls, tau-bench's reward."""

from __future__ import annotations

from typing import Any

import pytest
from test_transcripts import IDENTITY, chat, openai_call, result, use

from prefix_exec.errors import InputError
from prefix_exec.importers.transcripts import READERS, transcript_of
from prefix_exec.trajectory import Observation


def test_anthropic_results_flags_turns_and_system() -> None:
    record = chat(
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "..."}, use("a", x=1), use("b")]},
        {"role": "user", "content": [result("b", "no", is_error=True), result("a", [{"type": "text", "text": "1"}])]},
        {"role": "assistant", "content": [use("c")]},
        {"role": "user", "content": [result("c", "ok", is_error=False), {"type": "text", "text": "second"}]},
        {"role": "assistant", "content": [use("d", y="z")]},
        system=[{"type": "text", "text": "be brief"}],
    )
    rollout = transcript_of(record, IDENTITY, path="t.jsonl").rollout
    assert [(a.name, a.call_id, dict(a.arguments), a.turn) for a in rollout.actions] == [
        ("f", "a", {"x": 1}, 0),
        ("f", "b", {}, 0),
        ("f", "c", {}, 0),  # a user message of results alone is no new turn
        ("f", "d", {"y": "z"}, 1),  # the text after the result is
    ]
    assert [a.observation for a in rollout.actions] == [
        Observation([{"type": "text", "text": "1"}], None),
        Observation("no", True),
        Observation("ok", False),
        None,
    ]
    assert rollout.transcript is not None and rollout.transcript[0]["role"] == "system"


@pytest.mark.parametrize(
    ("message", "field", "fragment"),
    [
        ({"role": "assistant", "content": [{"type": "server_tool_use", "id": "s"}]}, "content[0].type", "server-side"),
        ({"role": "user", "content": [use("a")]}, "content[0].type", "only the assistant calls"),
        ({"role": "assistant", "content": [result("a")]}, "content[0].type", "results come as user"),
        ({"role": "user", "content": [result("a", is_error="yes")]}, "content[0].is_error", "true or false"),
        ({"role": "assistant", "content": [{**use("a"), "name": ""}]}, "content[0].name", "non-empty string"),
        ({"role": "assistant", "content": 5}, "content", "a string or a list of blocks"),
    ],
)
def test_anthropic_errors_name_the_block(message: dict[str, Any], field: str, fragment: str) -> None:
    with pytest.raises(InputError, match=fragment) as info:
        transcript_of(chat(message), IDENTITY, path="t.jsonl", reader=READERS["anthropic"])
    assert info.value.field == f"messages[0].{field}"


def lc(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "data": {"content": "", **data}}


def test_langchain_invalid_calls_status_chunks_and_model_order() -> None:
    record = chat(
        lc("human", content="hi"),
        lc(
            "AIMessageChunk",
            tool_calls=[{"name": "f", "args": {"x": 1}, "id": "b", "type": "tool_call"}],
            invalid_tool_calls=[{"name": "g", "args": '{"x": ', "id": "a", "error": "bad JSON", "type": "x"}],
            additional_kwargs={"tool_calls": [openai_call("a", "g"), openai_call("b", "f")]},
        ),
        lc("tool", content="done", tool_call_id="b", status="success"),
        lc("tool", content="boom", tool_call_id="a", status="error"),
        lc("ai", additional_kwargs={"tool_calls": [openai_call("c", "h")]}),  # before tool_calls existed
        lc("chat", content="hm", role="user"),
        lc("ai", invalid_tool_calls=[{"name": None, "args": "[1, 2]", "id": None, "error": None}]),
    )
    actions = transcript_of(record, IDENTITY, path="t.jsonl").rollout.actions
    assert [(a.name, a.call_id, a.turn, a.parse_error) for a in actions] == [
        ("g", "a", 0, "LangChain could not parse the call: bad JSON"),
        ("f", "b", 0, None),
        ("h", "c", 0, None),
        ("<unparsed>", None, 1, "LangChain could not parse the call"),
    ]
    assert actions[0].raw == '{"x": '
    assert [a.observation for a in actions[:2]] == [Observation("boom", True), Observation("done", False)]


@pytest.mark.parametrize(
    ("message", "field", "fragment"),
    [
        ({"type": "robot", "data": {}}, "type", "not a LangChain message type"),
        (lc("tool", tool_call_id="a", status="failed"), "data.status", "'success' or 'error'"),
        (lc("ai", tool_calls=[{"args": {}}]), "data.tool_calls[0].name", "non-empty string"),
        (lc("chat"), "data.role", "non-empty string"),
    ],
)
def test_langchain_errors_name_the_field(message: dict[str, Any], field: str, fragment: str) -> None:
    record = chat(lc("human", content="x"), message)
    with pytest.raises(InputError, match=fragment) as info:
        transcript_of(record, IDENTITY, path="t.jsonl", reader=READERS["langchain"])
    assert info.value.field == f"messages[1].{field}"


def test_responses_items_mcp_calls_and_skipped_items() -> None:
    record = {
        "task_id": "t",
        "success": 0,
        "input": "book it",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}', "id": "fc_1"},
            {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "ok"}]},
            {"type": "mcp_call", "id": "m1", "name": "g", "arguments": "{}", "output": None, "error": "denied"},
            {"type": "mcp_call", "id": "m2", "name": "g", "arguments": "[]", "output": "fine", "error": None},
            {"role": "user", "content": "again"},
            {"type": "function_call", "call_id": "c2", "name": "h", "arguments": ""},
        ],
    }
    actions = transcript_of(record, IDENTITY, path="t.jsonl").rollout.actions
    assert [(a.name, a.call_id, a.turn, a.parse_error) for a in actions] == [
        ("f", "c1", 0, None),
        ("g", "m1", 0, None),
        ("g", "m2", 0, "arguments must be a JSON object, got list"),
        ("h", "c2", 1, None),
    ]
    assert [a.observation for a in actions] == [
        Observation([{"type": "input_text", "text": "ok"}], None),
        Observation("denied", True),
        Observation("fine", False),
        None,
    ]


@pytest.mark.parametrize(
    ("item", "field", "fragment"),
    [
        ({"type": "web_search_call", "id": "w"}, "output[0].type", "only function calls"),
        ({"type": "function_call", "name": "f", "arguments": "{}"}, "output[0].call_id", "non-empty string"),
        ({"type": 3}, "output[0].type", "expected a string"),
        ("text", "output[0]", "expected an item object"),
    ],
)
def test_responses_errors_name_the_item(item: Any, field: str, fragment: str) -> None:
    record = {"task_id": "t", "success": 1, "output": [item]}
    with pytest.raises(InputError, match=fragment) as info:
        transcript_of(record, IDENTITY, path="t.jsonl", reader=READERS["openai-responses"])
    assert info.value.field == field


def test_tau_bench_y_is_the_reward_by_the_tau_rule() -> None:
    base = {"task_id": 3, "trial": 2, "info": {}, "traj": [{"role": "user", "content": "hi"}]}
    for reward, y in ((1.0, 1), (0.0, 0), (0.9999999999, 1), (0.5, 0)):
        rollout = transcript_of({**base, "reward": reward}, IDENTITY, path="r.json").rollout
        assert (rollout.task_id, rollout.trial, rollout.success) == ("3", 2, y)
        assert rollout.metadata["reward"] == reward
    with pytest.raises(InputError, match="a reward must be a finite number") as info:
        transcript_of({**base, "reward": "high"}, IDENTITY, path="r.json", prefix="[7].")
    assert info.value.field == "[7].success"
