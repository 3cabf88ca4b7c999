"""The guard against npm's ``@modelcontextprotocol/server-memory`` (a TypeScript-SDK server): a call before any
listing (the guard's own ``tools/list`` must be valid JSON-RPC, or the TypeScript SDK drops it unanswered),
array arguments element-wise, and one ``--episode`` carried over three guard processes, as a client that opens a
session per call does; each replayed offline to the same FED (issue 44)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from guard_client import connected, guard_params, npm_server, outcomes, read_jsonl, replayed, text_of
from raw_guard import RawGuard

from prefix_exec.cli import main

pytestmark = pytest.mark.slow

SIDE = """
tools:
  create_entities: {produces: {entity: "entities[*].name"}}
  open_nodes: {refs: {names: entity}}
  delete_entities: {refs: {entityNames: entity}, invalidates: {entity: entityNames}}
  add_observations: {precondition: nothing}
"""
ALICE = {"entities": [{"name": "Alice", "entityType": "person", "observations": ["likes tea"]}]}


@pytest.fixture
def side(tmp_path: Path) -> Path:
    path = tmp_path / "side.yaml"
    path.write_text(SIDE.replace("  add_observations: {precondition: nothing}\n", ""))
    return path


def memory(tmp_path: Path) -> list[str]:
    return [npm_server("mcp-server-memory")]


def test_a_call_before_any_listing_is_answered_by_a_typescript_server(tmp_path: Path, side: Path) -> None:
    env_file = tmp_path / "memory.jsonl"
    args = ["--hooks", str(side), "--record", str(tmp_path / "record"), "--call-timeout", "20"]
    import os

    os.environ["MEMORY_FILE_PATH"] = str(env_file)
    try:
        with RawGuard(args, memory(tmp_path), tmp_path / "stderr.txt") as g:
            g.initialize()
            created = g.request(1, "tools/call", {"name": "create_entities", "arguments": ALICE})
            opened = g.request(2, "tools/call", {"name": "open_nodes", "arguments": {"names": ["Alice"]}})
            assert g.close() == 0
    finally:
        del os.environ["MEMORY_FILE_PATH"]
    assert "result" in created and not created["result"].get("isError"), created
    assert "Alice" in str(opened["result"]) and not opened["result"].get("isError"), opened
    (row,) = read_jsonl(tmp_path / "record" / "records.jsonl")
    assert (row["T"], row["fed"]) == (2, 3)


def drive(params: Any, script: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    seen: list[tuple[bool, str]] = []

    async def run() -> None:
        with anyio.fail_after(120):
            async with connected(params) as session:
                for name, arguments in script:
                    result = await session.call_tool(name, arguments)
                    seen.append((bool(result.is_error), text_of(result)))

    anyio.run(run)
    return seen


def test_arrays_are_element_wise_through_the_guard(tmp_path: Path, side: Path) -> None:
    record = tmp_path / "record"
    env = {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    params = guard_params(["--hooks", str(side), "--record", str(record)], memory(tmp_path), env)
    bob = {"entities": [{"name": "Bob", "entityType": "person", "observations": []}]}
    seen = drive(
        params,
        [
            ("create_entities", ALICE),
            ("create_entities", bob),
            ("open_nodes", {"names": ["Alice", "Bob"]}),  # each element was produced
            ("delete_entities", {"entityNames": ["Alice"]}),
            ("open_nodes", {"names": ["Bob"]}),
            ("open_nodes", {"names": ["Alice"]}),  # deleted: no longer current
        ],
    )
    assert [error for error, _ in seen] == [False, False, False, False, False, True]
    assert "state_consistency" in seen[5][1] and "names[0]='Alice'" in seen[5][1]
    (row,) = read_jsonl(record / "records.jsonl")
    assert (row["T"], row["fed"], row["label"]) == (6, 6, "state_consistency")
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")


def test_an_episode_carries_its_state_over_three_guard_processes(
    tmp_path: Path, side: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "record"
    env = {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl"), "PREFIX_EXEC_GUARD_EPISODE": "ep-1"}
    params = guard_params(["--hooks", str(side), "--record", str(record), "--model", "m-1"], memory(tmp_path), env)
    first = drive(params, [("create_entities", ALICE)])  # one process per call, as inspect's mcp_tools does
    second = drive(params, [("open_nodes", {"names": ["Alice"]})])
    third = drive(params, [("open_nodes", {"names": ["Carol"]}), ("delete_entities", {"entityNames": ["Alice"]})])
    assert [e for e, _ in first + second + third] == [False, False, True, False]
    (row,) = read_jsonl(record / "records.jsonl")
    assert (row["task_id"], row["model"], row["T"], row["fed"], row["label"]) == ("ep-1", "m-1", 4, 3, "dependency")
    assert len(row["metadata"]["guard"]["sessions"]) == 3
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")
    # Without the episode the same client loses the state: the second process refuses Alice, and says why.
    lonely = tmp_path / "lonely"
    env.pop("PREFIX_EXEC_GUARD_EPISODE")
    params = guard_params(["--hooks", str(side), "--record", str(lonely)], memory(tmp_path), env)
    for name, arguments in [("create_entities", ALICE), ("open_nodes", {"names": ["Alice"]})] * 2:
        drive(params, [(name, arguments)])
    assert [r["fed"] for r in read_jsonl(lonely / "records.jsonl")] == [2, 1, 2, 1]
    assert main(["guard", "--rebuild", str(lonely)]) == 0
    err = capsys.readouterr().err
    assert "4 of the 4 sessions" in err and "--episode KEY" in err


AFTER = """
def made_all(state, args, result):
    asked = {e["name"] for e in args.get("entities", [])}
    made = {e["name"] for e in (result or {}).get("entities", [])} if isinstance(result, dict) else set()
    return None if asked <= made else f"the server created none of {sorted(asked - made)} (they exist already?)"
"""


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_a_postcondition_reads_the_real_result(tmp_path: Path, mode: str) -> None:
    (tmp_path / "after.py").write_text(AFTER)
    side = tmp_path / "after.yaml"
    side.write_text(
        "hooks: after.py\ntools:\n"
        '  create_entities: {produces: {entity: "entities[*].name"}, postcondition: made_all}\n'
    )
    record = tmp_path / "record"
    env = {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    params = guard_params(["--mode", mode, "--hooks", str(side), "--record", str(record)], memory(tmp_path), env)
    seen = drive(params, [("create_entities", ALICE), ("create_entities", ALICE)])  # the second creates nothing
    assert not seen[0][0]
    if mode == "enforce":
        assert seen[1][0] and "fails the postcondition" in seen[1][1] and "created none of ['Alice']" in seen[1][1]
    else:
        assert not seen[1][0]  # observe: the client gets the server's real result
    (row,) = read_jsonl(record / "records.jsonl")
    assert (row["T"], row["fed"], row["label"]) == (2, 2, "state_consistency")
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")
