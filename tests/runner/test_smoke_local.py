"""scripts/smoke_local.py (``make smoke-local``) against the scripted loopback server: the report's counts
against the BFCL ground truth the server plays, text mode, parse failures, a model that writes no call, failed
units, and the exit status and one-line error of an unreachable server."""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fakes.bfcl_agent import BfclScript
from fakes.openai_server import ScriptedServer, text_message, tool_message
from fakes.planning import planning_answer
from prefix_exec.envs.bfcl.checker import ground_truth_calls
from prefix_exec.envs.bfcl.tasks import load_task
from prefix_exec.records.codec import read_records

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smoke() -> ModuleType:
    spec = importlib.util.spec_from_file_location("smoke_local", REPO / "scripts" / "smoke_local.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["smoke_local"] = module  # dataclasses resolve the module's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def no_smoke_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The script reads its defaults from these variables; the tests set them only where they test them."""
    for name in ("BASE_URL", "MODEL", "TOOL_MODE", "TEXT_FORMAT", "API_KEY_ENV", "OUT", "TASKS", "METHODS"):
        monkeypatch.delenv(name, raising=False)
    for name in ("MAX_STEPS", "MAX_TOKENS", "TIMEOUT", "PROFILE", "NULL_CONTENT", "K_VAL", "STREAM"):
        monkeypatch.delenv(name, raising=False)


def line(output: str, prefix: str) -> str:
    found = [text for text in output.splitlines() if text.startswith(prefix)]
    assert len(found) == 1, (prefix, output)
    return found[0]


def rows(output: str) -> dict[tuple[str, str], list[str]]:
    """The report's per-rollout rows by (task, method): the columns before the label."""
    table = output.split("records (T: action slots", 1)[1].splitlines()[2:]
    return {(r.split()[0], r.split()[1]): r.split()[2:8] for r in table if r.startswith("  multi_turn")}


def test_native_calls_are_counted_as_the_ground_truth_the_server_plays(
    smoke: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = list(smoke.TASKS)
    truth = {task: sum(len(turn) for turn in ground_truth_calls(load_task(task))) for task in tasks}
    with ScriptedServer(BfclScript(tasks)) as server:
        code = smoke.main(
            ["--base-url", server.base_url, "--model", "m", "--out", str(tmp_path), "--tool-mode", "native"]
        )
        sent = len(server.requests)
    out = capsys.readouterr().out
    assert code == 0
    assert line(out, "rollouts:") == "rollouts: 6 of 6 written, 0 units failed"
    calls = 2 * sum(truth.values())  # both methods play every ground-truth call
    assert line(out, "tool calls read:") == f"tool calls read: {calls} (per format: native {calls}); parse failures: 0"
    assert line(out, "requests:").startswith(f"requests: {sent} (executor ")
    turns = {task: len(ground_truth_calls(load_task(task))) for task in tasks}
    # one closing answer per turn: the script answers "Done." after each turn's calls
    assert line(out, "executor answers without a tool call").endswith(f": {2 * sum(turns.values())}")
    assert "WARNING" not in out
    table = rows(out)
    for task in tasks:
        for method in ("react", "dual-loop"):
            _, call_count, bad, t, fed, y = table[(task, method)]
            assert (int(call_count), int(bad), int(t), int(fed), int(y)) == (
                truth[task],
                0,
                truth[task],
                truth[task] + 1,
                1,
            )
    records = list(read_records(tmp_path / "run" / "records.jsonl"))
    assert {(r.task_id, r.method) for r in records} == set(table)


class HugeUsage(ScriptedServer):
    """The scripted server, its every answer reporting a usage of 10^4000 tokens (issue 45: it crashed the run and
    left its folder unreadable)."""

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        status, payload, headers = super().answer(body)
        if status == 200:
            huge = 10**4000
            payload["usage"] = {"prompt_tokens": huge, "completion_tokens": huge, "total_tokens": 2 * huge}
        return status, payload, headers


def test_a_server_reporting_a_usage_of_ten_to_the_4000_completes_and_says_so(
    smoke: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = list(smoke.TASKS[:1])
    with HugeUsage(BfclScript(tasks)) as server:
        argv = ["--base-url", server.base_url, "--model", "m", "--out", str(tmp_path), "--tool-mode", "native"]
        code = smoke.main([*argv, "--tasks", ",".join(tasks), "--methods", "react"])
        sent = len(server.requests)
        out = capsys.readouterr().out
        assert smoke.main([*argv, "--tasks", ",".join(tasks), "--methods", "react", "--resume"]) == 0  # reads back
    assert code == 0
    assert line(out, "rollouts:") == "rollouts: 1 of 1 written, 0 units failed"
    assert line(out, "tokens:") == "tokens: prompt 0, completion 0"
    assert line(out, "WARNING:").startswith(f"WARNING: {sent} answers reported token counts no call can have")


class TextAgent:
    """The executor writes one ``<tool_call>`` per turn, then "Done."; in a task whose first question is in
    ``malformed`` the call's JSON is broken."""

    def __init__(self, malformed: set[str]) -> None:
        self.malformed = malformed

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        planned = planning_answer(body, "1. look up the stock")
        if planned is not None:
            return planned
        assert not body.get("tools"), "text mode sends the tools in the prompt"
        last = str(body["messages"][-1]["content"])
        if last.startswith("Result of tool call"):
            return text_message("Done.")
        first_user = next(str(m["content"]) for m in body["messages"] if m["role"] == "user")
        if any(first_user.startswith(text) for text in self.malformed):
            return text_message('<tool_call>{"name": "get_stock_info", "arguments": {"symbol": }</tool_call>')
        return text_message('<tool_call>{"name": "get_stock_info", "arguments": {"symbol": "NVDA"}}</tool_call>')


def first_question(task_id: str) -> str:
    from prefix_exec.drivers.bfcl import questions

    turns, _ = questions(load_task(task_id).category)[task_id]
    return turns[0]


def test_text_mode_from_the_environment_reads_calls_and_parse_failures(
    smoke: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad_task = smoke.TASKS[0]
    with ScriptedServer(TextAgent({first_question(bad_task)})) as server:
        monkeypatch.setenv("BASE_URL", server.base_url)
        monkeypatch.setenv("MODEL", "m")
        monkeypatch.setenv("TOOL_MODE", "text")
        monkeypatch.setenv("OUT", str(tmp_path))
        monkeypatch.setenv("METHODS", "react")
        code = smoke.main([])
    out = capsys.readouterr().out
    assert code == 0
    assert "tool_mode = text" in line(out, "smoke-local:")
    # 3 tasks x 2 turns, one call each; the bad task's two calls do not parse
    assert line(out, "tool calls read:") == "tool calls read: 6 (per format: hermes 6); parse failures: 2"
    table = rows(out)
    assert len(table) == 3
    _, calls, bad, t, fed, y = table[(bad_task, "react")]
    assert (calls, bad, t, fed, y) == ("2", "2", "2", "1", "0")
    assert "schema:" in next(r for r in out.splitlines() if r.startswith(f"  {bad_task}"))
    for task in smoke.TASKS[1:]:
        _, calls, bad, t, fed, _ = table[(task, "react")]
        assert (calls, bad, t) == ("2", "0", "2") and int(fed) >= 2  # get_stock_info('NVDA') is executable
    grid = (tmp_path / "smoke-grid.toml").read_text()
    assert 'tool_mode = "text"' in grid and 'methods = ["react"]' in grid


def test_a_model_that_writes_no_call_is_named_and_quoted(
    smoke: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As issue 27 found: a server that returns the call as content, which native mode does not read."""
    answer = '{"name": "get_stock_info", "arguments": {"symbol": "NVDA"}}'
    with ScriptedServer(lambda body: planning_answer(body, "") or text_message(answer)) as server:
        code = smoke.main(
            [
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "--out",
                str(tmp_path),
                "--tool-mode",
                "native",
                "--methods",
                "react",
            ]
        )
    out = capsys.readouterr().out
    assert code == 0
    assert line(out, "tool calls read:") == "tool calls read: 0 (per format: none); parse failures: 0"
    warning = line(out, "WARNING: no tool call was read")
    assert json.dumps(answer) in warning
    for _, _, t, fed, y in (r[1:] for r in rows(out).values()):
        assert (t, fed, y) == ("1", "1", "0")  # the BFCL task needs calls: the no-tool action fails


def test_auto_reads_calls_a_server_leaves_in_content_and_says_so(
    smoke: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What Qwen2.5-Coder-0.5B wrote behind llama-server --jinja: a fenced JSON call in content, no tool_calls."""
    fenced = '```json\n{\n  "name": "get_stock_info",\n  "arguments": {\n    "symbol": "NVDA"\n  }\n}\n```'

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        planned = planning_answer(body, "")
        if planned is not None:
            return planned
        assert body.get("tools"), "auto sends the tools natively"
        return text_message("Done." if body["messages"][-1]["role"] == "tool" else fenced)

    with ScriptedServer(respond) as server:
        code = smoke.main(["--base-url", server.base_url, "--model", "m", "--out", str(tmp_path), "--methods", "react"])
    out = capsys.readouterr().out
    assert code == 0
    assert "tool_mode = auto" in line(out, "smoke-local:")
    assert line(out, "tool calls read:") == "tool calls read: 6 (per format: fenced 6); parse failures: 0"
    assert line(out, "text fallback (tool_mode auto):").endswith("read from the answer's text")


def test_failed_units_are_listed_and_exit_1(
    smoke: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedServer(lambda body: tool_message([])) as server:
        server.faults.extend(["404:model 'nope' not found"] * 3)
        code = smoke.main(
            ["--base-url", server.base_url, "--model", "nope", "--out", str(tmp_path), "--methods", "react"]
        )
    out = capsys.readouterr().out
    assert code == 1
    assert line(out, "rollouts:") == "rollouts: 0 of 3 written, 3 units failed"
    failed = [r for r in out.splitlines() if r.startswith("failed unit")]
    assert len(failed) == 3 and all("404" in r for r in failed)


@pytest.fixture()
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on: bound by the OS, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield port


def test_an_unreachable_server_is_one_line_and_exit_2(
    smoke: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str], closed_port: int
) -> None:
    code = smoke.main(
        ["--base-url", f"http://u:secret@127.0.0.1:{closed_port}/v1", "--model", "m", "--out", str(tmp_path)]
    )
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "smoke-local: error: cannot reach the server at http://***@127.0.0.1"
    )
    assert "secret" not in captured.err and "Traceback" not in captured.err
    assert not (tmp_path / "run").exists()


def test_missing_settings_and_bad_ones_are_input_errors(
    smoke: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert smoke.main([]) == 2
    assert capsys.readouterr().err.startswith("smoke-local: error: give --base-url and --model")
    with ScriptedServer(lambda body: text_message("")) as server:
        code = smoke.main(
            ["--base-url", server.base_url, "--model", "m", "--out", str(tmp_path), "--tool-mode", "telepathy"]
        )
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "tool_mode" in err and "must be one of native, text, auto" in err


def test_help(smoke: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        smoke.main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for variable in ("$BASE_URL", "$MODEL", "$TOOL_MODE", "$TEXT_FORMAT"):
        assert variable in text


def test_the_cpu_profile_sizes_the_grid_and_options_override_it(
    smoke: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PROFILE=cpu: one one-turn task, 2 steps, 128 tokens, k_val 1, 300 s; NULL_CONTENT reaches the model's
    table; a size given as an option (or variable) wins over the profile's."""
    monkeypatch.setenv("PROFILE", "cpu")
    monkeypatch.setenv("NULL_CONTENT", "empty")
    args = smoke.sized(smoke.build_parser().parse_args(["--base-url", "http://127.0.0.1:1/v1", "--model", "m"]))
    grid = tomllib.loads(smoke.grid_text(args, args.tasks.split(","), ["react", "dual-loop"]))
    assert grid["datasets"][0]["tasks"] == ["multi_turn_base_50"]
    assert grid["agent"] == {"max_steps": 2, "k_val": 1}
    model = grid["models"][0]
    assert (model["max_tokens"], model["timeout_s"], model["null_content"]) == (128, 300.0, "empty")
    monkeypatch.setenv("MAX_TOKENS", "64")
    args = smoke.sized(smoke.build_parser().parse_args(["--max-steps", "3"]))
    assert (args.max_steps, args.max_tokens, args.k_val) == (3, 64, 1)
    monkeypatch.delenv("PROFILE")
    monkeypatch.delenv("MAX_TOKENS")
    args = smoke.sized(smoke.build_parser().parse_args([]))
    assert (args.tasks.count(","), args.max_steps, args.max_tokens, args.k_val) == (2, 5, 512, 3)


def worst_case_answer(body: dict[str, Any]) -> dict[str, Any]:
    """Every request costs the most it can: a plan that parses (so the verifier is asked), a verdict that refuses
    it, and an executor that calls a tool at each of a turn's first 2 steps and answers at the third, BFCL's
    limit under max_steps 2 (a turn whose every answer called a tool would end the task: no later turn)."""
    messages: list[dict[str, Any]] = body["messages"]
    if str(messages[0].get("content") or "").startswith("You are the VERIFIER"):
        issue = {"step": 1, "check": "precondition", "message": "the doors are locked"}
        return text_message(json.dumps({"approved": False, "issues": [issue]}))
    planned = planning_answer(body, "")
    if planned is not None:
        return planned
    turn_start = max(i for i, message in enumerate(messages) if message["role"] == "user")
    if sum(1 for message in messages[turn_start:] if message["role"] == "assistant") >= 2:
        return text_message("Done.")
    return tool_message([("lockDoors", {"unlock": True, "door": ["driver"]})])


def test_the_cpu_profile_asks_at_most_8_requests(
    smoke: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound docs/runner.md times the cpu profile by: a server whose every answer asks for more work gets 8
    requests, react's 3 executor calls (BFCL's max_steps + 1) and dual-loop's plan, verification and 3 calls;
    the two-turn task the profile had before would get 16."""
    monkeypatch.setenv("PROFILE", "cpu")
    with ScriptedServer(worst_case_answer) as server:
        code = smoke.main(["--base-url", server.base_url, "--model", "m", "--out", str(tmp_path / "cpu")])
        sent = len(server.requests)
        out = capsys.readouterr().out
        argv = ["--base-url", server.base_url, "--model", "m", "--out", str(tmp_path / "two-turn")]
        assert smoke.main([*argv, "--tasks", "multi_turn_base_100"]) == 0
        sent_two_turns = len(server.requests) - sent
    assert code == 0
    assert (sent, sent_two_turns) == (8, 16)
    assert line(out, "requests:") == "requests: 8 (executor 6, planner 1, verifier 1); 0 answered from the cache"
    assert line(out, "tool calls read:") == "tool calls read: 4 (per format: native 4); parse failures: 0"
