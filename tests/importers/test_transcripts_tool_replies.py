"""Chat tool messages as harnesses write them: errors beside the content, calls and replies without ids."""

from __future__ import annotations

from typing import Any

import pytest

from prefix_exec.envs.custom.evidence import refusal
from prefix_exec.errors import InputError
from prefix_exec.importers.transcripts import Identity
from prefix_exec.importers.transcripts import transcript_of as conversation_of
from prefix_exec.trajectory import FailureLabel, Observation, ToolCall

IDENTITY = Identity({}, {}, {"method": "default", "trial": 0, "dataset": "d"})


def convo(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"task_id": "t1", "model": "m", "success": 0, "messages": list(messages)}


def call(call_id: str | None, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def actions(*messages: dict[str, Any]) -> tuple[ToolCall, ...]:
    return conversation_of(convo(*messages), IDENTITY, path="x.jsonl", line=3).rollout.actions


def one_reply(**reply: Any) -> Observation | None:
    found = actions(
        {"role": "assistant", "tool_calls": [call("a", "f", {})]}, {"role": "tool", "tool_call_id": "a", **reply}
    )
    return found[0].observation


@pytest.mark.parametrize(
    ("reply", "observation"),
    [
        # AgentDojo / Invariant: the exception in `error`, the content empty: a refusal, never an empty result
        (
            {"content": "", "error": "ValueError: Channel does not exist!"},
            Observation("ValueError: Channel does not exist!", True),
        ),
        ({"content": "partial", "error": "TimeoutError: late"}, Observation("TimeoutError: late\npartial", True)),
        ({"content": "", "error": True}, Observation("", True)),
        ({"content": "", "error": {"type": "KeyError", "message": "'x'"}}, Observation("KeyError: 'x'", True)),
        ({"content": None, "error": {"code": 7}}, Observation('{"code": 7}', True)),
        ({"content": "ok", "error": None}, Observation("ok", None)),
        ({"content": "ok", "error": ""}, Observation("ok", None)),
        ({"content": "ok", "error": False}, Observation("ok", False)),
        ({"content": "boom", "is_error": True}, Observation("boom", True)),
        ({"content": "fine", "is_error": False}, Observation("fine", False)),
        ({"content": "boom", "status": "error"}, Observation("boom", True)),
        ({"content": "fine", "status": "success"}, Observation("fine", False)),
        ({"content": "fine", "status": "pending"}, Observation("fine", None)),
    ],
)
def test_errors_where_harnesses_put_them(reply: dict[str, Any], observation: Observation) -> None:
    assert one_reply(**reply) == observation


def test_an_error_field_is_classified_by_its_exception() -> None:
    observation = one_reply(content="", error="TypeError: send() got an unexpected keyword argument 'to'")
    found = refusal(observation)
    assert found is not None
    assert (found.by, found.error_type, found.label) == ("flag", "TypeError", FailureLabel.SCHEMA)
    empty_search = refusal(one_reply(content="", error="ValueError: No emails found. Try with a different query."))
    assert empty_search is not None
    assert (empty_search.label, empty_search.rule) == (FailureLabel.DEPENDENCY, "nothing found")


def test_a_bad_is_error_names_the_field() -> None:
    with pytest.raises(InputError, match="is_error must be true or false") as info:
        one_reply(content="x", is_error="yes")
    assert info.value.field == "messages[1].is_error"


def test_calls_and_replies_without_ids_pair_in_order() -> None:
    # Cohere / Gemini: id "" on calls, tool_call_id null on replies, replies in call order, each echoing its call
    found = actions(
        {"role": "assistant", "tool_calls": [call("", "f", {"x": 1}), call("", "g", {"y": 2})]},
        {"role": "tool", "tool_call_id": None, "content": "f done", "tool_call": {"function": "f", "args": {"x": 1}}},
        {"role": "tool", "tool_call_id": None, "content": "g done", "tool_call": {"function": "g", "args": {"y": 2}}},
        {"role": "assistant", "tool_calls": [call(None, "h", "{}")]},
        {"role": "tool", "content": "h done"},  # no id, no echo: the oldest waiting call
    )
    assert [(a.name, a.call_id, a.observation) for a in found] == [
        ("f", None, Observation("f done")),
        ("g", None, Observation("g done")),
        ("h", None, Observation("h done")),
    ]


def test_an_echo_out_of_order_answers_the_call_it_names() -> None:
    found = actions(
        {"role": "assistant", "tool_calls": [call("", "f", {}), call("", "g", {})]},
        {"role": "tool", "tool_call_id": "", "content": "g done", "tool_call": {"function": "g", "args": {}}},
        {"role": "tool", "tool_call_id": "", "content": "f done", "tool_call": call("", "f", "{}")},
    )
    assert [a.observation for a in found] == [Observation("f done"), Observation("g done")]


@pytest.mark.parametrize(
    ("messages", "field", "fragment"),
    [
        (  # the echo names no waiting call
            [
                {"role": "assistant", "tool_calls": [call("", "f", {})]},
                {"role": "tool", "tool_call_id": None, "content": "x", "tool_call": {"function": "zz", "args": {}}},
            ],
            "messages[1]",
            "echoes a call of 'zz', which none of the calls waiting",
        ),
        (  # two waiting calls alike, neither the oldest: which one is unknown
            [
                {"role": "assistant", "tool_calls": [call("", "f", {}), call("", "g", {}), call("", "g", {})]},
                {"role": "tool", "tool_call_id": None, "content": "x", "tool_call": {"function": "g", "args": {}}},
            ],
            "messages[1]",
            "which 2 of the calls waiting",
        ),
        (  # a reply without an id while only calls with ids wait
            [
                {"role": "assistant", "tool_calls": [call("a", "f", {})]},
                {"role": "tool", "tool_call_id": None, "content": "x"},
            ],
            "messages[1]",
            r"no call without an id is waiting for one \(1 call with an id is\)",
        ),
        (  # a reply without an id before any call
            [{"role": "tool", "tool_call_id": "", "content": "x"}],
            "messages[0]",
            "no call without an id is waiting",
        ),
    ],
)
def test_ambiguous_pairing_is_an_error(messages: list[dict[str, Any]], field: str, fragment: str) -> None:
    with pytest.raises(InputError, match=fragment) as info:
        actions(*messages)
    assert (info.value.path, info.value.line, info.value.field) == ("x.jsonl", 3, field)


def test_agentdojo_call_form() -> None:
    found = actions(
        {"role": "assistant", "tool_calls": [{"function": "send", "args": {"to": "a"}, "id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "", "error": "ValueError: no"},
    )
    assert [(a.name, dict(a.arguments), a.observation) for a in found] == [
        ("send", {"to": "a"}, Observation("ValueError: no", True))
    ]


def test_a_composite_task_id_joins_its_paths() -> None:
    data = {**convo(), "metadata": {"suite_name": "slack", "name": "user_task_3[without attack]", "n": 4}}
    composite = Identity({"task_id": "metadata.suite_name, metadata.name"}, {}, IDENTITY.defaults)
    rollout = conversation_of(data, composite, path="x.jsonl", line=1).rollout
    assert rollout.task_id == "slack/user_task_3[without attack]"
    numbered = Identity({"task_id": "metadata.suite_name,metadata.n"}, {}, IDENTITY.defaults)
    assert conversation_of(data, numbered, path="x.jsonl", line=1).rollout.task_id == "slack/4"
    missing = Identity({"task_id": "metadata.suite_name,metadata.nope"}, {}, IDENTITY.defaults)
    with pytest.raises(InputError, match="missing") as info:
        conversation_of(data, missing, path="x.jsonl", line=1)
    assert info.value.field == "metadata.nope"


def test_agentdojo_text_blocks() -> None:
    # AgentDojo's own runs: content blocks {"type": "text", "content": ...}, the exception in `error`
    assert one_reply(content=[{"type": "text", "content": ""}], error="ValueError: no") == Observation(
        "ValueError: no", True
    )
    assert one_reply(content=[{"type": "text", "content": "half"}], error="KeyError: 'k'") == Observation(
        "KeyError: 'k'\nhalf", True
    )
    plain = one_reply(content=[{"type": "text", "content": "Error: user not found"}])
    found = refusal(plain)
    assert found is not None
    assert (found.by, found.text) == ("pattern", "Error: user not found")


def test_a_run_a_model_server_error_ended_is_marked_as_infrastructure() -> None:
    data = {**convo(), "error": "openai.InternalServerError: Error code: 500 - upstream connect error"}
    rollout = conversation_of(data, IDENTITY, path="x.jsonl", line=1).rollout
    assert rollout.metadata["infrastructure"] == data["error"]
    agents = {**convo(), "error": "AbortAgentError: the defense stopped the agent"}  # not the system's
    assert "infrastructure" not in conversation_of(agents, IDENTITY, path="x.jsonl", line=1).rollout.metadata
