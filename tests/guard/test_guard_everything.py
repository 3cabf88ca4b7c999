"""The guard against npm's ``@modelcontextprotocol/server-everything`` (a TypeScript-SDK server that exercises
the whole protocol), for what only it shows (issue 44):

- a signal with a call in flight over Streamable HTTP: the official client's call gets a JSON-RPC error, the call is
  recorded as interrupted (an infrastructure failure), and the guard exits;
- a side file naming a tool the server lists only to some clients (``trigger-sampling-request`` is listed only to a
  client that can sample): the session goes on, the rules wait for a listing that has the tool;
- a tools/call run as a task (MCP 2025-11-25): checked when made, recorded and stepped into the state when its
  ``tasks/result`` answers, through the official TypeScript SDK's client (the Python SDK's client, mcp 2.3, cannot
  run a call as a task: it validates a tools/call answer as a CallToolResult only).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from guard_client import (
    FAKES,
    NPM_SERVERS,
    connected,
    guard_params,
    npm_server,
    outcomes,
    read_jsonl,
    replayed,
    text_of,
)
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from raw_guard import RawGuard

pytestmark = pytest.mark.slow

#: Longest wait for a process to end after a signal, or for a line it prints, in seconds (2 busy cores).
BOUND_S = 30


def everything() -> list[str]:
    return [npm_server("mcp-server-everything"), "stdio"]


def _line(stream: Any, pattern: str) -> re.Match[str] | None:
    """The first line of ``stream`` matching ``pattern`` (None at its end), read within :data:`BOUND_S`."""
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            return None
        if found := re.search(pattern, line):
            return found
    raise AssertionError(f"no line matching {pattern!r} within {BOUND_S} s")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(params=["upstream", "command"])
def http_guard(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str], Path]]:
    """(the guard's URL, the guard's process, its record folder): the guard on Streamable HTTP in front of
    server-everything, either on HTTP itself (``--upstream``; it takes its port from PORT, so a free one is picked,
    again if another process took it first) or as a stdio server the guard starts per connection (``-- COMMAND``)."""
    upstream = None
    record = tmp_path / "record"
    args = ["--listen", "127.0.0.1:0", "--record", str(record)]
    if request.param == "command":
        args += ["--", *everything()]
    for _ in range(5 if request.param == "upstream" else 0):
        port = _free_port()
        command = [npm_server("mcp-server-everything"), "streamableHttp"]
        env = {**os.environ, "PORT": str(port)}
        upstream = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if _line(upstream.stderr, r"listening on port|already in use") and upstream.poll() is None:
            args += ["--upstream", f"http://127.0.0.1:{port}/mcp"]
            break
        upstream.wait(timeout=BOUND_S)
    assert upstream is None or upstream.poll() is None, "server-everything did not start on HTTP"
    guard = subprocess.Popen(
        [sys.executable, "-m", "prefix_exec", "guard", *args], stderr=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    try:
        found = _line(guard.stderr, r"listening on (http://\S+/)")
        assert found is not None, "the guard did not start"
        yield found.group(1) + "mcp", guard, record
    finally:
        for process in (guard, upstream):
            if process is not None and process.poll() is None:
                process.kill()
            if process is not None:
                process.wait(timeout=BOUND_S)


async def _call_then_signal(url: str, guard: subprocess.Popen[str], number: signal.Signals) -> tuple[str, float]:
    """Call the long-running tool over Streamable HTTP, send the guard ``number`` once the server reports progress
    (the call is in flight at the server), and return the error the call ended with and how long the guard took to
    exit after the signal."""
    reported = anyio.Event()

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reported.set()

    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        outcome: list[str] = []

        async def call() -> None:
            arguments = {"duration": 600, "steps": 600}
            with pytest.raises(MCPError) as raised:
                await session.call_tool("trigger-long-running-operation", arguments, progress_callback=progress)
            outcome.append(str(raised.value))

        with anyio.fail_after(BOUND_S * 4):
            async with anyio.create_task_group() as group:
                group.start_soon(call)
                await reported.wait()
                guard.send_signal(number)
                signalled = time.monotonic()
        exited = await anyio.to_thread.run_sync(lambda: guard.wait(timeout=BOUND_S))
        assert exited in (0, -number, 128 + number)
        return outcome[0], time.monotonic() - signalled


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_with_a_call_in_flight_over_http_answers_it_and_records_it_as_interrupted(
    http_guard: tuple[str, subprocess.Popen[str], Path], number: signal.Signals
) -> None:
    url, guard, record = http_guard
    error, took = anyio.run(_call_then_signal, url, guard, number)
    assert f"the guard was stopped by {number.name}" in error  # a JSON-RPC error for the call, not an empty 200
    assert took < BOUND_S
    (row,) = read_jsonl(record / "records.jsonl")
    assert (row["T"], row["success"], row["no_tool"]) == (1, 0, False)
    assert number.name in row["metadata"]["infrastructure"]  # the system's failure, not the agent's
    guard_info = row["metadata"]["guard"]
    assert [c["tool"] for c in guard_info["interrupted"]] == ["trigger-long-running-operation"]
    assert guard_info["end"] == f"the guard was stopped by {number.name}"
    assert row["actions"][0]["observation"]["error"] is True


def test_a_signal_with_nothing_in_flight_over_http_ends_the_connection_as_no_failure(
    http_guard: tuple[str, subprocess.Popen[str], Path],
) -> None:
    url, guard, record = http_guard

    async def echo_then_signal() -> None:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            assert not (await session.call_tool("echo", {"message": "hi"})).is_error
            guard.send_signal(signal.SIGTERM)
            await anyio.to_thread.run_sync(lambda: guard.wait(timeout=BOUND_S))

    anyio.run(echo_then_signal)
    (row,) = read_jsonl(record / "records.jsonl")
    assert row["metadata"]["guard"]["end"] == "the guard was stopped by SIGTERM"
    assert (row["T"], row["success"]) == (1, 1) and "infrastructure" not in row["metadata"]


SAMPLING_SIDE = """
hooks: hooks.py
tools:
  echo: {effect: echoed}
  trigger-sampling-request: {precondition: echoed_first}
"""
SAMPLING_HOOKS = """
def echoed(state, args):
    state["echoed"] = True


def echoed_first(state, args):
    return None if state.get("echoed") else "echo something first"
"""


async def _sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="a sampled answer"), model="scripted"
    )


def test_a_side_file_naming_a_tool_listed_only_to_some_clients_waits_for_it(tmp_path: Path) -> None:
    """server-everything lists trigger-sampling-request only to a client that can sample. Without that capability
    the side file's rule waits (the session goes on, the call is refused as an unknown tool and never reaches the
    server, a warning once); with it, the rule applies. Each connection replays offline to the same FED (each in a
    record folder of its own: a folder's tools.json holds every tool any of its connections was listed)."""
    (tmp_path / "hooks.py").write_text(SAMPLING_HOOKS)
    side = tmp_path / "side.yaml"
    side.write_text(SAMPLING_SIDE)
    sampling = {"prompt": "hello", "maxTokens": 10}
    seen: dict[str, list[tuple[bool, str]]] = {}

    async def run(name: str, callback: Any) -> None:
        params = guard_params(["--hooks", str(side), "--record", str(tmp_path / name)], everything())
        with anyio.fail_after(BOUND_S * 4):
            async with connected(params, sampling_callback=callback) as session:
                listed = {t.name for t in (await session.list_tools()).tools}
                seen[name] = [(("trigger-sampling-request" in listed), "")]
                for tool, arguments in [("trigger-sampling-request", sampling), ("echo", {"message": "x"})] * 2:
                    result = await session.call_tool(tool, arguments)
                    seen[name].append((bool(result.is_error), text_of(result)))

    anyio.run(run, "plain", None)
    anyio.run(run, "sampling", _sample)
    plain, able = seen["plain"], seen["sampling"]
    assert not plain[0][0] and able[0][0]  # listed to the sampling client only
    assert plain[1][0] and "unknown tool 'trigger-sampling-request'" in plain[1][1] and not plain[2][0]
    assert plain[3][0] and "unknown tool" in plain[3][1]  # still unlisted after echo: the rule never ran
    assert able[1][0] and "echo something first" in able[1][1]  # the rule applies once the tool is listed
    assert not able[3][0] and "a sampled answer" in able[3][1]  # forwarded: the server sampled through the client
    (row,) = read_jsonl(tmp_path / "plain" / "records.jsonl")
    assert row["metadata"]["guard"]["side_file_unlisted"] == ["trigger-sampling-request"]
    assert [c["forwarded"] for c in row["metadata"]["guard"]["calls"]] == [False, True, False, True]
    assert (row["T"], row["fed"], row["label"]) == (4, 1, "schema")
    (other,) = read_jsonl(tmp_path / "sampling" / "records.jsonl")
    assert "side_file_unlisted" not in other["metadata"]["guard"]
    assert (other["T"], other["fed"], other["label"]) == (4, 1, "precondition")
    for name in ("plain", "sampling"):  # score custom lets the rule wait on an MCP listing as the guard did
        record = tmp_path / name
        assert replayed(record, side, tmp_path / f"{name}.jsonl") == outcomes(record / "records.jsonl")


def test_the_warning_is_said_once_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "hooks.py").write_text(SAMPLING_HOOKS)
    side = tmp_path / "side.yaml"
    side.write_text(SAMPLING_SIDE)
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    with RawGuard(["--hooks", str(side)], everything(), tmp_path / "stderr.txt") as g:
        g.request(0, "initialize", initialize)
        g.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for request_id in (1, 2):
            assert "result" in g.request(request_id, "tools/list")
        assert g.close() == 0
        assert g.stderr().count("does not list to this client: 'trigger-sampling-request'") == 1, g.stderr()


TASK_SIDE = """
hooks: hooks.py
tools:
  simulate-research-query: {effect: researched, postcondition: names_topic}
  echo: {precondition: after_research}
"""
TASK_HOOKS = """
def researched(state, args):
    state.setdefault("topics", []).append(args["topic"])


def after_research(state, args):
    return None if state.get("topics") else "research a topic first: call simulate-research-query"


def names_topic(state, args, result):
    if args["topic"] == "forbidden":
        return "the report is on a forbidden topic"
    return None if "Research Report: " + args["topic"] in str(result) else "the report is not about the topic"
"""


def task_client(guard_args: list[str], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The TypeScript SDK's client (tests/fakes/mcp_task_client.mjs) through the guard in front of server-everything:
    one line per call (``kind`` result, error or cancelled; ``isError``; ``text``; ``taskId``)."""
    sdk = NPM_SERVERS.parent / "@modelcontextprotocol" / "sdk"
    command = [sys.executable, "-m", "prefix_exec", "guard", *guard_args, "--", *everything()]
    config = json.dumps({"sdk": str(sdk), "command": command, "calls": calls})
    done = subprocess.run(
        ["node", str(FAKES / "mcp_task_client.mjs"), config],
        capture_output=True,
        text=True,
        timeout=BOUND_S * 4,
        env=dict(os.environ),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_a_call_run_as_a_task_is_recorded_and_steps_the_state_when_its_result_comes(tmp_path: Path) -> None:
    (tmp_path / "hooks.py").write_text(TASK_HOOKS)
    side = tmp_path / "side.yaml"
    side.write_text(TASK_SIDE)
    record = tmp_path / "record"
    echo = {"name": "echo", "arguments": {"message": "hi"}}
    research = {"name": "simulate-research-query", "arguments": {"topic": "tea"}, "task": True}
    forbidden = {**research, "arguments": {"topic": "forbidden"}}
    cancelled = {**research, "arguments": {"topic": "coffee"}, "cancel": True}
    lines = task_client(["--hooks", str(side), "--record", str(record)], [echo, research, echo, forbidden, cancelled])
    assert [(line["kind"], line["isError"]) for line in lines] == [
        ("result", True),  # blocked: nothing was researched yet
        ("result", False),  # the task's result, fetched by tasks/result
        ("result", False),  # the state now holds the topic the task researched
        ("result", True),  # the task ran; its real result failed the postcondition, so the client gets why
        ("cancelled", None),
    ]
    assert "research a topic first" in lines[0]["text"] and "Research Report: tea" in lines[1]["text"]
    assert lines[1]["taskId"] and "fails the postcondition" in lines[3]["text"] and lines[3]["taskId"]
    (row,) = read_jsonl(record / "records.jsonl")
    calls = row["metadata"]["guard"]["calls"]
    assert [(c["tool"], c["accepted"], c.get("outcome")) for c in calls] == [
        ("echo", False, None),
        ("simulate-research-query", True, None),
        ("echo", True, None),
        ("simulate-research-query", False, None),
        ("simulate-research-query", True, "cancelled"),
    ]
    assert calls[3]["label"] == "state_consistency"
    assert (
        calls[1]["server_ms"] >= 3_000
    )  # from the call to its tasks/result: the server sleeps 1 s in each of 4 stages
    actions = row["actions"]
    assert "Research Report: tea" in actions[1]["observation"]["content"] and actions[4].get("observation") is None
    assert (row["T"], row["fed"], row["label"]) == (5, 1, "precondition")
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")


def test_a_task_open_when_the_guard_is_stopped_is_recorded_as_interrupted(tmp_path: Path) -> None:
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    record = tmp_path / "record"
    with RawGuard(["--record", str(record)], everything(), tmp_path / "stderr.txt") as g:
        g.request(0, "initialize", initialize)
        g.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        g.request(1, "tools/list")
        params = {"name": "simulate-research-query", "arguments": {"topic": "tea"}, "task": {"ttl": 60000}}
        created = g.request(2, "tools/call", params)
        assert created["result"]["task"]["status"] == "working"
        g.terminate()
        assert g.ends_within(BOUND_S) == 0
    (row,) = read_jsonl(record / "records.jsonl")
    assert "SIGTERM" in row["metadata"]["infrastructure"] and row["T"] == 1
    assert [c["tool"] for c in row["metadata"]["guard"]["interrupted"]] == ["simulate-research-query"]
