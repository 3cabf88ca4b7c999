"""Deep values in a run (issue 45, item 1): a value nested past json_types.MAX_DEPTH fails its unit the same way
under every launcher (a thread, a spawned process, a Ray actor), where Ray used to die pickling it and the local
launcher wrote a line its own ``--resume`` then refused; a spec nested that deep is refused where it is read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from fakes.openai_server import ScriptedServer, text_message, tool_message
from prefix_exec.cli import main
from prefix_exec.json_types import MAX_DEPTH
from prefix_exec.records.codec import read_records, read_rollouts
from prefix_exec.runner.run_dir import run_grid
from runner.test_run import rows, strip_latency, unit_key

if TYPE_CHECKING:
    from runner.conftest import RaySession

#: Past MAX_DEPTH, and past what pickle takes (800 levels fail it), below what json reads and writes (1,490).
DEPTH = 1000

HOOKS = f"""
def deep(state, args):
    value = "bottom"
    for _ in range({DEPTH}):
        value = [value]
    return {{"value": value}}


def shallow(state, args):
    return {{"value": [[["bottom"]]]}}
"""

SPEC = """name: nested
hooks: hooks.py
tasks:
  deep-task: {description: "call deep"}
  shallow-task: {description: "call shallow"}
tools:
  - name: deep
    parameters: {type: object}
    effect: deep
  - name: shallow
    parameters: {type: object}
    effect: shallow
"""


def respond(body: dict[str, Any]) -> dict[str, Any]:
    """One call of the tool the task names, then an answer."""
    messages = body["messages"]
    goal = next(str(m["content"]) for m in messages if m["role"] == "user")
    if not any(m["role"] == "assistant" for m in messages):
        return tool_message([(goal.removeprefix("call "), {})])
    return text_message("Done.")


def write_grid(folder: Path, base_url: str, spec: str = SPEC) -> Path:
    (folder / "hooks.py").write_text(HOOKS)
    (folder / "spec.yaml").write_text(spec)
    grid = folder / "grid.toml"
    grid.write_text(
        f"""methods = ["react"]
[[datasets]]
name = "nested"
kind = "custom"
spec = "{folder / "spec.yaml"}"
[[models]]
name = "m"
model = "m"
base_url = "{base_url}"
api_key_env = ""
max_retries = 0
"""
    )
    return grid


def failures(out: Path) -> dict[str, str]:
    return {row["task_id"]: row["error"] for row in rows(out / "failures.jsonl")}


def check_deep_unit_failed(out: Path) -> None:
    """The deep unit failed naming the part, the shallow one is written, and the folder reads back whole."""
    errors = failures(out)
    assert list(errors) == ["deep-task"]
    deep = f"actions[0].observation.content is nested more than {MAX_DEPTH} lists and objects deep"
    assert deep in errors["deep-task"]
    assert [r.task_id for r in read_rollouts(out / "rollouts.jsonl")] == ["shallow-task"]
    assert [r.task_id for r in read_records(out / "records.jsonl")] == ["shallow-task"]


def test_a_result_too_deep_to_travel_fails_its_unit_and_the_folder_resumes(tmp_path: Path) -> None:
    with ScriptedServer(respond) as server:
        grid = write_grid(tmp_path, server.base_url)
        report = run_grid(grid, tmp_path / "run", max_concurrency=2)
        assert (report.written, report.failed) == (1, 1)
        check_deep_unit_failed(tmp_path / "run")
        again = run_grid(grid, tmp_path / "run", resume=True, max_concurrency=2)  # the folder is not refused
    assert (again.resumed, again.written, again.failed) == (1, 0, 1)
    check_deep_unit_failed(tmp_path / "run")


@pytest.mark.slow
def test_ray_fails_the_deep_unit_as_threads_do_and_writes_the_same_rows(
    tmp_path: Path, ray_session: RaySession
) -> None:
    with ScriptedServer(respond) as server:
        grid = write_grid(tmp_path, server.base_url)
        local = run_grid(grid, tmp_path / "local", max_concurrency=2)
        remote = run_grid(grid, tmp_path / "ray", launcher="ray", max_concurrency=2)
    assert (local.written, local.failed) == (remote.written, remote.failed) == (1, 1)
    check_deep_unit_failed(tmp_path / "ray")
    assert failures(tmp_path / "ray") == failures(tmp_path / "local")
    for name in ("rollouts.jsonl", "records.jsonl"):
        here = {unit_key(r): strip_latency(r) for r in rows(tmp_path / "local" / name)}
        there = {unit_key(r): strip_latency(r) for r in rows(tmp_path / "ray" / name)}
        assert here == there


def test_a_spec_nested_past_the_bound_is_refused_before_any_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nested: Any = "bottom"
    for _ in range(MAX_DEPTH + 1):
        nested = [nested]
    spec = SPEC + "initial_state:\n  notes: " + json.dumps(nested) + "\n"
    grid = write_grid(tmp_path, "http://127.0.0.1:9/v1", spec)
    assert main(["run", str(grid), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'spec.yaml'}: the tool spec is nested more than {MAX_DEPTH} lists and objects deep" in err
    assert "Traceback" not in err
    assert not (tmp_path / "run" / "rollouts.jsonl").exists()
