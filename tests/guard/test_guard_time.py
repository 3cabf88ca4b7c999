"""The guard against a real third-party MCP server from PyPI, mcp-server-time, with a side file whose data
dependency is fed by the server's own results: ``get_current_time`` produces the ``timezone`` its result names
(``structuredContent``), and ``convert_time`` converts only from a timezone a call returned. A conversion asked
first is blocked (enforce) or recorded (observe); after the server returned the timezone it is accepted. The
server's own ``isError`` (an unknown timezone) is the recorded outcome of that call, labelled as replay labels
it. The connection replays offline to the same FED and labels. A connection with no tool call is executable, and a
failure with ``--require-tools``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from guard_client import connected, guard_params, outcomes, read_jsonl, replayed, text_of

pytestmark = pytest.mark.slow

SIDE = """tools:
  get_current_time: {produces: {timezone: timezone}}
  convert_time: {refs: {source_timezone: timezone}}
"""
CONVERT = {"source_timezone": "Europe/Warsaw", "time": "12:00", "target_timezone": "Asia/Tokyo"}
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("convert_time", CONVERT),  # no timezone returned yet: dependency
    ("get_current_time", {"timezone": "Europe/Warsaw"}),
    ("convert_time", CONVERT),
    ("get_current_time", {"timezone": "Mars/Olympus"}),  # the server's own error
]


def server() -> list[str]:
    found = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    assert found, "mcp-server-time is not installed: make setup installs it (the dev extra)"
    return [found, "--local-timezone", "UTC"]


def session(args: list[str], script: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    seen: list[tuple[bool, str]] = []

    async def drive() -> None:
        with anyio.fail_after(120):
            async with connected(guard_params(args, server())) as client:
                for name, arguments in script:
                    result = await client.call_tool(name, arguments)
                    seen.append((result.is_error, text_of(result)))

    anyio.run(drive)
    return seen


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_results_feed_the_dependency_and_errors_are_evidence(tmp_path: Path, mode: str) -> None:
    side, record = tmp_path / "side.yaml", tmp_path / "record"
    side.write_text(SIDE)
    seen = session(["--mode", mode, "--hooks", str(side), "--record", str(record)], SCRIPT)
    first = seen[0]
    if mode == "enforce":
        assert first[0] and "dependency" in first[1] and "call get_current_time first" in first[1]
    else:
        assert not first[0] and '"time_difference"' in first[1]  # the server ran it
    assert [error for error, _ in seen[1:]] == [False, False, True]
    assert "Invalid timezone" in seen[3][1]
    row = read_jsonl(record / "records.jsonl")[0]
    calls = row["metadata"]["guard"]["calls"]
    assert [c["accepted"] for c in calls] == [False, True, True, False]
    assert calls[0]["label"] == "dependency" and calls[0]["forwarded"] is (mode == "observe")
    assert calls[3]["forwarded"] and calls[3]["by"] == "result"  # the server's isError decided
    assert (row["T"], row["fed"], row["label"]) == (4, 1, "dependency")
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")


def test_a_connection_without_a_call_is_executable_unless_tools_are_required(tmp_path: Path) -> None:
    for flags, expected in (([], (1, 2, None)), (["--require-tools"], (1, 1, "precondition"))):
        record = tmp_path / f"record{len(flags)}"
        assert session([*flags, "--record", str(record)], []) == []
        row = read_jsonl(record / "records.jsonl")[0]
        assert (row["T"], row["fed"], row["label"]) == expected and row["no_tool"]
