"""The guard against a real third-party MCP server from npm, @modelcontextprotocol/server-filesystem, driven by the
official MCP client, in both modes, with a side file declaring one data dependency (``move_file`` moves only a
file this session wrote: ``refs: {source: file}``, ``write_file`` produces it) and one precondition (``edit_file``
needs the file read first in this session). The server's own state, the files on disk, shows what ran: in
``enforce`` a blocked call never reaches the server; in ``observe`` it does and the verdict is recorded. The
recorded connection replays offline (``score custom --tools DIR/tools.json --hooks SIDE DIR/rollouts.jsonl``) to the
same FED and labels, and ``metrics`` reads the records.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from guard_client import connected, guard_params, npm_server, outcomes, read_jsonl, replayed, text_of

from prefix_exec.cli import main

pytestmark = pytest.mark.slow

HOOKS = """
def wrote(state, args):
    return {"path": args["path"]}


def read(state, args):
    state.setdefault("read", []).append(args["path"])


def was_read(state, args):
    if args["path"] not in state.get("read", []):
        return f"{args['path']} was not read in this session: read_text_file it first"
    return None
"""
SIDE = """
hooks: fs_hooks.py
tools:
  write_file: {effect: wrote, produces: {file: path}}
  read_text_file: {effect: read}
  move_file: {refs: {source: file}}
  edit_file: {precondition: was_read}
"""
SECRET = "sk-guard-test-0123456789"


@pytest.fixture
def side(tmp_path: Path) -> Path:
    (tmp_path / "fs_hooks.py").write_text(HOOKS)
    path = tmp_path / "side.yaml"
    path.write_text(SIDE)
    return path


def run_session(mode: str, root: Path, record: Path, side: Path) -> list[tuple[str, bool, str]]:
    """The scripted agent's connection through the guard; (tool, isError, text) per call."""
    server = [npm_server("mcp-server-filesystem"), str(root)]
    params = guard_params(
        ["--mode", mode, "--hooks", str(side), "--record", str(record)], server, {"NOTES_API_KEY": SECRET}
    )
    edit = {"path": str(root / "a.txt"), "edits": [{"oldText": "hello", "newText": "bye"}]}
    script = [
        ("write_file", {"path": str(root / "a.txt"), "content": f"hello {SECRET}"}),
        ("move_file", {"source": str(root / "b.txt"), "destination": str(root / "c.txt")}),  # dependency
        ("edit_file", edit),  # precondition: not read yet
        ("read_text_file", {"path": str(root / "a.txt")}),
        ("edit_file", edit),
        ("move_file", {"source": str(root / "a.txt"), "destination": str(root / "d.txt")}),
    ]
    seen: list[tuple[str, bool, str]] = []

    async def drive() -> None:
        with anyio.fail_after(120):
            async with connected(params) as session:
                for name, args in script:
                    result = await session.call_tool(name, args)
                    seen.append((name, result.is_error, text_of(result)))

    anyio.run(drive)
    return seen


def test_enforce_blocks_before_the_server_and_the_journal_replays(tmp_path: Path, side: Path) -> None:
    root, record = tmp_path / "files", tmp_path / "record"
    root.mkdir()
    (root / "b.txt").write_text("written by someone else")
    seen = run_session("enforce", root, record, side)

    assert [error for _, error, _ in seen] == [False, True, True, False, False, False]
    moved, edited = seen[1][2], seen[2][2]
    assert "dependency" in moved and "call write_file first" in moved
    assert "precondition" in edited and "was not read in this session" in edited
    # The server never saw the blocked calls: b.txt was not moved (no c.txt); the first edit_file did not run
    # (the text changed once, by the accepted edit after the read), and a.txt was then moved by the last call.
    assert sorted(p.name for p in root.iterdir()) == ["b.txt", "d.txt"]
    assert (root / "b.txt").read_text() == "written by someone else"
    assert (root / "d.txt").read_text() == f"bye {SECRET}"

    records = read_jsonl(record / "records.jsonl")
    assert len(records) == 1
    row = records[0]
    assert (row["T"], row["fed"], row["label"], row["method"]) == (6, 2, "dependency", "guard-enforce")
    calls = row["metadata"]["guard"]["calls"]
    assert [(c["forwarded"], c["label"]) for c in calls] == [
        (True, None),
        (False, "dependency"),
        (False, "precondition"),
        (True, None),
        (True, None),
        (True, None),
    ]
    guard = row["metadata"]["guard"]
    assert guard["server"]["name"] == "secure-filesystem-server" and guard["client"]["name"]
    assert all(c["guard_ms"] >= 0 for c in calls)
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")
    # The secret in the guard's environment never reaches a file it wrote, though the server returned it.
    assert SECRET in seen[3][2]
    for name in ("rollouts.jsonl", "records.jsonl", "tools.json"):
        assert SECRET not in (record / name).read_text()
    assert main(["metrics", str(record / "records.jsonl")]) == 0
    report = ["report", str(record / "records.jsonl"), "--out", str(tmp_path / "report"), "--no-plots"]
    assert main([*report, "--resamples", "50"]) == 0 and (tmp_path / "report" / "report.html").is_file()


def test_observe_forwards_every_call_and_records_the_verdicts(tmp_path: Path, side: Path) -> None:
    root, record = tmp_path / "files", tmp_path / "record"
    root.mkdir()
    (root / "b.txt").write_text("written by someone else")
    seen = run_session("observe", root, record, side)

    assert [error for _, error, _ in seen] == [False, False, False, False, True, False]  # the 2nd edit finds no "hello"
    # Every call reached the server: b.txt was moved to c.txt, and the first edit changed a.txt.
    assert sorted(p.name for p in root.iterdir()) == ["c.txt", "d.txt"]
    assert (root / "d.txt").read_text() == f"bye {SECRET}"
    row = read_jsonl(record / "records.jsonl")[0]
    assert (row["fed"], row["label"], row["method"]) == (2, "dependency", "guard-observe")
    calls = row["metadata"]["guard"]["calls"]
    assert [c["forwarded"] for c in calls] == [True] * 6
    assert [c["label"] for c in calls[:3]] == [None, "dependency", "precondition"]
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")
