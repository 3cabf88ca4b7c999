"""The shared initial plan and the accept-all control, on the ticketing example and a loopback server whose
planner answers differently on every request (so a plan can only be the same by being shared)."""

from __future__ import annotations

import itertools
import json
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fakes import ticketing_agent
from fakes.openai_server import ScriptedServer, text_message
from prefix_exec.agents import Agent, AgentSettings
from prefix_exec.agents.shared_plan import MemoryPlanBook, SharedPlan, plan_digest
from prefix_exec.drivers.base import to_rollout
from prefix_exec.drivers.custom import CustomDriver
from prefix_exec.llm import ChatBackend, EndpointConfig
from prefix_exec.trajectory import CallCost, Rollout

PLANNING = ("plan-conditioned", "dual-loop", "dual-loop-accept-all")


class Counting:
    """The ticketing script, except that every planner answer carries a request number: two planner calls
    never give the same plan text. ``planner`` and ``verifier`` count the requests of each role."""

    def __init__(self) -> None:
        self.numbers = itertools.count(1)
        self.lock = threading.Lock()
        self.seen: Counter[str] = Counter()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        system = str(body["messages"][0].get("content") or "")
        answer = ticketing_agent.respond(body)
        if system.startswith("You are the PLANNER"):
            with self.lock:
                self.seen["planner"] += 1
                n = next(self.numbers)
            plan = json.loads(str(answer["content"]).removeprefix("```json\n").removesuffix("\n```"))
            return text_message(json.dumps({**plan, "request": n}))
        if system.startswith("You are the VERIFIER"):
            with self.lock:
                self.seen["verifier"] += 1
        return answer


def run(url: str, ticketing: Path, method: str, task: str, **kw: Any) -> Rollout:
    driver = CustomDriver(ticketing / "tools.yaml")
    backend = ChatBackend(EndpointConfig(model="exec", base_url=url, api_key_env=""))
    plans = kw.pop("plans", None)
    agent = Agent(method, backend, settings=AgentSettings(**kw), plans=plans)
    return to_rollout(driver.play(agent, task), dataset="ticketing", task_id=task, model="exec", method=method, trial=0)


def test_planning_variants_of_one_unit_share_the_initial_plan(ticketing: Path) -> None:
    script = Counting()
    book = MemoryPlanBook()
    with ScriptedServer(script) as server:
        first, second, third = (run(server.base_url, ticketing, m, "new-laptop", plans=book) for m in PLANNING)
    # one planner request made the plan; the other two took it from the book
    assert script.seen["planner"] == 1
    digests = [r.metadata["plan_digest"] for r in (first, second, third)]
    assert digests[0] == digests[1] == digests[2]
    (((turn, request), stored),) = book.plans.items()
    assert turn == 0
    assert len(request) == 64  # the planner request's SHA-256
    assert digests[0] == [stored.digest] == [plan_digest(stored.content)]
    assert '"request": 1' in stored.content
    assert [r.metadata["plan_source"] for r in (first, second, third)] == [["generated"], ["shared"], ["shared"]]
    assert {tuple(r.metadata["plan_generated_by"]) for r in (first, second, third)} == {("plan-conditioned",)}
    # every rollout is charged the one planner call, as it was made
    planner_costs = [[c for c in r.cost if c.role == "planner"] for r in (first, second, third)]
    assert planner_costs == [[stored.cost]] * 3
    note = next(e for e in second.transcript or () if e.get("agent_role") == "planner")
    assert note["plan"] == {"digest": digests[0][0], "source": "shared", "generated_by": "plan-conditioned"}


def test_without_a_book_each_run_asks_its_own_plan(ticketing: Path) -> None:
    """The contrast: this server's second answer differs, so only the book makes the plans equal."""
    script = Counting()
    with ScriptedServer(script) as server:
        a, b = (run(server.base_url, ticketing, m, "new-laptop") for m in PLANNING[:2])
    assert script.seen["planner"] == 2
    assert a.metadata["plan_digest"] != b.metadata["plan_digest"]
    assert a.metadata["plan_source"] == b.metadata["plan_source"] == ["generated"]


def test_a_plan_stored_meanwhile_by_another_unit_wins_and_the_lost_call_is_counted(ticketing: Path) -> None:
    steps = [{"tool": "create_ticket", "arguments": {"title": "Laptop fan noise"}, "bindings": {}}]
    theirs = SharedPlan(json.dumps({"steps": steps}), CallCost("planner", 7, 3, latency_s=0.5), "dual-loop")

    class Racing:
        """Another machine stored its plan while this one's planner call ran."""

        def obtain(self, turn: int, request: str, make: Callable[[], SharedPlan]) -> SharedPlan:
            make()
            return theirs

    with ScriptedServer(Counting()) as server:
        rollout = run(server.base_url, ticketing, "plan-conditioned", "new-laptop", plans=Racing())
    assert rollout.metadata["plans_discarded"] == 1
    assert rollout.metadata["plan_digest"] == [theirs.digest]
    assert rollout.metadata["plan_source"] == ["shared"]
    assert [c for c in rollout.cost if c.role == "planner"] == [theirs.cost]
    control = next(m for m in rollout.transcript or () if "PLAN (control signal)" in str(m.get("content")))
    assert "create_ticket" in str(control["content"])


def executor_requests(server: ScriptedServer, start: int, stop: int) -> list[Any]:
    return [b["messages"] for b in server.requests[start:stop] if b.get("tools")]


@pytest.mark.parametrize("task", ["close-printer", "new-laptop", "open-vpn-followup"])
def test_the_control_approves_in_one_round_without_a_verifier_and_sends_plan_conditioneds_prompts(
    ticketing: Path, task: str
) -> None:
    """close-printer's first plan is one the verifier rejects; the rule approves it all the same."""
    script = Counting()
    book = MemoryPlanBook()
    with ScriptedServer(script) as server:
        start = len(server.requests)
        plan = run(server.base_url, ticketing, "plan-conditioned", task, plans=book)
        middle = len(server.requests)
        control = run(server.base_url, ticketing, "dual-loop-accept-all", task, plans=book, k_val=4)
        after = len(server.requests)
        dual = run(server.base_url, ticketing, "dual-loop", task, plans=book)
    planned = len(control.metadata["planned_turns"])
    assert planned >= 1
    assert control.metadata["verification_rounds"] == [1] * planned
    assert control.metadata["plan_approved"] == [True] * planned
    assert (control.metadata["k_val"], control.metadata["verifier_rule"]) == (4, "accept-all")
    assert "verifier_model" not in control.metadata
    assert not [c for c in control.cost if c.role == "verifier"]
    assert all(not str(b["messages"][0]["content"]).startswith("You are the") for b in server.requests[middle:after])
    # the same prompts: the executor conversation of the control is plan-conditioned's, request by request
    assert executor_requests(server, middle, after) == executor_requests(server, start, middle)
    assert control.actions == plan.actions
    notes = [e for e in control.transcript or () if e.get("agent_role") == "verifier"]
    assert (
        notes
        == [
            {
                "agent_role": "verifier",
                "round": 1,
                "verifier_called": False,
                "rule": "accept-all",
                "approved": True,
                "issues": [],
            }
        ]
        * planned
    )
    if task == "close-printer":  # the real verifier rejects that plan once: dual-loop revises, the control never
        assert dual.metadata["verification_rounds"] == [2]
        assert dual.metadata["plan_digest"] == control.metadata["plan_digest"]


def test_the_control_approves_a_plan_that_fails_the_structure_check(ticketing: Path) -> None:
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        if str(body["messages"][0].get("content") or "").startswith("You are the PLANNER"):
            return text_message("first log in, then create the ticket")
        return ticketing_agent.respond(body)

    with ScriptedServer(respond) as server:
        control = run(server.base_url, ticketing, "dual-loop-accept-all", "new-laptop")
        dual = run(server.base_url, ticketing, "dual-loop", "new-laptop", k_val=2)
    assert (control.metadata["verification_rounds"], control.metadata["plan_approved"]) == ([1], [True])
    assert control.metadata["plan_parse_errors"] == 1
    assert Counter(c.role for c in control.cost)["planner"] == 1
    assert dual.metadata["verification_rounds"] == [2]  # dual-loop asks for a rewrite
    assert dual.metadata["plan_approved"] == [False]
