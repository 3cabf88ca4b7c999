"""Planner, verifier and executor edge cases: unreadable plans and verdicts, the validation budget, the
planners' context, the per-step call limit. A scripted loopback server answers by role; each test sets
what the planner, the verifier and the executor say."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import ScriptedServer, text_message, tool_message
from prefix_exec.agents import Agent, AgentSettings, Episode
from prefix_exec.agents.planning import parse_plan
from prefix_exec.drivers.custom import CustomDriver
from prefix_exec.llm import ChatBackend, EndpointConfig
from prefix_exec.runner.grid import parse_grid

PROSE = "I will log in as lee, then create the ticket."
LOGIN = json.dumps({"steps": [{"tool": "login", "arguments": {"username": "lee"}, "bindings": {}}]})
APPROVE = json.dumps({"approved": True, "issues": []})
REJECT = json.dumps({"approved": False, "issues": [{"step": 1, "check": "schema", "message": "wrong user"}]})


def kind(body: dict[str, Any]) -> str:
    system = str(body["messages"][0].get("content") or "")
    if system.startswith("You are the PLANNER"):
        return "planner"
    if system.startswith("You are the VERIFIER"):
        return "verifier"
    return "executor" if body.get("tools") else "prompt-plan"


class Script:
    """Answers per role, from lists whose last entry repeats: the planner's by revision within a turn's
    exchange, the verifier's in the order it is asked."""

    def __init__(self) -> None:
        self.planner: list[str] = [LOGIN]
        self.verifier: list[str] = [APPROVE]
        self.calls_per_answer = 0  # > 0: the executor's first answer of a turn makes that many calls
        self.verified = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        k = kind(body)
        messages = body["messages"]
        if k == "planner":
            revision = sum(1 for m in messages if m["role"] == "assistant")
            return text_message(self.planner[min(revision, len(self.planner) - 1)])
        if k == "verifier":
            self.verified += 1
            return text_message(self.verifier[min(self.verified - 1, len(self.verifier) - 1)])
        if k == "prompt-plan":
            return text_message("1. log in")
        if self.calls_per_answer and messages[-1]["role"] == "user":
            return tool_message([("search_tickets", {"query": f"q{i}"}) for i in range(self.calls_per_answer)])
        return text_message(f"Answer {sum(1 for m in messages if m['role'] == 'user')}.")


@pytest.fixture()
def script() -> Script:
    return Script()


@pytest.fixture()
def server(script: Script) -> Iterator[ScriptedServer]:
    with ScriptedServer(script) as s:
        yield s


def agent(server: ScriptedServer, method: str, **settings: Any) -> Agent:
    config = EndpointConfig(model="m", base_url=server.base_url, api_key_env="", max_retries=0)
    return Agent(method, ChatBackend(config), settings=AgentSettings(**settings))


def converse(ticketing: Path, bot: Agent, turns: list[str], state: str = "STATE") -> Episode:
    """Run ``turns`` as user turns of one ticketing episode, planning every turn."""
    driver = CustomDriver(ticketing / "tools.yaml")
    session = driver.environment().start("new-laptop")
    episode = bot.start("You are a help-desk agent.", driver.tools)
    for index, content in enumerate(turns):
        bot.user_turn(episode, session, content, index, state=state)
    return episode


def by_kind(server: ScriptedServer, before: int) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"planner": [], "verifier": [], "executor": [], "prompt-plan": []}
    for body in server.requests[before:]:
        out[kind(body)].append(body)
    return out


def control_text(episode: Episode) -> str:
    return next(str(m["content"]) for m in episode.messages if "PLAN (control signal)" in str(m.get("content")))


# ------------------------------------------------------------------------------------------ plan structure


@pytest.mark.parametrize(
    ("step", "error"),
    [
        ({"tool": "login", "arguments": "lee"}, "'arguments' must be an object"),
        ({"tool": "", "arguments": {}}, "'tool' must be a non-empty string"),
        ({"tool": "login", "bindings": ["username"]}, "'bindings' must be an object"),
        ({"tool": "login", "bindings": {"username": "step 7.user"}}, "names step 7; it must name an earlier step"),
        ({"tool": "login", "bindings": {"username": "step 2"}}, "names step 2; it must name an earlier step"),
        ({"tool": "login", "bindings": {"username": "the user's name"}}, "must be a string 'step N'"),
        ({"tool": "login", "bindings": {"username": "step 1..x"}}, "must be a string 'step N'"),
        ({"tool": "login", "bindings": {"username": 1}}, "must be a string 'step N'"),
    ],
)
def test_a_malformed_step_is_a_structure_error(step: dict[str, Any], error: str) -> None:
    plan = parse_plan(json.dumps({"steps": [{"tool": "search_tickets", "arguments": {"query": "x"}}, step]}))
    assert plan.parse_error is not None
    assert error in plan.parse_error
    assert plan.steps == ()
    assert [(i["step"], i["check"]) for i in plan.issues] == [(2, "format")]


def test_bindings_name_earlier_steps_in_the_declared_format() -> None:
    steps: list[dict[str, Any]] = [
        {"tool": "search_tickets", "arguments": {"query": "vpn"}},  # arguments/bindings may be left out
        {"tool": "update_ticket", "arguments": {"priority": "high"}, "bindings": {"ticket_id": "step 1.results.0"}},
        {"tool": "add_comment", "arguments": {"body": "x"}, "bindings": {"ticket_id": "step 1"}},
    ]
    plan = parse_plan(f"Here it is:\n```json\n{json.dumps({'steps': steps})}\n```")
    assert plan.parse_error is None
    assert len(plan.steps) == 3
    assert parse_plan('{"steps": []}').parse_error is None
    steps[2]["bindings"] = {"ticket_id": "step 3.ticket_id"}  # its own output: not an earlier step
    assert parse_plan(json.dumps({"steps": steps})).parse_error == (
        "step 3: binding 'ticket_id' names step 3; it must name an earlier step (1..2)"
    )


# ------------------------------------------------------------------------------------------ prompt-planning


def test_prompt_planning_lists_the_tools_in_its_plan_request(
    server: ScriptedServer, script: Script, ticketing: Path
) -> None:
    before = len(server.requests)
    episode = converse(ticketing, agent(server, "prompt-planning"), ["file a ticket", "and another"])
    requests = by_kind(server, before)["prompt-plan"]
    assert len(requests) == 2
    assert all("tools" not in r for r in requests)
    first, second = (str(r["messages"][-1]["content"]) for r in requests)
    assert "Tools:" in first
    assert all(f'"name": "{t.name}"' in first for t in episode.tools)
    assert "create_ticket" not in second
    assert "listed earlier" in second  # unchanged tools are not listed again
    for body in requests:
        roles = [m["role"] for m in body["messages"]]
        assert roles.count("system") == 1
        assert roles[0] == "system"
        assert all(a != b for a, b in itertools.pairwise(roles)), roles


# ------------------------------------------------------------------------------------------ unreadable plans


def test_plan_conditioned_counts_an_unreadable_plan_and_labels_it(
    server: ScriptedServer, script: Script, ticketing: Path
) -> None:
    script.planner = [PROSE]
    episode = converse(ticketing, agent(server, "plan-conditioned"), ["file a ticket"])
    assert episode.metadata["plan_parse_errors"] == 1
    assert episode.metadata["plans"] == 1
    control = control_text(episode)
    assert "not a valid structured plan (no JSON object in the answer)" in control
    assert PROSE in control


def test_dual_loop_never_sends_an_unreadable_plan_to_the_verifier(
    server: ScriptedServer, script: Script, ticketing: Path
) -> None:
    script.planner = [PROSE, json.dumps({"steps": [{"tool": "login", "arguments": "lee"}]}), LOGIN]
    before = len(server.requests)
    episode = converse(ticketing, agent(server, "dual-loop", k_val=3), ["file a ticket"])
    calls = by_kind(server, before)
    assert (len(calls["planner"]), len(calls["verifier"])) == (3, 1)  # two format rounds, one verifier round
    assert episode.metadata["verification_rounds"] == [3]
    assert episode.metadata["plan_approved"] == [True]
    assert episode.metadata["plan_parse_errors"] == 2
    asks = [str(m["content"]) for m in calls["planner"][-1]["messages"][3::2]]
    assert all("not in the required format" in a and '"check": "format"' in a for a in asks)
    assert "'arguments' must be an object" in asks[1]
    skipped = [t for t in episode.transcript if t.get("agent_role") == "verifier" and not t.get("verifier_called", 1)]
    assert [t["round"] for t in skipped] == [1, 2]


def test_dual_loop_out_of_budget_on_an_unreadable_plan_hands_it_over_unverified(
    server: ScriptedServer, script: Script, ticketing: Path
) -> None:
    script.planner = [PROSE]
    before = len(server.requests)
    episode = converse(ticketing, agent(server, "dual-loop", k_val=2), ["file a ticket"])
    assert Counter(kind(b) for b in server.requests[before:]) == Counter({"planner": 2, "executor": 1})
    assert episode.metadata["plan_approved"] == [False]
    assert episode.metadata["verification_rounds"] == [2]
    assert "failed the structure check" in control_text(episode)


# ------------------------------------------------------------------------------------------ the budget


@pytest.mark.parametrize(("k_val", "planner", "verifier"), [(1, 1, 1), (3, 3, 3)])
def test_k_val_is_the_number_of_verifications(
    server: ScriptedServer, script: Script, ticketing: Path, k_val: int, planner: int, verifier: int
) -> None:
    script.verifier = [REJECT]
    before = len(server.requests)
    episode = converse(ticketing, agent(server, "dual-loop", k_val=k_val), ["file a ticket", "and another"])
    counts = Counter(kind(b) for b in server.requests[before:])
    assert (counts["planner"], counts["verifier"]) == (2 * planner, 2 * verifier)
    assert episode.metadata["verification_rounds"] == [k_val, k_val]
    assert episode.metadata["plan_approved"] == [False, False]
    assert episode.metadata["planned_turns"] == [0, 1]


def test_plan_approved_is_kept_per_turn(server: ScriptedServer, script: Script, ticketing: Path) -> None:
    script.verifier = [APPROVE]
    episode = converse(ticketing, agent(server, "dual-loop"), ["one", "two", "three"])
    assert episode.metadata["plan_approved"] == [True, True, True]
    assert episode.metadata["verification_rounds"] == [1, 1, 1]


# ------------------------------------------------------------------------------------------ unreadable verdicts


def test_an_unreadable_verdict_is_asked_again_not_sent_to_the_planner(
    server: ScriptedServer, script: Script, ticketing: Path
) -> None:
    script.verifier = ["Looks fine to me!", APPROVE]
    before = len(server.requests)
    episode = converse(ticketing, agent(server, "dual-loop", k_val=3), ["file a ticket"])
    calls = by_kind(server, before)
    assert (len(calls["planner"]), len(calls["verifier"])) == (1, 2)
    retry = calls["verifier"][1]["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert retry[2]["content"] == "Looks fine to me!"
    assert "could not be read as a verdict" in retry[3]["content"]
    assert episode.metadata["verifier_parse_errors"] == 1
    assert episode.metadata["plan_approved"] == [True]
    assert episode.metadata["verification_rounds"] == [2]


def test_a_verifier_that_never_answers_in_format_uses_up_the_budget(
    server: ScriptedServer, script: Script, ticketing: Path
) -> None:
    script.verifier = ["Looks fine to me!"]
    before = len(server.requests)
    episode = converse(ticketing, agent(server, "dual-loop", k_val=3), ["file a ticket"])
    calls = by_kind(server, before)
    assert (len(calls["planner"]), len(calls["verifier"])) == (1, 3)
    assert episode.metadata["verifier_parse_errors"] == 3
    assert episode.metadata["plan_approved"] == [False]
    assert "verifier's answers could not be read" in control_text(episode)


# ------------------------------------------------------------------------------------------ context and notes


def test_planner_and_verifier_see_the_earlier_turns(server: ScriptedServer, script: Script, ticketing: Path) -> None:
    before = len(server.requests)
    converse(ticketing, agent(server, "dual-loop"), ["Log in as lee please", "I have updated some functions."])
    calls = by_kind(server, before)
    for role in ("planner", "verifier"):
        first, second = (str(b["messages"][1]["content"]) for b in calls[role])
        assert "Earlier in this conversation" not in first
        earlier = second.split("Goal:\n", 1)[0]
        assert "User: Log in as lee please" in earlier
        assert "Agent: Answer 1." in earlier
        assert second.split("Goal:\n", 1)[1].startswith("I have updated some functions.")


def test_the_transcript_notes_what_planner_and_verifier_were_given(
    server: ScriptedServer, script: Script, ticketing: Path
) -> None:
    script.verifier = [REJECT, "not json", APPROVE]
    episode = converse(ticketing, agent(server, "dual-loop"), ["file a ticket"], state="S" * 5000)
    notes = [t for t in episode.transcript if t.get("agent_role") in ("planner", "verifier")]
    assert [t["agent_role"] for t in notes] == ["planner", "verifier", "planner", "verifier", "verifier"]
    first = notes[0]["input"]
    assert first["goal"] == "file a ticket"
    assert first["history"] == ""
    assert first["state"].startswith("S" * 2000)
    assert "3000 more characters" in first["state"]
    assert '"wrong user"' in notes[2]["input"]["feedback"]
    assert "could not be read" in notes[4]["input"]["correction"]


# ------------------------------------------------------------------------------------------ calls per step


def test_calls_beyond_the_per_step_limit_are_answered_not_executed(
    server: ScriptedServer, script: Script, ticketing: Path
) -> None:
    script.calls_per_answer = 70
    before = len(server.requests)
    episode = converse(ticketing, agent(server, "react"), ["search"])
    assert len(episode.actions) == 64
    assert episode.metadata["dropped_calls"] == 6
    follow_up = server.requests[before:][1]["messages"]
    replies = [m for m in follow_up if m["role"] == "tool"]
    assert len(replies) == 70
    assert all("per step" in str(m["content"]) for m in replies[64:])
    assert {m["tool_call_id"] for m in replies} == {c["id"] for c in follow_up[-71]["tool_calls"]}


def test_the_per_step_limit_is_a_grid_setting(server: ScriptedServer, script: Script, ticketing: Path) -> None:
    grid = {
        "methods": ["react"],
        "models": [{"name": "m", "model": "m"}],
        "agent": {"max_calls_per_step": 2},
        "datasets": [{"name": "t", "kind": "custom", "spec": str(ticketing / "tools.yaml")}],
    }
    settings = parse_grid(grid, base_dir=ticketing).agent
    assert settings.max_calls_per_step == 2
    script.calls_per_answer = 3
    bot = Agent("react", agent(server, "react").executor, settings=settings)
    episode = converse(ticketing, bot, ["search"])
    assert len(episode.actions) == 2
    assert episode.metadata["dropped_calls"] == 1
