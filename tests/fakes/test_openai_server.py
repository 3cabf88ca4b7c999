"""The scripted server's Responses API and faults chosen from the request (what scripts/bfcl/generate.py runs BFCL's
OpenAI handler against), through the openai client."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from fakes.openai_server import ScriptedServer, messages_of_input, text_message, tool_message


def respond(body: dict[str, Any]) -> dict[str, Any]:
    if body["messages"][-1]["role"] == "tool":
        return text_message(f"the folder is {body['messages'][-1]['content']}")
    return tool_message([("cd", {"folder": "docs"})])


def test_a_responses_conversation_round_trips() -> None:
    with ScriptedServer(respond) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="not-a-key", max_retries=0)
        first = client.responses.create(model="m", input=[{"role": "user", "content": "go to docs"}])
        (call,) = first.output
        assert (call.type, call.name, call.arguments, call.call_id) == (
            "function_call",
            "cd",
            '{"folder": "docs"}',
            "call_0_cd",
        )
        assert first.usage is not None and first.usage.input_tokens > 0
        history = [
            {"role": "user", "content": "go to docs"},
            *first.output,  # as BFCL's handler sends the output back
            {"type": "function_call_output", "call_id": call.call_id, "output": "docs"},
        ]
        second = client.responses.create(model="m", input=history)
        assert second.output_text == "the folder is docs"
    assert messages_of_input(server.requests[1]["input"]) == [
        {"role": "user", "content": "go to docs"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0_cd", "type": "function", "function": {"name": "cd", "arguments": '{"folder": "docs"}'}}
        ]},
        {"role": "tool", "tool_call_id": "call_0_cd", "content": "docs"},
    ]  # fmt: skip


def test_input_items_as_messages() -> None:
    assert messages_of_input("hi") == [{"role": "user", "content": "hi"}]
    items = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be brief"}]},
        {"type": "reasoning", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "looking"}]},
        {"type": "function_call", "call_id": "a", "name": "ls", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "pwd", "arguments": "{}"},
    ]
    messages = messages_of_input(items)
    assert [m["role"] for m in messages] == ["developer", "assistant"]
    assert messages[0]["content"] == "be brief"
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["a", "b"] and messages[1]["content"] == "looking"


def test_a_fault_on_the_responses_api_meets_every_retry() -> None:
    """``fault_of`` sees the Responses API request as it came (``input``), and the openai client's retry of it
    meets the same fault."""

    def fault_of(body: dict[str, Any]) -> str | None:
        return "500" if "crash" in str(body.get("input")) else None

    with ScriptedServer(respond, fault_of=fault_of) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="not-a-key", max_retries=1)
        with pytest.raises(openai.InternalServerError, match="Error code: 500"):
            client.responses.create(model="m", input="crash now")
        assert client.responses.create(model="m", input="fine").output[0].type == "function_call"
    assert server.statuses == [500, 500, 200]  # the retry met the same fault
