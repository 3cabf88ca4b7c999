"""inspect_ai's own agent loop, ``react()``, through the guard: its MCP tools (``mcp_server_stdio`` with
``prefix-exec guard`` as the command) in front of an SDK server, the model the tests' scripted OpenAI-compatible
server (``openai-api/scripted/...``, a real HTTP server on loopback). The model appends to a note id it made up;
the block reaches it as a tool result, it recovers, and submits. The recorded connection replays offline to the
same FED (issue 44)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from guard_client import NOTES_SERVER, outcomes, read_jsonl, replayed

from fakes.openai_server import ScriptedServer, tool_message

pytestmark = pytest.mark.slow
inspect_ai = pytest.importorskip("inspect_ai", reason="the [inspect] extra")

SIDE = "tools:\n  create_note: {produces: {note: note_id}}\n  append_note: {refs: {note_id: note}}\n"


def text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def respond(request: dict[str, Any]) -> dict[str, Any]:
    """Append to a made-up id (blocked), create a note, append to the id its result gave, submit."""
    results = [text(m.get("content")) for m in request["messages"] if m["role"] == "tool"]
    if not results:
        return tool_message([("append_note", {"note_id": "N-1", "text": "draft"})])
    if len(results) == 1:
        return tool_message([("create_note", {"text": "shopping list"})])
    if len(results) == 2:
        return tool_message([("append_note", {"note_id": json.loads(results[1])["note_id"], "text": ": milk"})])
    return tool_message([("submit", {"answer": "done"})])


def test_inspect_react_gets_the_block_as_a_tool_result_and_the_session_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.agent import react
    from inspect_ai.dataset import Sample
    from inspect_ai.tool import mcp_server_stdio, mcp_tools

    side = tmp_path / "side.yaml"
    side.write_text(SIDE)
    record = tmp_path / "record"
    args = ["-m", "prefix_exec", "guard", "--hooks", str(side), "--record", str(record), "--", *NOTES_SERVER]
    server = mcp_server_stdio(command=sys.executable, args=args, env=dict(os.environ))
    with ScriptedServer(respond) as model:
        monkeypatch.setenv("SCRIPTED_BASE_URL", model.base_url)
        monkeypatch.setenv("SCRIPTED_API_KEY", "not-a-key")
        task = Task(
            dataset=[Sample(input="Start a shopping list note and add milk.")], solver=react(tools=[mcp_tools(server)])
        )
        (log,) = eval(task, model="openai-api/scripted/scripted", log_dir=str(tmp_path / "logs"), display="none")
        requests = model.requests
    assert log.status == "success", log.error
    results = [text(m.get("content")) for m in requests[-1]["messages"] if m["role"] == "tool"]
    # The block reached the model as the tool's result (inspect marks a tool error "Error: ").
    assert results[0].startswith("Error: prefix-exec guard did not run append_note: dependency: ")
    assert json.loads(results[2])["text"] == "shopping list: milk"
    (row,) = read_jsonl(record / "records.jsonl")
    assert (row["T"], row["fed"], row["label"], row["success"]) == (3, 1, "dependency", 1)
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")
