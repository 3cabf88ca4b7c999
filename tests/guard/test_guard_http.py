"""The guard on Streamable HTTP (``--listen HOST:PORT --upstream URL``) in front of an SDK server on Streamable HTTP:
one guarded connection per MCP session id, each with its own state and rollout, driven by the official MCP client's
HTTP transport. Ports are picked by the system (port 0), never fixed.
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

import anyio
import httpx
import pytest
from guard_client import NOTES_SERVER, eventually, outcomes, read_jsonl, replayed, text_of
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.slow

HOOKS = """
def created(state, args):
    state["created"] = state.get("created", 0) + 1


def has_note(state, args):
    return None if state.get("created") else "no note was created in this session: create_note first"
"""
SIDE = "hooks: hooks.py\ntools:\n  create_note: {effect: created}\n  append_note: {precondition: has_note}\n"


def _line(stream: object, pattern: str, seconds: float = 60) -> re.Match[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = stream.readline()  # type: ignore[attr-defined]
        if not line:
            break
        found = re.search(pattern, line)
        if found:
            return found
    raise AssertionError(f"no line matching {pattern!r} within {seconds} s")


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    """(the guard's URL, the record folder, the side file), the upstream and the guard running."""
    (tmp_path / "hooks.py").write_text(HOOKS)
    side = tmp_path / "side.yaml"
    side.write_text(SIDE)
    upstream = subprocess.Popen([*NOTES_SERVER, "--http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    guard = None
    try:
        port = _line(upstream.stdout, r"PORT (\d+)").group(1)
        record = tmp_path / "record"
        args = ["--listen", "127.0.0.1:0", "--upstream", f"http://127.0.0.1:{port}/mcp", "--hooks", str(side)]
        args += ["--record", str(record), "--max-message-bytes", "100000"]
        guard = subprocess.Popen(
            [sys.executable, "-m", "prefix_exec", "guard", *args],
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        url = _line(guard.stderr, r"listening on (http://\S+/)").group(1) + "mcp"
        yield url, record, side
        guard.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully (every connection's record closed), then ends by the signal it caught.
        assert guard.wait(timeout=30) in (0, -signal.SIGTERM)
        if (record / "records.jsonl").exists():  # a test that opened connections: each one's record was closed
            ends = [row["metadata"]["guard"].get("end") for row in read_jsonl(record / "records.jsonl")]
            assert all(ends), ends
    finally:
        for process in (guard, upstream):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=30)


async def _session(url: str, calls: list[tuple[str, dict[str, str]]], seen: list[tuple[bool, str]]) -> None:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        for name, args in calls:
            result = await session.call_tool(name, args)
            seen.append((result.is_error, text_of(result)))


def test_each_mcp_connection_is_guarded_on_its_own(guarded: tuple[str, Path, Path], tmp_path: Path) -> None:
    url, record, side = guarded
    first: list[tuple[bool, str]] = []
    second: list[tuple[bool, str]] = []

    async def both() -> None:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(
                    _session,
                    url,
                    [("create_note", {"text": "a"}), ("append_note", {"note_id": "N-1", "text": "b"})],
                    first,
                )
                group.start_soon(_session, url, [("append_note", {"note_id": "N-1", "text": "c"})], second)

    anyio.run(both)
    assert [error for error, _ in first] == [False, False]
    assert second[0][0] and "precondition" in second[0][1] and "create_note first" in second[0][1]
    rows = eventually(  # both connections ended (their clients' DELETE) and written
        lambda: read_jsonl(record / "records.jsonl"),
        lambda found: len(found) == 2 and all(r["metadata"]["guard"].get("end") for r in found),
    )
    assert sorted((r["T"], r["fed"], r["label"]) for r in rows) == [(1, 1, "precondition"), (2, 3, None)]
    assert len({r["task_id"] for r in rows}) == 2 and all(
        r["metadata"]["guard"]["transport"] == "streamable-http" for r in rows
    )
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")


def test_http_errors_of_the_transport(guarded: tuple[str, Path, Path]) -> None:
    url, _, _ = guarded
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
    with httpx.Client(timeout=30) as client:
        modern = client.post(url, json=body, headers={**headers, "mcp-protocol-version": "2026-07-28"})
        assert modern.status_code == 400 and modern.json()["error"]["code"] == -32022
        assert "2025-11-25" in modern.json()["error"]["data"]["supported"]
        unknown = client.post(url, json=body, headers={**headers, "mcp-session-id": "nope"})
        assert unknown.status_code == 404
        huge = client.post(url, content=json.dumps({**body, "params": {"x": "y" * 200_000}}), headers=headers)
        assert huge.status_code == 413


def test_an_upstream_that_cannot_be_reached_gets_the_client_an_error(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    args = ["--listen", "127.0.0.1:0", "--upstream", f"http://127.0.0.1:{dead}/mcp", "--record", str(tmp_path / "r")]
    guard = subprocess.Popen([sys.executable, "-m", "prefix_exec", "guard", *args], stderr=subprocess.PIPE, text=True)
    try:
        url = _line(guard.stderr, r"listening on (http://\S+/)").group(1) + "mcp"
        with pytest.raises(BaseExceptionGroup) as caught:
            anyio.run(_session, url, [], [])
        texts = [str(e) for e in _leaves(caught.value)]
        assert any("prefix-exec guard: the upstream" in t and "failed" in t for t in texts), texts
        end = eventually(
            lambda: read_jsonl(tmp_path / "r" / "records.jsonl")[0]["metadata"]["guard"]["end"],
            lambda text: text.startswith("the upstream"),
        )
        assert end.startswith(f"the upstream http://127.0.0.1:{dead}/mcp failed: ")
    finally:
        guard.kill()
        guard.wait(timeout=30)


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def test_a_stdio_client_is_bridged_to_an_http_server(tmp_path: Path) -> None:
    """``--upstream URL`` without ``--listen``: the client starts the guard over stdio (as Claude Desktop does),
    the guard speaks Streamable HTTP to the server, checks and records the calls as over stdio."""
    from guard_client import connected, guard_params

    (tmp_path / "hooks.py").write_text(HOOKS)
    side = tmp_path / "side.yaml"
    side.write_text(SIDE)
    upstream = subprocess.Popen([*NOTES_SERVER, "--http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = _line(upstream.stdout, r"PORT (\d+)").group(1)
        record = tmp_path / "record"
        args = ["--upstream", f"http://127.0.0.1:{port}/mcp", "--hooks", str(side), "--record", str(record)]
        params = guard_params(args, [])
        params.args = params.args[:-1]  # no "--": nothing follows
        seen: list[tuple[bool, str]] = []

        async def drive() -> None:
            with anyio.fail_after(120):
                async with connected(params) as session:
                    for name, arguments in [
                        ("append_note", {"note_id": "N-1", "text": "x"}),
                        ("create_note", {"text": "a"}),
                    ]:
                        result = await session.call_tool(name, arguments)
                        seen.append((bool(result.is_error), text_of(result)))

        anyio.run(drive)
    finally:
        upstream.kill()
        upstream.wait(timeout=30)
    assert [e for e, _ in seen] == [True, False] and "create_note first" in seen[0][1]
    (row,) = eventually(lambda: read_jsonl(record / "records.jsonl"), lambda rows: len(rows) == 1)
    assert (row["T"], row["fed"], row["label"]) == (2, 1, "precondition")
    assert row["metadata"]["guard"]["upstream"].endswith("/mcp") and row["metadata"]["guard"]["transport"] == "stdio"
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")


def test_a_stdio_server_is_served_on_http_one_process_per_connection(tmp_path: Path) -> None:
    """``--listen HOST:PORT -- COMMAND``: HTTP clients in front of a stdio server, which the guard starts for each
    MCP connection (the notes server keeps its notes in its process: each connection's first note is N-1) and stops
    when the connection ends."""
    (tmp_path / "hooks.py").write_text(HOOKS)
    side = tmp_path / "side.yaml"
    side.write_text(SIDE)
    record = tmp_path / "record"
    args = ["--listen", "127.0.0.1:0", "--hooks", str(side), "--record", str(record), "--", *NOTES_SERVER]
    guard = subprocess.Popen([sys.executable, "-m", "prefix_exec", "guard", *args], stderr=subprocess.PIPE, text=True)
    try:
        url = _line(guard.stderr, r"listening on (http://\S+/)").group(1) + "mcp"
        seen: list[tuple[bool, str]] = []
        calls = [("append_note", {"note_id": "N-1", "text": "x"}), ("create_note", {"text": "a"})]
        for _ in range(2):
            anyio.run(_session, url, calls, seen)
        guard.send_signal(signal.SIGTERM)
        assert guard.wait(timeout=30) in (0, -signal.SIGTERM)
    finally:
        if guard.poll() is None:
            guard.kill()
        guard.wait(timeout=30)
    assert [e for e, _ in seen] == [True, False] * 2 and all('"N-1"' in text for _, text in seen[1::2])
    rows = read_jsonl(record / "records.jsonl")
    assert [(r["T"], r["fed"], r["label"]) for r in rows] == [(2, 1, "precondition")] * 2
    info = rows[0]["metadata"]["guard"]
    assert info["transport"] == "streamable-http" and info["command"][-1].endswith("mcp_notes_server.py")
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")
