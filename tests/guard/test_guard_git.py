"""The guard in front of PyPI's ``mcp-server-git`` (the dev extra installs it), with a client that opens a guard
process per call, as inspect's ``mcp_tools`` with ``generate()`` and LangChain's ``get_tools()`` do: ``git_add``
then ``git_commit``. Without ``--episode`` the commit is refused (each process starts from no state) and the
episode is two rollouts; with ``--episode`` it is one rollout whose state carries over, replayed offline to the
same FED (issue 44)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from guard_client import connected, guard_params, outcomes, read_jsonl, replayed, text_of

pytestmark = pytest.mark.slow

HOOKS = """
def staged(state, args):
    state["staged"] = state.get("staged", 0) + len(args.get("files") or [])


def has_staged(state, args):
    return None if state.get("staged") else "nothing was staged in this episode: git_add first"


def committed(state, args):
    state["staged"] = 0
"""
SIDE = """
hooks: git_hooks.py
tools:
  git_add: {effect: staged}
  git_commit: {precondition: has_staged, effect: committed}
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None or shutil.which("mcp-server-git", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("git and mcp-server-git (the dev extra) are needed: pip install -e '.[dev]'")
    path = tmp_path / "repo"
    path.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@example.test"], ["config", "user.name", "t"]):
        subprocess.run(["git", "-C", str(path), *args], check=True)
    (path / "a.txt").write_text("hello\n")
    (tmp_path / "git_hooks.py").write_text(HOOKS)
    (tmp_path / "side.yaml").write_text(SIDE)
    return path


def one_call(params: Any, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """One guard process, one MCP session, one call: what a client that reconnects per call does."""
    seen: list[tuple[bool, str]] = []

    async def run() -> None:
        with anyio.fail_after(120):
            async with connected(params) as session:
                result = await session.call_tool(name, arguments)
                seen.append((bool(result.is_error), text_of(result)))

    anyio.run(run)
    return seen[0]


@pytest.mark.parametrize("episode", [None, "git-episode"])
def test_git_add_then_commit_across_guard_processes(tmp_path: Path, repo: Path, episode: str | None) -> None:
    record = tmp_path / "record"
    server = [str(Path(sys.executable).parent / "mcp-server-git"), "--repository", str(repo)]
    extra = ["--episode", episode] if episode else []
    params = guard_params(["--hooks", str(tmp_path / "side.yaml"), "--record", str(record), *extra], server)
    added = one_call(params, "git_add", {"repo_path": str(repo), "files": ["a.txt"]})
    committed = one_call(params, "git_commit", {"repo_path": str(repo), "message": "first"})
    log = subprocess.run(["git", "-C", str(repo), "log", "--oneline"], capture_output=True, text=True)
    assert not added[0]
    rows = read_jsonl(record / "records.jsonl")
    if episode is None:  # the state is lost between processes: the commit is refused and never reaches git
        assert committed[0] and "git_add first" in committed[1] and log.returncode != 0
        assert [(r["T"], r["fed"]) for r in rows] == [(1, 2), (1, 1)]
    else:
        assert not committed[0] and "first" in log.stdout
        (row,) = rows
        assert (row["task_id"], row["T"], row["fed"], row["success"]) == (episode, 2, 3, 1)
        assert [a["name"] for a in row["actions"]] == ["git_add", "git_commit"]
    assert replayed(record, tmp_path / "side.yaml", tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")
