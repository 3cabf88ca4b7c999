"""The BFCL multi-turn driver end to end: scripted ground-truth play through the official client."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from fakes.bfcl_agent import BfclScript
from fakes.openai_server import ScriptedServer, tool_message
from prefix_exec.agents import METHODS, Agent
from prefix_exec.drivers.base import to_rollout
from prefix_exec.drivers.bfcl import REVEAL_MESSAGE, BfclDriver, questions, reveal_message
from prefix_exec.envs.bfcl import load_task
from prefix_exec.llm import ChatBackend, EndpointConfig
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel

TASKS = ["multi_turn_base_0", "multi_turn_miss_func_1", "multi_turn_long_context_2", "multi_turn_miss_param_3"]


@pytest.fixture(scope="module")
def server() -> Any:
    with ScriptedServer(BfclScript(TASKS)) as s:
        yield s


def run(server: ScriptedServer, method: str, task_id: str) -> Any:
    driver = BfclDriver()
    agent = Agent(method, ChatBackend(EndpointConfig(model="m", base_url=server.base_url, api_key_env="")))
    outcome = driver.run(agent, task_id)
    rollout = to_rollout(outcome, dataset="bfcl", task_id=task_id, model="m", method=method, trial=0)
    return rollout, replay(rollout, driver.environment())


@pytest.mark.parametrize("method", METHODS)
def test_ground_truth_play_is_executable_and_successful_for_every_variant(server: ScriptedServer, method: str) -> None:
    for task_id in TASKS:
        rollout, record = run(server, method, task_id)
        turns, _ = questions(load_task(task_id).category)[task_id]
        assert rollout.metadata["turns"] == len(turns)
        assert record.executable, (task_id, record.reason)
        assert rollout.success == 1, rollout.metadata.get("success_reason")
        assert {a.turn for a in rollout.actions} <= set(range(len(turns)))
        assert all(a.call_id and a.call_id.startswith(f"t{a.turn}.s") for a in rollout.actions)


def test_miss_func_reveals_the_held_back_tool_at_its_turn(server: ScriptedServer) -> None:
    task_id = "multi_turn_miss_func_1"
    _, held = questions("miss_func")[task_id]
    ((turn, names),) = held.items()
    before = len(server.requests)
    rollout, _ = run(server, "react", task_id)
    requests = server.requests[before:]
    assert reveal_message() == REVEAL_MESSAGE
    for body in requests:
        users = [m for m in body["messages"] if m["role"] == "user"]
        offered = {t["function"]["name"] for t in body["tools"]}
        revealed = len(users) > int(turn)
        assert set(names) <= offered if revealed else not set(names) & offered
        if revealed:
            assert users[int(turn)]["content"] == REVEAL_MESSAGE
    assert Counter(c.role for c in rollout.cost) == Counter({"executor": len(requests)})


def test_tools_follow_bfcl_type_mapping() -> None:
    from prefix_exec.drivers.bfcl import tool_schema
    from prefix_exec.envs.bfcl.tasks import function_docs

    schema = tool_schema(function_docs("MathAPI")["logarithm"]).parameters
    assert schema["type"] == "object"
    types = {k: v["type"] for k, v in schema["properties"].items()}
    assert set(types.values()) <= {"integer", "number", "string", "boolean", "array", "object"}
    assert any(v.get("format") == "float" for v in schema["properties"].values())


def test_a_failing_call_fixes_fed_and_the_rest_still_runs() -> None:
    script = BfclScript(["multi_turn_base_0"])

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        steps = [m for m in body["messages"] if m["role"] == "assistant"]
        if not steps and len([m for m in body["messages"] if m["role"] == "user"]) == 1:
            return tool_message([("cd", {"folder": "no_such_folder"})])
        return script(body)

    with ScriptedServer(respond) as server:
        rollout, record = run(server, "react", "multi_turn_base_0")
    assert rollout.actions[0].name == "cd" and rollout.actions[0].observation.error
    assert (record.fed, record.label) == (1, FailureLabel.DEPENDENCY)
    assert len(rollout.actions) > 1  # the agent went on after the failure (recovery is kept for reports)


def test_grid_with_a_bfcl_dataset(server: ScriptedServer, tmp_path: Any) -> None:
    from prefix_exec.io import read_records
    from prefix_exec.runner.run import run_grid

    grid = tmp_path / "grid.toml"
    grid.write_text(f"""
methods = ["react", "dual-loop"]
[[datasets]]
name = "bfcl"
kind = "bfcl"
tasks = {TASKS[:2]!r}
[[models]]
model = "m"
base_url = "{server.base_url}"
api_key_env = ""
""".replace("'", '"'))
    report = run_grid(grid, tmp_path / "run", max_concurrency=2)
    records = list(read_records(tmp_path / "run" / "records.jsonl"))
    assert report.written == 4 and all(r.executable and r.success == 1 for r in records)
