"""The hostile sweep extended to the guard: a client that sends lines that are not JSON-RPC, hostile values,
huge payloads and unknown methods; a server that dies mid-call, never answers, writes garbage or returns a huge
result; a signal. Each case is bounded in time: the guard answers every request (an error where it must), goes
on where the session can, and otherwise ends the connection with the journal closed; never a hung client, never a
traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from guard_client import HOSTILE_SERVER, read_jsonl
from raw_guard import RawGuard

pytestmark = pytest.mark.slow

LIMIT = 100_000
#: Lines that are not a JSON-RPC message, and the id their error names: each gets one error (with the id when the
#: line's head shows one, else null), and the connection goes on.
MALFORMED: dict[str, tuple[str | bytes, int | None]] = {
    "not-json": ("this is not json", None),
    "truncated": ('{"jsonrpc": "2.0", "id": 5, "method": ', 5),
    "array": ("[1, 2, 3]", None),
    "number": ("42", None),
    "no-method": ('{"jsonrpc": "2.0", "id": 6}', 6),
    "wrong-version": ('{"jsonrpc": "1.0", "id": 7, "method": "tools/list"}', 7),
    "params-list": ('{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": [1]}', 8),
    "deep": ("[" * 40_000 + "]" * 40_000, None),
    "bom": ("\ufeff{}", None),
    "nul": ("\u0000", None),
    "bytes": (b"\xff\xfe\x00garbage", None),
}
#: tools/call arguments and names no schema accepts: each is blocked (enforce) with a schema label.
HOSTILE_CALLS: dict[str, dict[str, Any]] = {
    "arguments-list": {"name": "echo", "arguments": [1, 2]},
    "name-number": {"name": 12, "arguments": {}},
    "unknown-tool": {"name": "rm_rf", "arguments": {}},
    "nested-100": {"name": "echo", "arguments": {"text": json.loads("[" * 100 + "]" * 100)}},
    "huge-int": {"name": "echo", "arguments": {"text": 10**4000}},
}
#: Requests the SDK's reader refuses as JSON (nesting past its limit, a lone surrogate): a parse error that names
#: the request's id (read from the line's head), so the client's request ends.
UNREADABLE: dict[str, dict[str, Any]] = {
    "deep-argument": {"name": "echo", "arguments": {"text": json.loads("[" * 900 + "]" * 900)}},
    "surrogate": {"name": "echo", "arguments": {"text": "\ud800"}},
}


def guard(tmp_path: Path, *extra: str) -> RawGuard:
    args = ["--record", str(tmp_path / "record"), "--max-message-bytes", str(LIMIT), *extra]
    return RawGuard(args, HOSTILE_SERVER, tmp_path / "stderr.txt")


def echo(g: RawGuard, request_id: int, text: str = "ok") -> dict[str, Any]:
    return g.request(request_id, "tools/call", {"name": "echo", "arguments": {"text": text}})


def test_a_hostile_client_gets_errors_and_the_connection_goes_on(tmp_path: Path) -> None:
    with guard(tmp_path) as g:
        assert g.initialize()["result"]["serverInfo"]["name"] == "hostile"
        assert len(g.request(1, "tools/list")["result"]["tools"]) == 6
        for name, (line, request_id) in MALFORMED.items():
            g.send(line)
            answer = g.response(request_id)
            assert answer["error"]["code"] in (-32700, -32600), name
            assert answer["error"]["message"].startswith("prefix-exec guard: "), name
            shown = answer["error"]["message"].partition(": ")[2].partition(": ")[2]  # the message's own excerpt
            assert shown, (name, answer)  # the error shows what was sent
            if answer["error"]["code"] == -32700 and isinstance(line, str) and line.isascii() and len(line) < 100:
                assert shown in line, (name, answer)
        for i, (name, params) in enumerate(HOSTILE_CALLS.items(), start=100):
            head = f'{{"jsonrpc": "2.0", "id": {i}, "method": "tools/call", "params": '
            g.send(head + json.dumps(params, ensure_ascii=True) + "}")
            result = g.response(i)["result"]
            assert result["isError"] and "schema" in result["content"][0]["text"], name
        for i, (name, params) in enumerate(UNREADABLE.items(), start=150):
            head = f'{{"jsonrpc": "2.0", "id": {i}, "method": "tools/call", "params": '
            g.send(head + json.dumps(params, ensure_ascii=True) + "}")
            assert g.response(i)["error"]["code"] == -32700, name
        # A request whose id is not a string or number reads (the SDK's reader) as a notification: passed on.
        g.send('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "notifications/whatever"}')
        unknown = g.request(200, "does/not/exist", {"x": 1})  # passed through: the server's own answer
        assert unknown["error"]["code"] == -32601
        g.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 201,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "x" * 2 * LIMIT}},
                }
            )
        )
        too_big = g.response(201)
        assert too_big["error"]["code"] == -32600 and "larger than" in too_big["error"]["message"]
        assert echo(g, 202)["result"]["content"][0]["text"] == "ok"  # the connection went on
        assert g.close() == 0
        assert "Traceback" not in g.stderr()
    row = read_jsonl(tmp_path / "record" / "records.jsonl")[0]
    assert row["T"] == len(HOSTILE_CALLS) + 1 and row["fed"] == 1 and row["label"] == "schema"
    assert row["metadata"]["guard"]["end"] == "the client closed the session"
    assert "infrastructure" not in row["metadata"]  # a client that ends its session is no failure of the system


def test_a_huge_result_is_replaced_by_an_error_and_the_connection_goes_on(tmp_path: Path) -> None:
    with guard(tmp_path) as g:
        g.initialize()
        g.request(1, "tools/list")
        result = g.request(2, "tools/call", {"name": "huge", "arguments": {"size": 2 * LIMIT}})["result"]
        assert result["isError"] and "larger than the bound" in result["content"][0]["text"]
        assert echo(g, 3)["result"]["isError"] is False


@pytest.mark.parametrize(
    ("tool", "extra", "why"),
    [
        ("die", [], "exited"),
        ("hang", ["--call-timeout", "2"], "did not answer tools/call within 2 s"),
        ("garbage", [], "not JSON-RPC"),
    ],
)
def test_a_failing_server_gets_the_client_an_error_and_ends_the_connection(
    tmp_path: Path, tool: str, extra: list[str], why: str
) -> None:
    with guard(tmp_path, *extra) as g:
        g.initialize()
        g.request(1, "tools/list")
        assert echo(g, 2)["result"]["content"][0]["text"] == "ok"
        answer = g.request(3, "tools/call", {"name": tool, "arguments": {}})
        assert answer["error"]["message"].startswith("prefix-exec guard: ") and why in answer["error"]["message"]
        assert g.ends_within(30) == 0  # stdout closed and the process gone, with stdin still open
        assert "Traceback" not in g.stderr()
    row = read_jsonl(tmp_path / "record" / "records.jsonl")[0]
    assert why in row["metadata"]["guard"]["end"] and row["metadata"]["guard"]["ended_at"]
    assert row["T"] == 2 and [a["name"] for a in row["actions"]] == ["echo", tool]
    assert row["actions"][1]["observation"]["error"] is True
    # the server's failure, not the agent's: the record says so, and metrics leaves it out by default
    assert why in row["metadata"]["infrastructure"]
    assert [c["tool"] for c in row["metadata"]["guard"]["interrupted"]] == [tool]
    # its label is the system's, as every scorer writes it (records.infrastructure); the call keeps replay's verdict
    assert row["label"] == "infrastructure" and why in row["reason"]
    assert row["verdicts"][1]["accepted"] is False and row["verdicts"][1]["label"] != "infrastructure"


def test_sigterm_ends_the_connection_with_the_journal_closed(tmp_path: Path) -> None:
    with guard(tmp_path) as g:
        g.initialize()
        g.request(1, "tools/list")
        echo(g, 2)
        g.terminate()
        assert g.ends_within(30) == 0
    row = read_jsonl(tmp_path / "record" / "records.jsonl")[0]
    assert row["metadata"]["guard"]["end"] == "the guard was stopped by SIGTERM" and row["T"] == 1
    assert row["success"] == 1 and "infrastructure" not in row["metadata"]  # nothing was in flight


def test_sigterm_with_a_call_in_flight_answers_it_and_records_it_as_interrupted(tmp_path: Path) -> None:
    with guard(tmp_path) as g:
        g.initialize()
        g.request(1, "tools/list")
        g.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hang"}}))
        time.sleep(1.0)  # the call reaches the server, which never answers it
        g.terminate()
        answer = g.response(2)
        assert "stopped by SIGTERM" in answer["error"]["message"]
        assert g.ends_within(30) == 0
    row = read_jsonl(tmp_path / "record" / "records.jsonl")[0]
    # Not a successful no-tool session: its only call was cut short by the guard's end, an infrastructure failure.
    assert (row["T"], row["success"], row["no_tool"]) == (1, 0, False)
    assert "SIGTERM" in row["metadata"]["infrastructure"] and row["label"] == "infrastructure"
    assert [c["tool"] for c in row["metadata"]["guard"]["interrupted"]] == ["hang"]


def test_a_call_before_any_listing_is_checked_on_a_listing_the_guard_makes(tmp_path: Path) -> None:
    with guard(tmp_path) as g:
        g.initialize()
        assert echo(g, 1)["result"]["content"][0]["text"] == "ok"
        refused = g.request(2, "tools/call", {"name": "echo", "arguments": {"text": 3}})["result"]
        assert refused["isError"] and "schema" in refused["content"][0]["text"]
        assert g.close() == 0
    tools = json.loads((tmp_path / "record" / "tools.json").read_text())["tools"]
    assert {t["name"] for t in tools} == {"echo", "die", "hang", "garbage", "huge", "slow"}


def test_a_side_file_naming_a_tool_the_server_does_not_list_waits_for_it(tmp_path: Path) -> None:
    """A server may list a tool only to some clients: the side file's rules for it wait, the session goes on, and a
    call to it is refused as an unknown tool (schema), never forwarded; said once on stderr and in the record."""
    side = tmp_path / "side.yaml"
    side.write_text("tools:\n  send_email: {refs: {to: contact}}\n  echo: {}\n")
    with guard(tmp_path, "--hooks", str(side)) as g:
        g.initialize()
        listed = g.request(1, "tools/list")
        assert "send_email" not in {t["name"] for t in listed["result"]["tools"]}
        assert echo(g, 2)["result"]["content"][0]["text"] == "ok"
        refused = g.request(3, "tools/call", {"name": "send_email", "arguments": {"to": "x"}})["result"]
        assert refused["isError"] and "schema" in refused["content"][0]["text"]
        assert "unknown tool 'send_email'" in refused["content"][0]["text"]
        g.request(4, "tools/list")
        assert g.close() == 0
        assert g.stderr().count("does not list to this client: 'send_email'") == 1, g.stderr()
    (row,) = read_jsonl(tmp_path / "record" / "records.jsonl")
    assert row["metadata"]["guard"]["side_file_unlisted"] == ["send_email"]
    assert (row["T"], row["fed"], row["label"]) == (2, 2, "schema")
    assert [c["forwarded"] for c in row["metadata"]["guard"]["calls"]] == [True, False]


def test_a_side_file_that_does_not_fit_a_listed_tool_fails_closed(tmp_path: Path) -> None:
    """A rule on an argument a listed tool does not have would never run: the guard refuses to go on without it."""
    side = tmp_path / "side.yaml"
    side.write_text("tools:\n  echo: {refs: {recipient: contact}}\n")
    with guard(tmp_path, "--hooks", str(side)) as g:
        g.initialize()
        listed = g.request(1, "tools/list")
        assert "recipient" in listed["error"]["message"] and "echo" in listed["error"]["message"]
        called = echo(g, 2)
        assert "recipient" in called["error"]["message"]


def test_a_client_notification_named_like_the_oversize_notice_gets_an_error_not_a_crash(tmp_path: Path) -> None:
    """The reader's own over-size notice is a notification a client can send too: without a size in it, the
    guard answers an error and the connection goes on."""
    with guard(tmp_path) as g:
        g.initialize()
        for i, params in enumerate(({"id": 3}, {"id": 4, "bytes": "many"}, {"id": 5, "bytes": 10**30}), start=3):
            g.send(json.dumps({"jsonrpc": "2.0", "method": "prefix-exec/oversize", "params": params}))
            answer = g.response(i)
            assert answer["error"]["code"] == -32600 and "larger than" in answer["error"]["message"]
        assert echo(g, 6)["result"]["content"][0]["text"] == "ok"
        assert g.close() == 0
        assert "Traceback" not in g.stderr()


def test_a_call_before_any_listing_on_a_server_that_never_lists_gets_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOSTILE_SILENT_LISTING", "1")
    with guard(tmp_path, "--call-timeout", "1") as g:
        g.initialize()
        answer = g.request(1, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        assert answer["error"]["message"].startswith("prefix-exec guard: ")
        assert "tools/list" in answer["error"]["message"] or "list its tools" in answer["error"]["message"]
        assert g.ends_within(30) == 0
        assert "Traceback" not in g.stderr()


def test_a_server_command_that_cannot_start_is_an_input_error_in_a_real_process(tmp_path: Path) -> None:
    """As a client runs it (stdin a pipe): exit 2 and the message, no traceback (in-process tests cannot show it:
    pytest's stdin has no file descriptor)."""
    with RawGuard(["--record", str(tmp_path / "never")], ["/no/such/server"], tmp_path / "stderr.txt") as g:
        assert g.ends_within(30) == 2
        err = g.stderr()
    assert "cannot start the MCP server '/no/such/server'" in err and "Traceback" not in err


def test_a_stdin_of_dev_null_is_a_client_that_closed_at_once(tmp_path: Path) -> None:
    """/dev/null is a character device the event loop cannot wait on (epoll refuses it): read by the fallback
    thread it ends the connection at once, instead of a traceback and a guard waiting forever."""
    argv = [sys.executable, "-m", "prefix_exec", "guard", "--record", str(tmp_path / "r"), "--", *HOSTILE_SERVER]
    with open(os.devnull, "rb") as null:
        done = subprocess.run(argv, stdin=null, capture_output=True, timeout=60, check=False)
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0 and "Traceback" not in err
    assert "session ended: the client closed the session" in err


def test_a_call_that_reports_progress_is_not_hung_and_one_that_does_not_is(tmp_path: Path) -> None:
    with guard(tmp_path, "--call-timeout", "1") as g:
        g.initialize()
        g.request(1, "tools/list")
        params = {"name": "slow", "arguments": {"seconds": 2.5, "text": "done"}, "_meta": {"progressToken": "p-1"}}
        answer = g.request(2, "tools/call", params)
        assert answer["result"]["isError"] is False  # 2.5 s past a 1 s timeout, with progress every 0.2 s
        silent = g.request(3, "tools/call", {"name": "slow", "arguments": {"seconds": 2.5}})
        assert "did not answer tools/call within 1 s" in silent["error"]["message"]


def test_hidden_tools_are_not_listed_and_are_refused_if_called(tmp_path: Path) -> None:
    with guard(tmp_path, "--deny-tools", "die,gar*") as g:
        g.initialize()
        names = [t["name"] for t in g.request(1, "tools/list")["result"]["tools"]]
        assert names == ["echo", "hang", "huge", "slow"]
        refused = g.request(2, "tools/call", {"name": "die", "arguments": {}})
        assert refused["result"]["isError"] and "not offered through this guard" in json.dumps(refused)
        assert echo(g, 3)["result"]["content"][0]["text"] == "ok"  # the server is alive: die never reached it
        assert g.close() == 0
    row = read_jsonl(tmp_path / "record" / "records.jsonl")[0]
    assert (row["T"], row["fed"], row["label"]) == (2, 1, "schema")
    with guard(tmp_path, "--allow-tools", "echo") as g:
        g.initialize()
        assert [t["name"] for t in g.request(1, "tools/list")["result"]["tools"]] == ["echo"]


def test_a_bridged_upstream_that_cannot_be_reached_gets_the_client_an_error(tmp_path: Path) -> None:
    process = RawGuard.__new__(RawGuard)  # --upstream alone: no server command after --
    stderr = tmp_path / "stderr.txt"
    process.stderr_path, process._stderr, process._buffer = stderr, stderr.open("wb"), b""
    process.process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "prefix_exec",
            "guard",
            "--upstream",
            "http://127.0.0.1:1/mcp",
            "--record",
            str(tmp_path / "r"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=process._stderr,
        env=dict(os.environ),
    )
    with process as g:
        answer = g.request(
            0,
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
        )
        assert "the upstream http://127.0.0.1:1/mcp failed" in answer["error"]["message"]
        assert g.ends_within(30) == 0 and "Traceback" not in g.stderr()


HOSTILE_KEYS = ["../../outside", 'a"b\\\\c\\n{}', "é" * 3000, "$(touch /tmp/pwned)", "-rf"]


@pytest.mark.parametrize("key", HOSTILE_KEYS, ids=["path", "json", "long", "shell", "dash"])
def test_an_episode_key_is_data_only(tmp_path: Path, key: str) -> None:
    for request_id in (1, 2):  # two guard processes, one episode
        with guard(tmp_path, f"--episode={key}") as g:
            g.initialize()
            echo(g, request_id)
            assert g.close() == 0, g.stderr()
    (row,) = read_jsonl(tmp_path / "record" / "records.jsonl")
    assert row["task_id"] == key and row["T"] == 2 and len(row["metadata"]["guard"]["sessions"]) == 2
    made = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert all(p.startswith("record/") or p == "stderr.txt" for p in made), made  # nothing outside the folder
    assert not Path("/tmp/pwned").exists()


def test_forged_journal_lines_are_skipped_and_never_break_the_others(tmp_path: Path) -> None:
    from prefix_exec.cli import main

    with guard(tmp_path) as g:
        g.initialize()
        echo(g, 1)
        assert g.close() == 0
    (journal,) = (tmp_path / "record" / "journal").iterdir()
    forged = [
        '{"conn": "x", "head": {"dataset": 1, "task_id": [], "trial": "0"}}',
        '{"conn": "y", "head": {"dataset": "d", "task_id": "t", "trial": 1e300, "model": "m", "method": "m"}}',
        '{"conn": "z", "head": {"dataset": "d", "task_id": "t", "trial": 0, "model": "m", "method": "m", "info": {}}}',
        '{"conn": "z", "action": {"name": 5}, "call": {"accepted": "yes"}}',
        '{"conn": "z", "action": {"name": "echo"}, "call": {"accepted": false}, "verdict": {"causes": ["nonsense"]}}',
        "[1, 2, 3]",
        "not json at all",
        '{"tools": "not a list"}',
    ]
    with journal.open("a") as handle:
        handle.write("\n".join(forged) + "\n")
    assert main(["guard", "--rebuild", str(tmp_path / "record")]) == 0
    rows = read_jsonl(tmp_path / "record" / "records.jsonl")
    assert sorted(r["task_id"] for r in rows)[0] != "" and len(rows) == 2  # ours, and the well-formed "z"
    forged_row = next(r for r in rows if r["task_id"] == "t")
    assert (forged_row["T"], forged_row["fed"]) == (1, 1)  # its one readable call, rejected


def test_a_postcondition_that_raises_never_breaks_the_connection(tmp_path: Path) -> None:
    (tmp_path / "after.py").write_text("def boom(state, args, result):\n    raise RuntimeError('after-hook bug')\n")
    side = tmp_path / "side.yaml"
    side.write_text("hooks: after.py\ntools:\n  echo: {postcondition: boom}\n")
    with guard(tmp_path, "--hooks", str(side)) as g:
        g.initialize()
        g.request(1, "tools/list")
        assert echo(g, 2)["result"]["content"][0]["text"] == "ok"  # the call ran: its result goes to the client
        assert echo(g, 3)["result"]["content"][0]["text"] == "ok"
        assert g.close() == 0
        assert "after-hook bug" in g.stderr() and "Traceback" not in g.stderr()


def test_tasks_a_hostile_server_or_client_makes_never_lose_or_double_a_call(tmp_path: Path) -> None:
    """Calls run as tasks (MCP 2025-11-25) against a server and client that misbehave: a task the SDK's types refuse,
    a task result that is no tool result, a result fetched twice, task requests with bad params, a cancel of an
    unknown task, a task never fetched. Every call is recorded once, in the order it settled."""
    task = {"ttl": 1000}

    def run_task(g: RawGuard, request_id: int, text: str) -> dict[str, Any]:
        return g.request(request_id, "tools/call", {"name": "echo", "arguments": {"text": text}, "task": task})

    with guard(tmp_path) as g:
        g.initialize()
        g.request(1, "tools/list")
        done = run_task(g, 2, "done")["result"]["task"]["taskId"]
        assert "no task 7" in g.request(3, "tasks/result", {"taskId": 7})["error"]["message"]  # passed on
        for request_id in (4, 5):  # fetched twice: answered twice, recorded once
            assert g.request(request_id, "tasks/result", {"taskId": done})["result"]["content"][0]["text"] == "done"
        assert run_task(g, 6, "bad-task")["result"]["task"] == {"taskId": 5}  # passed on as it came
        garbage = run_task(g, 7, "garbage-result")["result"]["task"]["taskId"]
        assert g.request(8, "tasks/result", {"taskId": garbage})["result"] == {"nothing": True}
        cancelled = run_task(g, 9, "c")["result"]["task"]["taskId"]
        assert g.request(10, "tasks/cancel", {"taskId": cancelled})["result"]["status"] == "cancelled"
        assert "error" in g.request(11, "tasks/cancel", {"taskId": "nope"})
        run_task(g, 13, "never fetched")
        assert echo(g, 14)["result"]["content"][0]["text"] == "ok"
        assert g.close() == 0
        assert "Traceback" not in g.stderr()
    (row,) = read_jsonl(tmp_path / "record" / "records.jsonl")
    calls = [(c["step"], c.get("outcome")) for c in row["metadata"]["guard"]["calls"]]
    assert calls == [(1, None), (2, "unreadable"), (3, "cancelled"), (4, None), (5, "unfetched"), (6, "unfetched")]
    texts = [a["arguments"]["text"] for a in row["actions"]]
    assert texts == ["done", "bad-task", "c", "ok", "garbage-result", "never fetched"]
    assert row["actions"][0]["observation"]["content"] == "done" and row["T"] == 6


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_a_precondition_that_raises_blocks_only_in_enforce_mode(tmp_path: Path, mode: str) -> None:
    """A call its hooks cannot judge: enforce answers a JSON-RPC error and never forwards it; observe never changes
    what a call does, so it is forwarded and recorded with the note ``not judged``."""
    (tmp_path / "before.py").write_text("def boom(state, args):\n    raise RuntimeError('precondition bug')\n")
    side = tmp_path / "side.yaml"
    side.write_text("hooks: before.py\ntools:\n  echo: {precondition: boom}\n")
    with guard(tmp_path, "--hooks", str(side), "--mode", mode) as g:
        g.initialize()
        g.request(1, "tools/list")
        answer = echo(g, 2)
        if mode == "enforce":
            assert "precondition bug" in answer["error"]["message"]
        else:
            assert answer["result"]["content"][0]["text"] == "ok"
        assert g.close() == 0
        assert "precondition bug" in g.stderr() and "Traceback" not in g.stderr()
    rows = read_jsonl(tmp_path / "record" / "records.jsonl")
    if mode == "enforce":  # not forwarded, and not a call of the rollout: no verdict was reached
        assert rows[0]["T"] == 1 and rows[0]["no_tool"]
    else:
        (call,) = rows[0]["metadata"]["guard"]["calls"]
        assert call["forwarded"] and call["accepted"]
        assert any("not judged" in note and "precondition bug" in note for note in rows[0]["verdicts"][0]["notes"])
