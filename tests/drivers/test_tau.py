"""The tau driver end to end: tau2's user simulator (through litellm) and the agent, both on the loopback server."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

# The simulator and evaluator need tau2's LLM dependencies, beyond the replay set (see docs/runner.md).
from fakes.openai_server import ScriptedServer
from fakes.tau_agent import TauScript
from prefix_exec.agents import METHODS, Agent
from prefix_exec.drivers.base import to_rollout
from prefix_exec.drivers.tau import TauDriver
from prefix_exec.envs.tau import load_domain
from prefix_exec.errors import InputError
from prefix_exec.llm import ChatBackend, EndpointConfig
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel

AIRLINE = ["3", "9", "11"]
RETAIL = ["108"]


def endpoint(server: ScriptedServer, model: str) -> EndpointConfig:
    return EndpointConfig(model=model, base_url=server.base_url, api_key_env="", max_retries=0)


def play(
    domain: str,
    tasks: list[str],
    methods: tuple[str, ...],
    judge: bool = False,
    reveal_ids: bool = True,
    pairs: list[tuple[str, str]] | None = None,
) -> list[Any]:
    """Every method on every task, or only the (method, task) ``pairs`` given (tasks must hold their tasks)."""
    from prefix_exec.envs.tau import TauEnvironment, load_domain

    script = TauScript(TauEnvironment(load_domain(domain)), tasks, reveal_ids=reveal_ids)
    out = []
    with ScriptedServer(script) as server:
        driver = TauDriver(
            domain, user=endpoint(server, "user-sim"), judge=endpoint(server, "judge") if judge else None
        )
        for method, task_id in pairs or [(m, t) for m in methods for t in tasks]:
            agent = Agent(method, ChatBackend(endpoint(server, "agent")))
            rollout = to_rollout(
                driver.play(agent, task_id),
                dataset=driver.dataset,
                task_id=task_id,
                model="agent",
                method=method,
                trial=0,
            )
            out.append((rollout, replay(rollout, driver.env_for(rollout))))
        models = Counter(body["model"] for body in server.requests)
    return [out, models, script]


@pytest.mark.slow
def test_gold_play_succeeds_by_tau2s_evaluator_for_every_variant() -> None:
    # Each variant plays one task and each task is played by two variants: every tau2 evaluation costs about a
    # second (it builds the airline DB three times), and the variants' scripted plays differ only in their planning
    # requests.
    pairs = [(method, AIRLINE[i % len(AIRLINE)]) for i, method in enumerate(METHODS)]
    assert {t for _, t in pairs} == set(AIRLINE)
    results, models, _ = play("airline", AIRLINE, METHODS, pairs=pairs)
    assert [(r.method, r.task_id) for r, _ in results] == pairs
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
    assert first.name == "get_reservation_details"
    assert first.observation is not None
    assert not first.observation.error
    assert "never seen" not in str(first.observation.content)
    assert (record.fed, record.label) == (1, FailureLabel.INFORMATION)
    assert not guarded.actions
    assert guarded.metadata["guard_rejections"] == 1
    assert guarded_record.no_tool


def test_the_judge_is_called_only_when_the_reward_basis_holds_nl_assertions() -> None:
    # Retail task 34 is one of the two tau3 retail tasks graded without NL assertions (112 of 114 have them).
    results, models, script = play("retail", ["34"], ("react",), judge=True)
    ((rollout, record),) = results
    assert rollout.success == 1
    assert record.executable
    assert script.judged == 0
    assert models["judge"] == 0
    assert "nondeterministic" not in rollout.metadata
    assert "judge" not in rollout.metadata


def test_a_tau3_retail_task_is_judged_and_its_records_name_the_tau3_tasks() -> None:
    results, models, script = play("retail", RETAIL, ("react",), judge=True)
    ((rollout, _),) = results
    assert script.judged == 1
    assert models["judge"] == 1  # tau3's task 108 holds NL_ASSERTION
    assert rollout.success == 1
    assert "judge" in rollout.metadata["nondeterministic"]
    assert rollout.metadata["tau2"]["task_set"] == "tau3"
    assert rollout.metadata["tau2"]["version"] == "1.0.1"


def nl_data(tmp_path: Path, task_id: str) -> Path:
    """A tau2 data folder whose retail task ``task_id`` is graded on NL assertions too (tau2's own DB)."""
    from prefix_exec.envs.tau import load_domain

    source = load_domain("retail").data_dir / "tau2" / "domains" / "retail"
    folder = tmp_path / "tau2" / "domains" / "retail"
    folder.mkdir(parents=True)
    for name in ("db.json", "policy.md", "split_tasks.json"):
        (folder / name).symlink_to(source / name)
    tasks = json.loads((source / "tasks.json").read_text(encoding="utf-8"))
    for task in tasks:
        if task["id"] == task_id:
            task["evaluation_criteria"]["reward_basis"] = ["DB", "COMMUNICATE", "NL_ASSERTION"]
            task["evaluation_criteria"]["nl_assertions"] = ["The agent confirms the order."]
    (folder / "tasks.json").write_text(json.dumps(tasks), encoding="utf-8")
    return tmp_path


def test_an_nl_assertion_task_is_judged_nondeterministic_and_its_judge_tokens_are_kept_apart(tmp_path: Path) -> None:
    from prefix_exec.envs.tau import TauEnvironment, load_domain

    data = nl_data(tmp_path, RETAIL[0])
    script = TauScript(TauEnvironment(load_domain("retail", data)), RETAIL, harsh_judge=True)
    with ScriptedServer(script) as server:
        driver = TauDriver("retail", user=endpoint(server, "user-sim"), judge=endpoint(server, "judge"), data=str(data))
        out = driver.play(Agent("react", ChatBackend(endpoint(server, "agent"))), RETAIL[0])
        judge_requests = [b for b in server.requests if b["model"] == "judge"]
    assert script.judged == 1
    assert len(judge_requests) == 1
    assert out.success == 0
    assert out.metadata["reward_breakdown"]["NL_ASSERTION"] == 0.0  # the judge decided Y
    assert "judge" in out.metadata["nondeterministic"]
    judge = out.metadata["judge"]
    prompt = len(json.dumps(judge_requests[0]["messages"])) // 4  # the loopback server's deterministic count
    assert (judge["calls"], judge["prompt_tokens"], judge["model"]) == (1, prompt, "openai/judge")
    assert judge["completion_tokens"] > 0
    assert out.metadata["simulator"]["calls"] == 2
    assert {c.role for c in out.episode.cost} == {"executor"}
    with ScriptedServer(script) as server:  # such a task without a judge cannot be scored
        driver = TauDriver("retail", user=endpoint(server, "user-sim"), data=str(data))
        with pytest.raises(InputError, match="NL_ASSERTION"):
            driver.play(Agent("react", ChatBackend(endpoint(server, "agent"))), RETAIL[0])


# --- against tau2's own orchestrator ---------------------------------------------------------------------

BAD = ("get_reservation_details", {"reservation_id": "ZZZZZZ"})
READ = ("list_all_airports", {})
# Calls tau2 executes that our strict checks reject (an int date; an unknown argument; an unknown tool).
LOOSE = [
    ("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": 20240520}),
    ("get_user_details", {"user_id": "mia_li_3668", "verbose": True}),
    ("refund_everything", {}),
]


def against_tau2(
    prefix: list[list[tuple[str, dict[str, Any]]]], *, max_steps: int = 200, max_errors: int = 10
) -> tuple[Any, Any, Any, Any, list[Any], list[Any]]:
    """Airline task 3 with ``prefix`` before the gold play, through tau2's ``Orchestrator`` + ``LLMAgent`` and
    through our driver, on one scripted server. Returns tau2's simulation, reward info and orchestrator, our
    rollout, and the contents of the tool messages in each agent's last request."""
    from tau2.agent.llm_agent import LLMAgent
    from tau2.orchestrator.orchestrator import Orchestrator
    from tau2.registry import registry

    from prefix_exec.envs.tau import TauEnvironment
    from prefix_exec.envs.tau.domain import import_tau2

    env = TauEnvironment(load_domain("airline"))
    script = TauScript(env, ["3"], prefix=prefix)
    task = import_tau2("tau2.data_model.tasks").Task.model_validate(env.task("3"))
    evaluator = import_tau2("tau2.evaluator.evaluator")
    with ScriptedServer(script) as server:
        args = {"api_base": server.base_url, "api_key": "x", "temperature": 0.0, "num_retries": 0}
        environment = registry.get_env_constructor("airline")()
        agent = LLMAgent(
            tools=environment.get_tools(),
            domain_policy=environment.get_policy(),
            llm="openai/upstream",
            llm_args=dict(args),
        )
        user = import_tau2("tau2.user.user_simulator").UserSimulator(
            instructions=str(task.user_scenario), llm="openai/user-sim", llm_args=dict(args)
        )
        orchestrator = Orchestrator(
            "airline",
            agent=agent,
            user=user,
            environment=environment,
            task=task,
            max_steps=max_steps,
            max_errors=max_errors,
        )
        simulation = orchestrator.run()
        info = evaluator.evaluate_simulation(
            simulation=simulation,
            task=task,
            solo_mode=False,
            domain="airline",
            evaluation_type=evaluator.EvaluationType.ALL,
        )
        driver = TauDriver("airline", user=endpoint(server, "user-sim"), max_steps=max_steps, max_errors=max_errors)
        out = driver.play(Agent("react", ChatBackend(endpoint(server, "agent"))), "3")
        rollout = to_rollout(out, dataset=driver.dataset, task_id="3", model="agent", method="react", trial=0)
        seen = {
            model: [m["content"] for m in body["messages"] if m["role"] == "tool"]
            for body in server.requests
            for model in [body["model"]]
        }
    return simulation, info, orchestrator, rollout, seen["upstream"], seen["agent"]


@pytest.mark.parametrize(
    ("prefix", "limits", "termination", "reward"),
    [
        ([[BAD]] * 10, {}, "too_many_errors", 0.0),  # tau2's max_errors
        ([[BAD, BAD]] * 5, {}, "too_many_errors", 0.0),  # parallel calls: all counted, then checked
        ([[READ]] * 25, {}, "user_stop", 1.0),  # 25 calls in one turn: within tau2's 200 steps
        ([[READ]] * 20, {"max_steps": 30}, "max_steps", 0.0),
        ([[READ]], {"max_steps": 9}, "max_steps", 0.0),  # the user's stop is step 9: tau2's limit wins
        ([[BAD]] * 3, {"max_errors": 3}, "too_many_errors", 0.0),
        ([[call] for call in LOOSE], {}, "user_stop", 1.0),  # tau2 runs them; each gets tau2's own answer
    ],
)
def test_the_conversation_ends_and_scores_as_under_tau2s_orchestrator(
    prefix: list[list[tuple[str, dict[str, Any]]]], limits: dict[str, int], termination: str, reward: float
) -> None:
    simulation, info, orchestrator, rollout, upstream_saw, agent_saw = against_tau2(prefix, **limits)
    assert (simulation.termination_reason.value, info.reward) == (termination, reward)
    assert (rollout.metadata["termination"], rollout.metadata["reward"]) == (termination, reward)
    assert rollout.success == int(reward)
    assert (rollout.metadata["tau2_steps"], rollout.metadata["tau2_errors"], rollout.metadata["tau2_messages"]) == (
        orchestrator.step_count,
        orchestrator.num_errors,
        len(simulation.messages),
    )
    assert agent_saw == upstream_saw  # the same tool answers, word for word
    if termination != "max_steps":  # AgentSettings' 20-call cap never bites; only tau2's horizon caps a turn
        assert rollout.metadata.get("capped_turns") is None


def test_calls_tau2_runs_are_run_live_and_still_fail_the_scored_record() -> None:
    _, _, _, rollout, _, _ = against_tau2([[call] for call in LOOSE])
    first = rollout.actions[0].observation
    assert first is not None
    assert (first.content, first.error) == ("[]", False)
    record = replay(rollout, TauDriver("airline", user=EndpointConfig(model="u", api_key_env="")).env_for(rollout))
    assert (record.fed, record.label) == (1, FailureLabel.SCHEMA)


@pytest.mark.parametrize("limits", [{"max_steps": 0}, {"max_errors": 0}, {"max_turns": 0}])
def test_horizon_settings_are_checked(limits: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=">= 1"):
        TauDriver("airline", user=EndpointConfig(model="u", api_key_env=""), **limits)


@pytest.mark.slow
def test_grid_with_a_tau_dataset(tmp_path: Any) -> None:
    from prefix_exec.envs.tau import TauEnvironment, load_domain
    from prefix_exec.records.codec import read_records, read_rollouts
    from prefix_exec.runner.run_dir import run_grid

    # One task: two trials of two methods are enough to see the seeds and the grid's bookkeeping.
    script = TauScript(TauEnvironment(load_domain("airline")), AIRLINE[:1])
    with ScriptedServer(script) as server:
        grid = tmp_path / "grid.toml"
        grid.write_text(
            f"""
trials = 2
methods = ["react", "guarded-react"]
[[datasets]]
name = "tau3-airline"
kind = "tau"
domain = "airline"
user_model = "user-sim"
tasks = {["airline/" + t for t in AIRLINE[:1]]!r}
[[models]]
model = "agent"
base_url = "{server.base_url}"
api_key_env = ""
[[models]]
model = "user-sim"
condition = false
base_url = "{server.base_url}"
api_key_env = ""
""".replace("'", '"')
        )
        report = run_grid(grid, tmp_path / "run", max_concurrency=2)
        user_seeds = {b.get("seed") for b in server.requests if b["model"] == "user-sim"}
    records = list(read_records(tmp_path / "run" / "records.jsonl"))
    rollouts = list(read_rollouts(tmp_path / "run" / "rollouts.jsonl"))
    assert report.written == 4
    assert report.failed == 0
    assert user_seeds == {0, 1} == {r.metadata["user_seed"] for r in rollouts}  # the grid seed + trial
    assert all(r.executable and r.success == 1 for r in records)
    assert all(c.role == "executor" for r in rollouts for c in r.cost)  # simulator tokens are kept apart
    assert all(r.metadata["simulator"]["calls"] == 2 for r in rollouts)


class SiblingScript(TauScript):
    """The user gives only the user id; the agent's first answer asks for the user's details and, in the same
    answer, for a reservation whose id only that (not yet seen) result holds."""

    USER, RESERVATION = "amelia_davis_8890", "8C8K4E"

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        from fakes.openai_server import text_message, tool_message

        messages = body["messages"]
        system = str(messages[0].get("content") or "")
        if "<scenario>" in system:
            if sum(1 for m in messages if m["role"] == "user") >= 2:
                return text_message("Thanks, that is all. ###STOP###")
            return text_message(f"Hello, [case 41]. I am {self.USER}.")
        if "<policy>" in system and body.get("tools"):
            if not any(m["role"] == "assistant" and m.get("tool_calls") for m in messages):
                return tool_message(
                    [
                        ("get_user_details", {"user_id": self.USER}),
                        ("get_reservation_details", {"reservation_id": self.RESERVATION}),
                    ]
                )
            return text_message("Done.")
        return super().__call__(body)


def test_a_parallel_call_cannot_use_its_siblings_result_live_or_scored() -> None:
    from prefix_exec.envs.tau import TauEnvironment

    with ScriptedServer(SiblingScript(TauEnvironment(load_domain("airline")), ["41"])) as server:
        driver = TauDriver("airline", user=endpoint(server, "user-sim"))
        scored = {}
        for method in ("react", "guarded-react"):
            rollout = to_rollout(
                driver.play(Agent(method, ChatBackend(endpoint(server, "agent"))), "41"),
                dataset=driver.dataset,
                task_id="41",
                model="agent",
                method=method,
                trial=0,
            )
            scored[method] = (rollout, replay(rollout, driver.env_for(rollout)))
    react, record = scored["react"]
    assert [a.call_id for a in react.actions] == ["t0.s0.c0", "t0.s0.c1"]
    assert (record.fed, record.label) == (2, FailureLabel.INFORMATION)
    guarded, guarded_record = scored["guarded-react"]
    assert [a.name for a in guarded.actions] == ["get_user_details"]
    assert guarded.metadata["guard_rejections"] == 1
    assert guarded_record.executable


def test_tau_planners_see_the_goal_tools_a_state_description_and_the_domain_policy() -> None:
    """Paper 2.5: the planner proposes a plan from the goal, the tool schemas, a compact state summary; on tau
    the executor's system prompt is the domain policy, so planner and verifier get it too."""
    from prefix_exec.drivers.tau import describe_state
    from prefix_exec.envs.tau import TauEnvironment

    domain = load_domain("airline")
    script = TauScript(TauEnvironment(domain), ["3"])
    with ScriptedServer(script) as server:
        driver = TauDriver("airline", user=endpoint(server, "user-sim"))
        rollout = driver.play(Agent("dual-loop", ChatBackend(endpoint(server, "agent"))), "3")
        requests = list(server.requests)
    assert rollout.success == 1
    planning = [b for b in requests if b["model"] == "agent" and not b.get("tools")]
    assert len(planning) >= 2  # the planner and the verifier
    description = describe_state("airline", TauEnvironment(domain).initial_db("3"))
    assert description.startswith("airline database with ")
    assert "users: 500" in description
    assert "reservations: 2000" in description
    policy_line = next(line for line in domain.policy.splitlines() if len(line) > 40)
    for body in planning:
        text = json.dumps(body["messages"], ensure_ascii=False)
        assert "Policy (the executor must follow it)" in text
        assert json.dumps(policy_line)[1:-1] in text
        assert json.dumps(description)[1:-1] in text
        assert "Goal:" in text
        assert "Tools:" in text
