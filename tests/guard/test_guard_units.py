"""The guard's parts without a process: the shadow, the block text, the connection's record lines (against
replay of the same rollout, an independent path), the journal's files, the command-line redaction and the CLI's
usage errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.guard.block import block_result, block_text
from prefix_exec.guard.journal import Journal
from prefix_exec.guard.log import ConnectionLog
from prefix_exec.guard.shadow import MAX_PAGES, Shadow, call_of, observation_of
from prefix_exec.records.codec import record_to_json, rollout_from_json
from prefix_exec.records.redaction import redact_command, secret_environment
from prefix_exec.replay import replay
from prefix_exec.trajectory import Observation, ToolCall

TOOLS = [
    {
        "name": "create_note",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "append_note",
        "inputSchema": {"type": "object", "properties": {"note_id": {"type": "string"}, "text": {"type": "string"}}},
    },
    {"name": "delete_note", "inputSchema": {"type": "object", "properties": {"note_id": {"type": "string"}}}},
]
HOOKS = """
def made(state, args):
    state["n"] = state.get("n", 0) + 1
    return {"note_id": f"N-{state['n']}"}


def small(state, args):
    return "the text is too long" if len(args.get("text", "")) > 20 else None
"""
SIDE = """
hooks: hooks.py
tools:
  create_note: {effect: made, produces: {note: note_id}}
  append_note: {refs: {note_id: note}, precondition: small}
  delete_note: {refs: {note_id: note}, invalidates: {note: note_id}}
"""


@pytest.fixture
def side(tmp_path: Path) -> Path:
    (tmp_path / "hooks.py").write_text(HOOKS)
    path = tmp_path / "side.yaml"
    path.write_text(SIDE)
    return path


def shadow(tmp_path: Path, side: Path | None, tools: list[dict[str, Any]] = TOOLS) -> Shadow:
    s = Shadow(tmp_path / "tools.json", hooks=side)
    s.begin_listing()
    assert s.add_page({"tools": tools})
    return s


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name, arguments, call_id=name)


def test_a_paginated_listing_is_read_when_its_last_page_arrives(tmp_path: Path) -> None:
    s = Shadow(tmp_path / "tools.json")
    s.begin_listing()
    assert not s.add_page({"tools": TOOLS[:1], "nextCursor": "2"})
    assert s.session is None
    assert s.add_page({"tools": TOOLS[1:]})
    assert s.ready and set(s.env.tools) == {"create_note", "append_note", "delete_note"}  # type: ignore[union-attr]


def test_a_listing_past_the_page_bound_fails_closed_instead_of_being_cut(tmp_path: Path) -> None:
    """A server whose cursors never end: the guard does not check calls against the first MAX_PAGES pages (the
    tools past them would be refused as unknown); it holds the problem, so no call is checked."""
    s = Shadow(tmp_path / "tools.json")
    s.begin_listing()
    pages = [s.add_page({"tools": TOOLS[:1], "nextCursor": str(n)}) for n in range(MAX_PAGES)]
    assert pages[-1] and not any(pages[:-1])
    assert not s.ready and s.problem is not None and f"past {MAX_PAGES} pages" in s.problem.message


def test_a_listing_again_keeps_the_state_and_a_changed_one_carries_it_over(tmp_path: Path, side: Path) -> None:
    s = shadow(tmp_path, side)
    assert s.settle(call("create_note", text="a"), Observation("ok")).accepted
    session = s.session
    s.begin_listing()
    s.add_page({"tools": TOOLS})
    assert s.session is session and s.listings == 1
    s.begin_listing()
    s.add_page({"tools": [*TOOLS, {"name": "list_notes", "inputSchema": {"type": "object"}}]})
    assert s.session is not session and s.listings == 2
    assert s.check(call("append_note", note_id="N-1", text="b")).accepted  # N-1 was produced before the change


def test_checks_see_refs_invalidations_and_preconditions(tmp_path: Path, side: Path) -> None:
    s = shadow(tmp_path, side)
    ghost = s.check(call("append_note", note_id="N-9", text="x"))
    assert ghost.label is not None and ghost.label.value == "dependency"
    assert s.settle(call("create_note", text="a"), Observation("ok")).accepted
    assert s.check(call("append_note", note_id="N-1", text="x")).accepted
    long = s.check(call("append_note", note_id="N-1", text="x" * 30))
    assert long.label is not None and long.label.value == "precondition"
    assert s.settle(call("delete_note", note_id="N-1"), Observation("ok")).accepted
    gone = s.check(call("append_note", note_id="N-1", text="x"))
    assert gone.label is not None and gone.label.value == "state_consistency"


def test_a_side_file_that_does_not_fit_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "side.yaml").write_text("tools:\n  delete_note: {refs: {id: note}}\n")
    s = shadow(tmp_path, tmp_path / "side.yaml")
    assert not s.ready and s.problem is not None and "'id'" in s.problem.message


def test_rules_for_a_tool_the_server_does_not_list_wait_for_a_listing_that_has_it(tmp_path: Path, side: Path) -> None:
    """A server may list a tool to some clients only, or later: its rules are left out until a listing has it (a
    call to it meanwhile is an unknown tool), then apply, on the state built so far."""
    s = shadow(tmp_path, side, TOOLS[:2])
    assert s.ready and s.env is not None and s.env.unlisted == ("delete_note",)
    unknown = s.check(call("delete_note", note_id="N-1"))
    assert unknown.label is not None and unknown.label.value == "schema" and "unknown tool" in unknown.reason
    assert s.settle(call("create_note", text="a"), Observation("ok")).accepted
    s.begin_listing()
    s.add_page({"tools": TOOLS})
    assert s.env is not None and s.env.unlisted == ()
    ghost = s.check(call("delete_note", note_id="N-9"))  # its refs now apply
    assert ghost.label is not None and ghost.label.value == "dependency"
    assert s.settle(call("delete_note", note_id="N-1"), Observation("ok")).accepted  # N-1 from before the listing


def test_blocks_say_what_to_do(tmp_path: Path, side: Path) -> None:
    s = shadow(tmp_path, side)
    ghost = call("append_note", note_id="N-9", text="x")
    text = block_text(s.check(ghost), ghost, s.session)
    assert text.startswith("prefix-exec guard did not run append_note: dependency: note_id='N-9'")
    assert "call create_note first and pass the note it returns" in text
    unknown = call("rm_rf")
    assert "call one of the tools the server lists (create_note, append_note, delete_note)" in block_text(
        s.check(unknown), unknown, s.session
    )
    s.settle(call("create_note", text="a"), Observation("ok"))
    s.settle(call("delete_note", note_id="N-1"), Observation("ok"))
    stale = call("append_note", note_id="N-1", text="x")
    assert "no longer current" in block_text(s.check(stale), stale, s.session)
    result = block_result(s.check(stale), stale, s.session)
    assert result["isError"] and result["_meta"]["prefix-exec/guard"]["label"] == "state_consistency"


def test_calls_and_observations_from_mcp() -> None:
    assert call_of({"name": 3}, "1").parse_error and call_of({"name": "x", "arguments": [1]}, "1").parse_error
    assert call_of({"name": "x"}, "7") == ToolCall("x", {}, call_id="7")
    assert observation_of({"content": [{"type": "text", "text": "a"}], "structuredContent": {"id": 1}}) == Observation(
        {"id": 1}, error=False
    )
    blocks = [{"type": "text", "text": "a"}, {"type": "image", "mimeType": "image/png", "data": "..."}]
    assert observation_of({"content": blocks, "isError": True}) == Observation("a\n[image image/png]", error=True)


@pytest.mark.parametrize("script", ["accepted", "blocked-first", "blocked-later", "no-call"])
def test_the_record_line_is_the_record_replay_makes(tmp_path: Path, side: Path, script: str) -> None:
    """The spliced lines equal ``record_to_json(replay(rollout))`` for the same rollout (an independent path)."""
    s = shadow(tmp_path, side)
    log = ConnectionLog(
        "s-1", method="guard-enforce", info={"mode": "enforce", "client": {"name": "c", "version": "1"}}
    )
    calls = {
        "accepted": [call("create_note", text="a"), call("append_note", note_id="N-1", text="b")],
        "blocked-first": [call("append_note", note_id="N-9", text="b"), call("create_note", text="a")],
        "blocked-later": [
            call("create_note", text="a"),
            call("append_note", note_id="N-1", text="x" * 30),
            call("create_note", text="c"),
        ],
        "no-call": [],
    }[script]
    for c in calls:
        verdict = s.check(c)
        if verdict.accepted:
            verdict = s.settle(c, Observation("ok"))
        log.add(c, verdict, {"forwarded": verdict.accepted})
    rollout_line, record_line = log.snapshot("notes", None if calls else s.finish_without_tools()).lines()
    rollout = rollout_from_json(json.loads(rollout_line))
    env = shadow(tmp_path, side).env
    assert env is not None
    expected = record_to_json(replay(rollout, env))
    got = json.loads(record_line)
    for key in ("T", "fed", "label", "reason", "success", "executable", "no_tool", "actions", "model", "task_id"):
        assert got[key] == expected[key], key
    assert [(v["accepted"], v["label"]) for v in got["verdicts"]] == [
        (v["accepted"], v["label"]) for v in expected["verdicts"]
    ]
    assert len(got["metadata"]["guard"]["calls"]) == len(calls)


def test_connections_of_one_task_get_trials_of_their_own(tmp_path: Path, side: Path) -> None:
    from prefix_exec.guard.connection import new_connection
    from prefix_exec.guard.options import GuardOptions

    (tmp_path / "tasked.yaml").write_text(SIDE + "tasks:\n  t1: {}\n")
    journal = Journal(tmp_path / "record")
    options = GuardOptions(hooks=tmp_path / "tasked.yaml", task="t1")
    first = new_connection(options, journal, transport="stdio", origin={})
    first.shadow.begin_listing()
    first.shadow.add_page({"tools": TOOLS})
    first.save()
    journal.close()
    second = new_connection(options, Journal(tmp_path / "record"), transport="stdio", origin={})
    assert (first.log.task_id, first.log.trial, second.log.task_id, second.log.trial) == ("t1", 0, "t1", 1)
    assert first.shadow.ready and first.shadow.session is not None


def test_command_lines_and_environments_lose_their_secrets() -> None:
    shown, removed = redact_command(
        ["srv", "--api-key", "k1", "--token=k2", "GITHUB_TOKEN=k3", "https://u:p@h/x?sig=k4", "-v", "dir"]
    )
    assert shown == [
        "srv",
        "--api-key",
        "***",
        "--token=***",
        "GITHUB_TOKEN=***",
        "https://***@h/x?sig=***",
        "-v",
        "dir",
    ]
    assert set(removed) == {"k1", "k2", "k3", "u:p", "p", "k4"}  # the userinfo and its password
    assert secret_environment({"PATH": "/bin", "OPENAI_API_KEY": "sk-1", "DB_PASSWORD": "pw", "EMPTY_TOKEN": ""}) == [
        "sk-1",
        "pw",
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["guard"], "no MCP server to guard"),
        (["guard", "--listen", "127.0.0.1:0"], "--listen needs a server"),
        (["guard", "--listen", "127.0.0.1:0", "--upstream", "http://x/mcp", "--", "srv"], "not both"),
        (["guard", "--call-timeout", "0", "--", "srv"], "must be positive"),
        (["guard", "--call-timeout", "nan", "--", "srv"], "must be positive"),
        (["guard", "--listen", "127.0.0.1:²", "--upstream", "http://x/mcp"], "expected HOST:PORT"),
        (["guard", "--call-timeout", "inf", "--", "srv"], "must be positive"),
        (["guard", "--hooks", "missing.yaml", "--", "srv"], "no such hooks file"),
        (["guard", "--", "/no/such/server"], "cannot start the MCP server"),
        (["guard", "--record", "{tmp}/never", "--", "/no/such/server"], "cannot start the MCP server"),
    ],
)
def test_usage_errors_exit_2_before_anything_runs(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([arg.replace("{tmp}", str(tmp_path)) for arg in argv]) == 2
    assert not (tmp_path / "never").exists()
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_side_file_with_tasks_needs_a_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    side = tmp_path / "side.yaml"
    side.write_text("tasks:\n  t1: {}\n")
    assert main(["guard", "--hooks", str(side), "--", "srv"]) == 2
    assert "pass --task" in capsys.readouterr().err
    assert main(["guard", "--hooks", str(side), "--task", "t2", "--", "srv"]) == 2
    assert "no such task" in capsys.readouterr().err


def test_without_the_guard_extra_the_command_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    assert main(["guard", "--record", str(tmp_path / "r"), "--", "srv"]) == 2
    err = capsys.readouterr().err
    assert "this command needs mcp" in err and "pip install 'prefix-exec[guard]'" in err
    assert not (tmp_path / "r").exists()


def test_a_guard_started_with_stdin_closed_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``prefix-exec guard -- srv <&-`` leaves ``sys.stdin`` None: a usage error (exit 2), not a traceback."""
    monkeypatch.setattr(sys, "stdin", None)
    assert main(["guard", "--", sys.executable, "-c", "pass"]) == 2
    assert "stdin and stdout" in capsys.readouterr().err


def test_a_port_in_use_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        assert main(["guard", "--listen", f"127.0.0.1:{port}", "--upstream", "http://127.0.0.1:9/mcp"]) == 2
    finally:
        taken.close()
    err = capsys.readouterr().err
    assert "cannot listen there" in err and "choose another port" in err and "check the path" not in err
