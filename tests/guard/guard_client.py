"""Helpers for the guard's end-to-end tests: the guard as a subprocess, driven by the official MCP client.

The guard runs as ``python -m prefix_exec guard ...`` with this process's environment (so the tests' own
``PYTHONPATH`` points it at the tree under test); the client is the SDK's ``ClientSession`` over its
``stdio_client``, as an agent host (Claude Desktop, the OpenAI Agents SDK's ``MCPServerStdio``) launches it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

FAKES = Path(__file__).resolve().parents[1] / "fakes"
NOTES_SERVER = [sys.executable, str(FAKES / "mcp_notes_server.py")]
HOSTILE_SERVER = [sys.executable, str(FAKES / "mcp_hostile_server.py")]
#: Where make setup (make mcp-servers) installs the npm MCP servers (PREFIX_EXEC_NPM_SERVERS: another such folder).
NPM_SERVERS = Path(
    os.environ.get("PREFIX_EXEC_NPM_SERVERS") or Path(sys.prefix) / "mcp-servers" / "node_modules" / ".bin"
)


def npm_server(name: str) -> str:
    """The installed npm MCP server ``name`` (``mcp-server-filesystem``); fails, naming the fix, when it is not
    there (the suite skips nothing: make setup installs it, and node is on every machine of this project)."""
    path = NPM_SERVERS / name
    if shutil.which("node") is None:
        pytest.fail(
            f"node is not installed: {name} (an npm MCP server) needs it; install node and npm, then make setup"
        )
    if not path.exists():
        pytest.fail(f"{name} is not installed in {NPM_SERVERS.parent.parent}: run make mcp-servers (make setup does)")
    return str(path)


def guard_params(
    guard_args: Sequence[str], server: Sequence[str], env: dict[str, str] | None = None
) -> StdioServerParameters:
    """The guard in front of ``server``, as a client's server entry."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "prefix_exec", "guard", *guard_args, "--", *server],
        env={**os.environ, **(env or {})},
    )


@asynccontextmanager
async def connected(params: StdioServerParameters, **options: Any) -> AsyncIterator[ClientSession]:
    """An initialized client session (its tools listed) over the given server entry; ``options`` go to
    ``ClientSession`` (a ``sampling_callback`` makes the client one that can sample)."""
    async with stdio_client(params) as (read, write), ClientSession(read, write, **options) as session:
        await session.initialize()
        await session.list_tools()
        yield session


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def replayed(record_dir: Path, hooks: Path | None, out: Path) -> dict[str, tuple[int, int, str | None]]:
    """``score custom --tools DIR/tools.json [--hooks SIDE] DIR/rollouts.jsonl``, offline: (T, FED, label) by task."""
    from prefix_exec.cli import main

    args = ["score", "custom", "--tools", str(record_dir / "tools.json")]
    args += ["--hooks", str(hooks)] if hooks is not None else []
    assert main([*args, str(record_dir / "rollouts.jsonl"), "--out", str(out)]) == 0
    return outcomes(out)


def outcomes(records: Path) -> dict[str, tuple[int, int, str | None]]:
    """(T, FED, label) of each record, by task id."""
    return {row["task_id"]: (row["T"], row["fed"], row["label"]) for row in read_jsonl(records)}


def eventually(read: Any, check: Any, seconds: float = 30.0) -> Any:
    """``read()`` once ``check(read())`` holds, polled for at most ``seconds`` (the journal writes a call before
    its answer, but a session's end a moment after the client closed it); the last value read when it never
    does (for the failing assertion)."""
    import time

    deadline = time.monotonic() + seconds
    while True:
        try:
            value = read()
            if check(value) or time.monotonic() > deadline:
                return value
        except (OSError, ValueError, IndexError):
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)
