"""The tau driver end to end: tau2's user simulator (through litellm) and the agent, both on the loopback server."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

# The simulator and evaluator need tau2's LLM dependencies, beyond the replay set (see docs/runner.md).
pytest.importorskip("litellm")
pytest.importorskip("pandas")

from fakes.openai_server import ScriptedServer
from fakes.tau_agent import TauScript
from prefix_exec.agents import METHODS, Agent
from prefix_exec.drivers.base import to_rollout
from prefix_exec.drivers.tau import TauDriver
from prefix_exec.llm import ChatBackend, EndpointConfig
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel

AIRLINE = ["3", "9", "11"]
RETAIL = ["108"]


def endpoint(server: ScriptedServer, model: str) -> EndpointConfig:
    return EndpointConfig(model=model, base_url=server.base_url, api_key_env="", max_retries=0)


def play(domain: str, tasks: list[str], methods: tuple[str, ...], judge: bool = False,
         reveal_ids: bool = True) -> list[Any]:
    from prefix_exec.envs.tau import TauEnvironment, load_domain

    script = TauScript(TauEnvironment(load_domain(domain)), tasks, reveal_ids=reveal_ids)
    out = []
    with ScriptedServer(script) as server:
        driver = TauDriver(domain, user=endpoint(server, "user-sim"),
                           judge=endpoint(server, "judge") if judge else None)
        for method in methods:
            for task_id in tasks:
                agent = Agent(method, ChatBackend(endpoint(server, "agent")))
                rollout = to_rollout(driver.run(agent, task_id), dataset=driver.dataset, task_id=task_id,
                                     model="agent", method=method, trial=0)
                out.append((rollout, replay(rollout, driver.env_for(rollout))))
        models = Counter(body["model"] for body in server.requests)
    return [out, models, script]


def test_gold_play_succeeds_by_tau2s_evaluator_for_every_variant() -> None:
    results, models, _ = play("airline", AIRLINE, METHODS)
    assert len(results) == len(AIRLINE) * len(METHODS)
    for rollout, record in results:
        assert rollout.metadata["termination"] == "user_stop"
        assert rollout.success == 1, rollout.metadata
        assert record.executable, record.reason
        assert {c.role for c in rollout.cost} <= {"planner", "verifier", "executor"}
        assert rollout.metadata["simulator"]["calls"] == 2  # the case, then the stop
        assert "###STOP###" in str((rollout.transcript or ())[-1].get("content"))
    assert models["user-sim"] == 2 * len(results)


def test_an_identifier_the_user_never_gave_is_scored_as_information_and_only_the_guard_stops_it() -> None:
    results, _, _ = play("airline", ["6"], ("react", "guarded-react"), reveal_ids=False)
    (react, record), (guarded, guarded_record) = results
    first = react.actions[0]
    # Live, react gets tau2's answer (the reservation exists); only the scored record flags the unseen id.
    assert first.name == "get_reservation_details" and first.observation is not None and not first.observation.error
    assert "never seen" not in str(first.observation.content)
    assert (record.fed, record.label) == (1, FailureLabel.INFORMATION)
    assert not guarded.actions and guarded.metadata["guard_rejections"] == 1 and guarded_record.no_tool


def test_retail_with_a_judge_is_marked_nondeterministic() -> None:
    results, models, script = play("retail", RETAIL, ("react",), judge=True)
    ((rollout, record),) = results
    assert rollout.success == 1 and record.executable
    assert "judge" in rollout.metadata["nondeterministic"] and script.judged == 1 and models["judge"] == 1


def test_grid_with_a_tau_dataset(tmp_path: Any) -> None:
    from prefix_exec.envs.tau import TauEnvironment, load_domain
    from prefix_exec.io import read_records, read_rollouts
    from prefix_exec.runner.run import run_grid

    script = TauScript(TauEnvironment(load_domain("airline")), AIRLINE[:2])
    with ScriptedServer(script) as server:
        grid = tmp_path / "grid.toml"
        grid.write_text(f"""
trials = 2
methods = ["react", "guarded-react"]
[[datasets]]
name = "tau3-airline"
kind = "tau"
domain = "airline"
user_model = "user-sim"
tasks = {AIRLINE[:2]!r}
[[models]]
model = "agent"
base_url = "{server.base_url}"
api_key_env = ""
[[models]]
model = "user-sim"
condition = false
base_url = "{server.base_url}"
api_key_env = ""
""".replace("'", '"'))
        report = run_grid(grid, tmp_path / "run", max_concurrency=2)
        user_seeds = {b.get("seed") for b in server.requests if b["model"] == "user-sim"}
    records = list(read_records(tmp_path / "run" / "records.jsonl"))
    rollouts = list(read_rollouts(tmp_path / "run" / "rollouts.jsonl"))
    assert report.written == 8 and report.failed == 0
    assert user_seeds == {0, 1} == {r.metadata["user_seed"] for r in rollouts}  # the grid seed + trial
    assert all(r.executable and r.success == 1 for r in records)
    assert all(c.role == "executor" for r in rollouts for c in r.cost)  # simulator tokens are kept apart
    assert all(r.metadata["simulator"]["calls"] == 2 for r in rollouts)
