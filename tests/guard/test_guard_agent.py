"""An agent loop through the guard: a model behind the official ``openai`` client (the scripted OpenAI-compatible
server of tests/fakes, a real HTTP server on loopback) chooses tool calls; the official MCP client runs them
through ``prefix-exec guard`` in front of an SDK server, the way agent frameworks (the OpenAI Agents SDK's
``MCPServerStdio``, LangGraph's MCP adapters) connect a model to MCP tools. The model first appends to a note
id it made up, reads the block (no earlier call returned that id: call create_note first) and recovers. The
recorded connection replays offline to the same FED and labels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest
from guard_client import NOTES_SERVER, connected, guard_params, outcomes, read_jsonl, replayed, text_of

from fakes.openai_server import ScriptedServer, text_message, tool_message

pytestmark = pytest.mark.slow

# The ids come from the server's own results: create_note's structured result feeds produces.
SIDE = "tools:\n  create_note: {produces: {note: note_id}}\n  append_note: {refs: {note_id: note}}\n"


def respond(request: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: append to a note id it made up (blocked), then create, then append to the id the
    result gave."""
    tools = [m for m in request["messages"] if m["role"] == "tool"]
    if not tools:
        return tool_message([("append_note", {"note_id": "N-1", "text": "draft"})])
    last = tools[-1]["content"]
    if "prefix-exec guard did not run" in last:
        return tool_message([("create_note", {"text": "shopping list"})])
    if '"note_id"' in last and len(tools) == 2:
        return tool_message([("append_note", {"note_id": json.loads(last)["note_id"], "text": ": milk"})])
    return text_message("Done: the note holds the shopping list and milk.")


async def agent(base_url: str, params: Any, task: str) -> list[dict[str, Any]]:
    """The loop: the model's tool calls go to the MCP server through the guard until it answers in text."""
    model = openai.AsyncOpenAI(base_url=base_url, api_key="not-a-key", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    async with connected(params) as session:
        listed = (await session.list_tools()).tools
        tools = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema},
            }
            for t in listed
        ]
        for _ in range(8):
            answer = (
                (await model.chat.completions.create(model="scripted", messages=messages, tools=tools))
                .choices[0]
                .message
            )  # type: ignore[arg-type]
            messages.append(answer.model_dump(exclude_none=True))
            if not answer.tool_calls:
                break
            for call in answer.tool_calls:
                result = await session.call_tool(call.function.name, json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text_of(result)})
    await model.close()
    return messages


def test_an_agent_recovers_from_a_block_and_its_connection_replays(tmp_path: Path) -> None:
    side = tmp_path / "side.yaml"
    side.write_text(SIDE)
    record = tmp_path / "record"
    params = guard_params(["--hooks", str(side), "--record", str(record)], NOTES_SERVER)
    with ScriptedServer(respond) as server:

        async def run() -> list[dict[str, Any]]:
            with anyio.fail_after(120):
                return await agent(server.base_url, params, "Start a shopping list note and add milk.")

        messages = anyio.run(run)
    replies = [m["content"] for m in messages if m["role"] == "tool"]
    assert len(replies) == 3 and replies[0].startswith("prefix-exec guard did not run append_note: dependency: ")
    assert "call create_note first and pass the note it returns" in replies[0]
    assert json.loads(replies[2])["text"] == "shopping list: milk"
    assert messages[-1]["content"].startswith("Done")
    row = read_jsonl(record / "records.jsonl")[0]
    assert (row["T"], row["fed"], row["label"], row["success"]) == (3, 1, "dependency", 1)  # recovered
    assert [c["forwarded"] for c in row["metadata"]["guard"]["calls"]] == [False, True, True]
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")
