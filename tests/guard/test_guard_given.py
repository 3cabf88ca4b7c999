"""What the guard hears of the conversation (issue 41, item 1): with ``--given`` (the user's prompt) a reference to
an entity the user stated is accepted by npm's ``@modelcontextprotocol/server-memory`` guard and one to an invented
entity refused; an order id the user typed into a server's elicitation form is accepted, one the user never gave
refused; a declined elicitation gives nothing. Each record replays offline to the same FED (its transcript holds
what the guard heard)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from guard_client import FAKES, guard_params, npm_server, outcomes, read_jsonl, replayed, text_of
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp import types as mcp_types

from prefix_exec.cli import main
from prefix_exec.guard.hearing import Elicitations, elicited_text, heard_transcript

pytestmark = pytest.mark.slow

MEMORY_SIDE = """
tools:
  create_entities: {produces: {entity: "entities[*].name"}}
  open_nodes: {refs: {names: entity}}
"""
ORDERS_SIDE = "tools:\n  get_order: {refs: {order_id: order}}\n"
ORDERS_SERVER = [__import__("sys").executable, str(FAKES / "mcp_orders_server.py")]


def drive(params: StdioServerParameters, script: list[tuple[str, dict[str, Any]]], answer: Any = None) -> list[Any]:
    """Call each tool in turn; ``answer`` is the user's reply to an elicitation (``None``: none is expected)."""
    seen: list[Any] = []

    async def elicit(context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        return answer

    @asynccontextmanager
    async def connected() -> AsyncIterator[ClientSession]:
        async with stdio_client(params) as (read, write), ClientSession(read, write, elicitation_callback=elicit) as s:
            await s.initialize()
            await s.list_tools()
            yield s

    async def run() -> None:
        with anyio.fail_after(120):
            async with connected() as session:
                for name, arguments in script:
                    result = await session.call_tool(name, arguments)
                    seen.append((bool(result.is_error), text_of(result)))

    anyio.run(run)
    return seen


def memory_with_alice(tmp_path: Path) -> dict[str, str]:
    """The memory server's file, holding Alice from an earlier session (the model has not seen her this time)."""
    path = tmp_path / "memory.jsonl"
    alice = {"type": "entity", "name": "Alice", "entityType": "person", "observations": ["likes tea"]}
    path.write_text(json.dumps(alice) + "\n")
    return {"MEMORY_FILE_PATH": str(path)}


def test_an_entity_the_user_stated_is_accepted_an_invented_one_refused(tmp_path: Path) -> None:
    side = tmp_path / "side.yaml"
    side.write_text(MEMORY_SIDE)
    given = tmp_path / "prompt.txt"
    given.write_text("What do you remember about my colleague Alice?\n")
    script = [("open_nodes", {"names": ["Alice"]}), ("open_nodes", {"names": ["Mallory"]})]
    record = tmp_path / "record"
    args = ["--hooks", str(side), "--given", str(given), "--record", str(record)]
    seen = drive(guard_params(args, [npm_server("mcp-server-memory")], memory_with_alice(tmp_path)), script)
    assert not seen[0][0] and "likes tea" in seen[0][1]  # the server found her
    assert seen[1][0] and "dependency" in seen[1][1] and "names[0]='Mallory'" in seen[1][1]
    (row,) = read_jsonl(record / "records.jsonl")
    assert (row["T"], row["fed"], row["label"]) == (2, 2, "dependency")
    assert "given by the conversation at message 0: names[0]='Alice'" in row["verdicts"][0]["notes"]
    assert row["metadata"]["guard"]["heard"][0]["from"] == "--given"
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")
    # Without --given nobody stated Alice: the same first call is refused.
    alone = tmp_path / "alone"
    params = guard_params(["--hooks", str(side), "--record", str(alone)], [npm_server("mcp-server-memory")])
    assert drive(params, script[:1])[0][0]
    assert outcomes(alone / "records.jsonl") == {next(iter(outcomes(alone / "records.jsonl"))): (1, 1, "dependency")}


def test_an_id_the_user_typed_into_an_elicitation_is_given(tmp_path: Path) -> None:
    side = tmp_path / "side.yaml"
    side.write_text(ORDERS_SIDE)
    record = tmp_path / "record"
    params = guard_params(["--hooks", str(side), "--record", str(record)], ORDERS_SERVER)
    accept = mcp_types.ElicitResult(action="accept", content={"order_id": "ORD-77"})
    script = [("ask_order", {}), ("get_order", {"order_id": "ORD-77"}), ("get_order", {"order_id": "ORD-78"})]
    seen = drive(params, script, accept)
    assert [error for error, _ in seen] == [False, False, True]
    assert "shipped" in seen[1][1] and "dependency" in seen[2][1]  # ORD-78 exists, but nobody gave it
    (row,) = read_jsonl(record / "records.jsonl")
    assert (row["T"], row["fed"], row["label"]) == (3, 3, "dependency")
    assert "given by the conversation at message 0: order_id='ORD-77'" in row["verdicts"][1]["notes"]
    assert row["metadata"]["guard"]["heard"] == [{"after_calls": 0, "from": "elicitation", "text": "ORD-77"}]
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")
    declined = tmp_path / "declined"
    params = guard_params(["--hooks", str(side), "--record", str(declined)], ORDERS_SERVER)
    seen = drive(params, script[:2], mcp_types.ElicitResult(action="decline"))
    assert [error for error, _ in seen] == [False, True]


def test_a_bad_given_file_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe not utf-8")
    assert main(["guard", "--given", str(tmp_path / "bad.txt"), "--", "true"]) == 2
    assert "bad.txt" in capsys.readouterr().err
    assert main(["guard", "--given", str(tmp_path / "missing.txt"), "--", "true"]) == 2


class _Message:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


def test_only_an_accepted_answer_to_an_open_elicitation_is_heard() -> None:
    open_ = Elicitations()
    open_.asked(_Message(id=5, method="elicitation/create", params={}))
    open_.asked(_Message(id=6, method="sampling/createMessage", params={}))
    assert open_.answered(_Message(id=6, result={"action": "accept", "content": {"x": "S-1"}})) is None
    assert open_.answered(_Message(id=5, method="tools/call", params={})) is None  # a request of the client's own
    answer = {"action": "accept", "content": {"a": "ORD-1", "n": 7, "ok": True, "many": ["X", "Y"]}}
    assert open_.answered(_Message(id=5, result=answer)) == "ORD-1\n7\nX\nY"
    assert open_.answered(_Message(id=5, result=answer)) is None  # answered once
    assert elicited_text({"action": "decline"}) is None


def test_the_heard_transcript_places_messages_between_calls() -> None:
    heard = [{"after_calls": 0, "text": "A"}, {"after_calls": 2, "text": "B"}]
    transcript = heard_transcript(heard, 3)
    assert transcript is not None
    assert [(m["role"], m.get("content"), len(m.get("tool_calls", []))) for m in transcript] == [
        ("user", "A", 0),
        ("assistant", None, 2),
        ("user", "B", 0),
        ("assistant", None, 1),
    ]
    assert heard_transcript([], 3) is None
