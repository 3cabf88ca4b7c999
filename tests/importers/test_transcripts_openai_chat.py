"""OpenAI-format conversations read as rollouts: actions, turns, replies, identity fields, bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prefix_exec.errors import InputError
from prefix_exec.importers.transcripts import Identity, lookup
from prefix_exec.importers.transcripts import transcript_of as conversation_of
from prefix_exec.trajectory import Observation

IDENTITY = Identity({}, {}, {"method": "default", "trial": 0, "dataset": "d"})


def convo(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"task_id": "t1", "model": "m", "success": 1, "messages": list(messages), **fields}


def call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_actions_turns_and_replies() -> None:
    data = convo(
        {"role": "system", "content": "s"},
        {"role": "assistant", "tool_calls": [call("a", "early", "{}")]},  # before any user message: turn 0
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "tool_calls": [call("b", "f", '{"x": 1}'), call("c", "g", '{"y": [2]}')]},
        {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "g done"}]},
        {"role": "tool", "tool_call_id": "b", "content": "f done"},
        {"role": "user", "content": "second"},
        {"role": "user", "content": "third"},
        {"role": "assistant", "content": None, "function_call": {"name": "legacy", "arguments": '{"z": true}'}},
        {"role": "function", "name": "legacy", "content": "legacy done"},
        {"role": "assistant", "tool_calls": [call("d", "unanswered", {"already": "parsed"})]},
    )
    actions = conversation_of(data, IDENTITY, path="x.jsonl", line=1).rollout.actions
    assert [(a.name, dict(a.arguments), a.turn, a.call_id) for a in actions] == [
        ("early", {}, 0, "a"),
        ("f", {"x": 1}, 0, "b"),
        ("g", {"y": [2]}, 0, "c"),
        ("legacy", {"z": True}, 2, None),
        ("unanswered", {"already": "parsed"}, 2, "d"),
    ]
    assert [a.observation for a in actions] == [
        Observation("ok"),
        Observation("f done"),
        Observation([{"type": "text", "text": "g done"}]),
        Observation("legacy done"),
        None,
    ]
    assert all(a.parse_error is None for a in actions)


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [('{"x": ', "arguments are not JSON"), ("[1, 2]", "must be a JSON object, got list"), ("3", "got int")],
)
def test_arguments_that_are_no_json_object_are_the_models_error(arguments: str, fragment: str) -> None:
    data = convo({"role": "assistant", "tool_calls": [call("a", "f", arguments)]})
    (action,) = conversation_of(data, IDENTITY, path="x.jsonl").rollout.actions
    assert action.parse_error is not None
    assert fragment in action.parse_error
    assert action.raw == arguments
    assert action.arguments == {}


def test_identity_from_named_paths_fixed_values_and_defaults() -> None:
    data = {"messages": [], "id": "conv-1", "meta": {"runs": [{"ok": True}], "agent": "react"}, "model": "m"}
    identity = Identity(
        {"success": "meta.runs.0.ok", "method": "meta.agent"}, {"model": "fixed"}, {"trial": 0, "dataset": "d"}
    )
    rollout = conversation_of(data, identity, path="x.jsonl").rollout
    assert rollout.key == ("d", "conv-1", "fixed", "react", 0)
    assert rollout.success == 1
    assert rollout.actions == ()
    assert lookup({"a": [{"b": None}]}, "a.0.b") == (True, None)
    assert lookup({"a": [1]}, "a.1") == (False, None)


@pytest.mark.parametrize(
    ("data", "field", "fragment"),
    [
        ([], None, "expected a conversation object"),
        ({"task_id": "t", "model": "m", "success": 1}, "messages", "missing"),
        (convo("hi"), "messages[0]", "expected a message object"),
        (convo({"role": 3}), "messages[0].role", "expected a string"),
        (convo({"role": "assistant", "tool_calls": {"id": "a"}}), "messages[0].tool_calls", "expected a list"),
        (
            convo({"role": "assistant", "tool_calls": [{"id": "a", "type": "function"}]}),
            "messages[0].tool_calls[0].function",
            "name and arguments",
        ),
        (
            convo({"role": "assistant", "tool_calls": [call("a", "", "{}")]}),
            "messages[0].tool_calls[0].function.name",
            "needs a name",
        ),
        (  # two calls waiting with one id: the reply could answer either
            convo(
                {"role": "assistant", "tool_calls": [call("a", "f", "{}"), call("a", "g", "{}")]},
                {"role": "tool", "tool_call_id": "a", "content": "x"},
            ),
            "messages[1].tool_call_id",
            "could answer 2 calls with the id 'a'",
        ),
        (
            convo({"role": "assistant", "tool_calls": [call(7, "f", "{}")]}),
            "messages[0].tool_calls[0].id",
            "must be a string or absent",
        ),
        (
            convo({"role": "tool", "tool_call_id": "zz", "content": "x"}),
            "messages[0].tool_call_id",
            "no earlier tool call",
        ),
        (convo({"role": "function", "name": "f", "content": "x"}), "messages[0]", "no call without an id is waiting"),
        ({**convo(), "success": 0.5}, "success", "must be 0, 1, true or false"),
        ({**convo(), "trial": -1}, "trial", "integer >= 0"),
        ({**convo(), "task_id": ""}, "task_id", "non-empty"),
        ({k: v for k, v in convo().items() if k != "model"}, "model", "no model"),
    ],
)
def test_bad_conversations_name_the_field(data: Any, field: str | None, fragment: str) -> None:
    with pytest.raises(InputError, match=fragment) as info:
        conversation_of(data, IDENTITY, path="x.json", prefix="[4].")
    assert info.value.path == "x.json"
    assert info.value.field == (f"[4].{field}" if field else "[4]")


def test_a_named_path_must_be_present() -> None:
    identity = Identity({"task_id": "meta.task"}, {}, IDENTITY.defaults)
    with pytest.raises(InputError, match="missing") as info:
        conversation_of(convo(), identity, path="x.jsonl", line=9)
    assert (info.value.line, info.value.field) == (9, "meta.task")
    assert "--task-id-field" in (info.value.hint or "")


names = st.sampled_from(["login", "search", "get_ticket", "close"])
arguments = st.dictionaries(st.text(min_size=1, max_size=5), st.one_of(st.integers(), st.text(max_size=5)), max_size=3)


@given(st.lists(st.tuples(st.integers(0, 3), names, arguments), max_size=8))
def test_export_and_read_back_keep_every_call_in_order(calls: list[tuple[int, str, dict[str, Any]]]) -> None:
    """A conversation built from calls grouped by turn (sorted) reads back as exactly those calls."""
    calls = sorted(calls, key=lambda c: c[0])
    messages: list[dict[str, Any]] = []
    turn = -1
    for n, (want_turn, name, args) in enumerate(calls):
        while turn < want_turn:
            messages.append({"role": "user", "content": f"turn {turn + 1}"})
            turn += 1
        messages.append({"role": "assistant", "tool_calls": [call(f"c{n}", name, json.dumps(args))]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": str(n)})
    actions = conversation_of(convo(*messages), IDENTITY, path="x.jsonl").rollout.actions
    assert [(a.turn, a.name, dict(a.arguments)) for a in actions] == calls
    assert [a.observation.content if a.observation else None for a in actions] == [str(n) for n in range(len(calls))]
