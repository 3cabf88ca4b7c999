"""All five variants end to end on the ticketing example, through the official client and a loopback server."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from fakes import ticketing_agent
from fakes.openai_server import ScriptedServer, usage_of
from prefix_exec.agents import METHODS, Agent, AgentSettings
from prefix_exec.drivers.base import to_rollout
from prefix_exec.drivers.custom import CustomDriver
from prefix_exec.llm import ChatBackend, EndpointConfig
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel, PrefixRecord, Rollout


@pytest.fixture(scope="module")
def server() -> Any:
    with ScriptedServer(ticketing_agent.respond) as s:
        yield s


def backend(server: ScriptedServer, model: str = "exec", **kw: Any) -> ChatBackend:
    return ChatBackend(EndpointConfig(model=model, base_url=server.base_url, api_key_env="", **kw))


def run(server: ScriptedServer, ticketing: Path, method: str, task: str, **kw: Any) -> tuple[Rollout, PrefixRecord]:
    driver = CustomDriver(ticketing / "tools.yaml")
    verifier = kw.pop("verifier", None)
    agent = Agent(method, backend(server), verifier=verifier, settings=AgentSettings(**kw))
    rollout = to_rollout(
        driver.play(agent, task), dataset="ticketing", task_id=task, model="exec", method=method, trial=0
    )
    return rollout, replay(rollout, driver.environment())


def roles(rollout: Rollout) -> Counter[str]:
    return Counter(c.role for c in rollout.cost)


@pytest.mark.parametrize("method", METHODS)
def test_every_variant_runs_every_task(server: ScriptedServer, ticketing: Path, method: str) -> None:
    driver = CustomDriver(ticketing / "tools.yaml")
    for task in driver.task_ids():
        rollout, record = run(server, ticketing, method, task)
        assert rollout.transcript
        assert rollout.cost
        executor_calls = roles(rollout)["executor"]
        assert (
            executor_calls
            == len(ticketing_agent.SCRIPTS[next(m for m in ticketing_agent.SCRIPTS if m in driver.descriptions[task])])
            + 1
        )
        if task == "what-can-you-do":
            assert record.no_tool
            assert record.executable
            assert rollout.success == 1
        if task in ("open-vpn-followup", "new-laptop", "cleanup-duplicate"):
            assert record.executable
            assert record.T == len(rollout.actions)
            assert rollout.success == 1


def test_react_records_the_rejected_call_and_replay_agrees(server: ScriptedServer, ticketing: Path) -> None:
    rollout, record = run(server, ticketing, "react", "close-printer")
    assert [a.name for a in rollout.actions] == ["close_ticket", "login", "close_ticket"]
    assert rollout.actions[0].observation is not None
    assert rollout.actions[0].observation.error
    assert (record.T, record.fed, record.label, rollout.success) == (3, 1, FailureLabel.PRECONDITION, 0)


def test_guarded_react_never_executes_the_rejected_call(server: ScriptedServer, ticketing: Path) -> None:
    rollout, record = run(server, ticketing, "guarded-react", "close-printer")
    assert [a.name for a in rollout.actions] == ["login", "close_ticket"]
    assert record.executable
    assert rollout.success == 1
    assert rollout.metadata["guard_rejections"] == 1
    feedback = [m for m in rollout.transcript or () if "pre-execution check rejected" in str(m.get("content"))]
    assert len(feedback) == 1
    assert "precondition" in str(feedback[0]["content"])


def test_dual_loop_revises_until_the_verifier_approves(server: ScriptedServer, ticketing: Path) -> None:
    rollout, _ = run(server, ticketing, "dual-loop", "close-printer")
    assert roles(rollout) == Counter({"planner": 2, "verifier": 2, "executor": 4})
    assert rollout.metadata["plan_approved"] == [True]
    assert rollout.metadata["verification_rounds"] == [2]
    assert [a.name for a in rollout.actions] == ["close_ticket", "login", "close_ticket"]  # the executor's choice


def test_dual_loop_with_one_round_keeps_the_rejected_plan_and_its_verdict(
    server: ScriptedServer, ticketing: Path
) -> None:
    rollout, _ = run(server, ticketing, "dual-loop", "close-printer", k_val=1, verifier=backend(server, "judge"))
    assert roles(rollout) == Counter({"planner": 1, "verifier": 1, "executor": 4})
    assert {c.model for c in rollout.cost if c.role == "verifier"} == {"judge"}
    assert rollout.metadata["plan_approved"] == [False]
    assert rollout.metadata["verifier_model"] == "judge"
    control = [m for m in rollout.transcript or () if "PLAN (control signal)" in str(m.get("content"))]
    assert len(control) == 1
    assert "not approved" in control[0]["content"]
    assert control[0]["role"] == "user"


def test_plan_conditioned_gives_the_plan_to_the_executor_unverified(server: ScriptedServer, ticketing: Path) -> None:
    rollout, _ = run(server, ticketing, "plan-conditioned", "new-laptop")
    assert roles(rollout) == Counter({"planner": 1, "executor": 3})
    control = [m for m in rollout.transcript or () if "PLAN (control signal)" in str(m.get("content"))]
    assert '"tool": "create_ticket"' in control[0]["content"]


def test_only_the_executor_sees_tools_and_cost_adds_up_per_role(server: ScriptedServer, ticketing: Path) -> None:
    before = len(server.requests)
    rollouts = [run(server, ticketing, m, "close-printer")[0] for m in METHODS]
    requests = server.requests[before:]
    expected: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for body in requests:
        system = str(body["messages"][0]["content"])
        role = (
            "planner"
            if system.startswith("You are the PLANNER")
            else "verifier"
            if system.startswith("You are the VERIFIER")
            else "executor"
        )
        if not body.get("tools") and "Before acting" in str(body["messages"][-1]["content"]):
            role = "planner"  # prompt-planning: the executor model writes the plan in the conversation
        assert bool(body.get("tools")) == (role == "executor")
        usage = usage_of(body, ticketing_agent.respond(body))
        for i, key in enumerate(("prompt_tokens", "completion_tokens")):
            expected[role][i] += usage[key]
        expected[role][2] += usage["completion_tokens_details"]["reasoning_tokens"]
    got: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for rollout in rollouts:
        for c in rollout.cost:
            got[c.role][0] += c.prompt_tokens
            got[c.role][1] += c.completion_tokens
            got[c.role][2] += c.reasoning_tokens
    assert dict(got) == dict(expected)
    assert set(got) == {"planner", "verifier", "executor"}
    assert sum(len(r.cost) for r in rollouts) == len(requests)


@pytest.mark.parametrize("tool_mode", ["native", "text"])
@pytest.mark.parametrize("method", METHODS)
def test_roles_alternate_with_one_leading_system_message(
    server: ScriptedServer, ticketing: Path, method: str, tool_mode: str
) -> None:
    before = len(server.requests)
    driver = CustomDriver(ticketing / "tools.yaml")
    for task in ("close-printer", "triage-vpn"):  # triage-vpn calls two tools in one step
        driver.play(Agent(method, backend(server, tool_mode=tool_mode)), task)
    for body in server.requests[before:]:
        roles = [m["role"] for m in body["messages"]]
        assert "system" not in roles[1:]
        pairs = set(itertools.pairwise(roles))
        assert ("user", "user") not in pairs, roles
        assert ("assistant", "assistant") not in pairs, roles


def test_malformed_tool_call_json_is_a_schema_failure(server: ScriptedServer, ticketing: Path, tmp_path: Path) -> None:
    spec = tmp_path / "tools.yaml"
    text = (ticketing / "tools.yaml").read_text().replace("hooks: hooks.py", f"hooks: {ticketing / 'hooks.py'}")
    spec.write_text(text.replace("tasks:\n", 'tasks:\n  broken:\n    description: "BROKEN"\n', 1))
    driver = CustomDriver(spec)
    agent = Agent("react", backend(server))
    rollout = to_rollout(
        driver.play(agent, "broken"), dataset="t", task_id="broken", model="m", method="react", trial=0
    )
    record = replay(rollout, driver.environment())
    assert rollout.actions[0].parse_error
    assert (record.fed, record.label) == (1, FailureLabel.SCHEMA)


def test_text_tool_mode_runs_the_same_rollout(server: ScriptedServer, ticketing: Path) -> None:
    driver = CustomDriver(ticketing / "tools.yaml")
    agent = Agent("react", backend(server, tool_mode="text"))
    rollout = to_rollout(
        driver.play(agent, "open-vpn-followup"),
        dataset="t",
        task_id="open-vpn-followup",
        model="m",
        method="react",
        trial=0,
    )
    assert [(a.name, dict(a.arguments)) for a in rollout.actions] == [
        ("login", {"username": "sam"}),
        ("search_tickets", {"query": "vpn"}),
        ("add_comment", {"ticket_id": "T-1001", "body": "A fix is rolling out."}),
    ]
    assert replay(rollout, driver.environment()).executable
