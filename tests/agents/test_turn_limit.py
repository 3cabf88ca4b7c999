"""The turn loop's turn-limit hook, directly: asked before each executor model call, told after it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import ScriptedServer, text_message, tool_message
from prefix_exec.agents import Agent, AgentSettings
from prefix_exec.agents.episode import Episode
from prefix_exec.agents.turn_limit import StepCap, Stop
from prefix_exec.drivers.custom import CustomDriver
from prefix_exec.drivers.tau_horizon import Horizon
from prefix_exec.llm import ChatBackend, EndpointConfig
from prefix_exec.llm.types import Completion


def respond(body: dict[str, Any]) -> dict[str, Any]:
    """Plans and verdicts for the planner and verifier; the executor logs in, or (when told) searches before
    logging in, which the ticketing precondition rejects, forever."""
    first = str(body["messages"][0].get("content") or "")
    if first.startswith("You are the PLANNER"):
        return text_message('{"steps": []}')
    if first.startswith("You are the VERIFIER"):
        return text_message('{"approved": true, "issues": []}')
    if "FAIL" in str(body["messages"][-1].get("content")) or any(
        "FAIL" in str(m.get("content")) for m in body["messages"] if m["role"] == "user"
    ):
        return tool_message([("search_tickets", {"query": "vpn"})])
    return tool_message([("login", {"username": "sam"})])


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(respond) as s:
        yield s


@dataclass
class Recorder:
    """A limit that stops before call ``stop_at`` (0-based count of calls made) and records what it saw."""

    stop_at: int
    capped: bool = False
    asked: list[int] = field(default_factory=list)
    told: list[int] = field(default_factory=list)

    def before_call(self, episode: Episode, calls: int) -> Stop | None:
        self.asked.append(calls)
        return Stop("enough", capped=self.capped) if calls >= self.stop_at else None

    def after_call(self, episode: Episode, completion: Completion) -> None:
        self.told.append(len(completion.calls))


def agent(server: ScriptedServer, method: str = "react", **settings: int) -> Agent:
    config = EndpointConfig(model="m", base_url=server.base_url, api_key_env="", max_retries=0)
    return Agent(method, ChatBackend(config), settings=AgentSettings(**settings))


def turn(
    server: ScriptedServer, ticketing: Path, method: str, limit: Any, text: str = "log in", **settings: int
) -> tuple[Any, Episode, int]:
    bot = agent(server, method, **settings)
    session = CustomDriver(ticketing / "tools.yaml").environment().start("open-vpn-followup")
    episode = bot.start("system", CustomDriver(ticketing / "tools.yaml").tools)
    before = len(server.requests)
    result = bot.user_turn(episode, session, text, 0, limit=limit)
    executor_calls = sum(1 for b in server.requests[before:] if b.get("tools"))
    return result, episode, executor_calls


@pytest.mark.parametrize("method", ["react", "dual-loop", "prompt-planning"])
def test_a_limit_is_asked_before_every_executor_call_and_told_after_it(
    server: ScriptedServer, ticketing: Path, method: str
) -> None:
    limit = Recorder(stop_at=3)
    result, episode, executor_calls = turn(server, ticketing, method, limit, max_steps=1)
    # The limit replaces the turn loop's own cap (max_steps=1 would have stopped after one call).
    assert executor_calls == 3
    assert limit.asked == [0, 1, 2, 3]
    assert limit.told == [1, 1, 1]  # planner and verifier calls are never counted
    assert (result.answer, result.steps, result.stop, result.capped) == (None, 3, "enough", False)
    assert "capped_turns" not in episode.metadata  # only a step limit is a capped turn
    assert len(episode.actions) == 3


def test_a_capped_stop_counts_as_a_capped_turn_and_a_stop_before_any_call_makes_none(
    server: ScriptedServer, ticketing: Path
) -> None:
    result, episode, calls = turn(server, ticketing, "react", Recorder(stop_at=0, capped=True))
    assert (calls, result.steps, result.stop, result.capped) == (0, 0, "enough", True)
    assert episode.metadata["capped_turns"] == 1
    assert not episode.actions


def test_without_a_limit_the_cap_is_max_steps(server: ScriptedServer, ticketing: Path) -> None:
    result, episode, calls = turn(server, ticketing, "react", None, max_steps=2)
    assert (calls, result.steps, result.stop, result.capped) == (2, 2, "max_steps", True)
    assert episode.metadata["capped_turns"] == 1
    assert StepCap(2).before_call(episode, 1) is None
    assert StepCap(2).before_call(episode, 2) == Stop("max_steps", capped=True)
    with pytest.raises(ValueError, match=">= 1"):
        StepCap(0)


def test_an_answer_in_text_ends_the_turn_inside_the_limit(ticketing: Path) -> None:
    with ScriptedServer(lambda body: text_message("All done.")) as server:
        limit = Recorder(stop_at=5)
        result, _, calls = turn(server, ticketing, "react", limit)
    assert (calls, result.answer, result.stop, result.capped) == (1, "All done.", None, False)
    assert (limit.asked, limit.told) == ([0], [0])


@pytest.mark.parametrize(
    ("limits", "calls", "stop", "capped"),
    [
        # 1 step left: one call with tool calls (2 steps) reaches tau2's step limit: a capped turn.
        ({"max_steps": 2}, 1, "max_steps", True),
        ({"max_steps": 7}, 3, "max_steps", True),  # 6 steps left: ceil(6 / 2) calls
        ({"max_steps": 8}, 4, "max_steps", True),  # 7 left: ceil(7 / 2)
    ],
)
def test_taus_horizon_as_the_limit_caps_the_turn_at_its_step_limit(
    server: ScriptedServer, ticketing: Path, limits: dict[str, int], calls: int, stop: str, capped: bool
) -> None:
    horizon = Horizon(**limits, steps=1)  # the user's message was step 1
    result, episode, made = turn(server, ticketing, "react", horizon)
    assert (made, result.stop, result.capped, episode.metadata.get("capped_turns")) == (calls, stop, capped, 1)
    assert horizon.steps == 1 + 2 * calls
    assert horizon.reason() == "max_steps"


def test_taus_horizon_stops_a_turn_on_its_error_limit_without_capping_it(
    server: ScriptedServer, ticketing: Path
) -> None:
    horizon = Horizon(max_steps=200, max_errors=3, steps=1)
    result, episode, made = turn(server, ticketing, "react", horizon, text="FAIL: search first")
    assert all(a.observation is not None and a.observation.error for a in episode.actions)
    assert (made, result.stop, result.capped) == (3, "too_many_errors", False)
    assert "capped_turns" not in episode.metadata
    assert (horizon.steps, horizon.errors, horizon.reason()) == (7, 3, "too_many_errors")


def test_the_old_budget_keyword_is_an_error(server: ScriptedServer, ticketing: Path) -> None:
    """``budget=`` was the old spelling of ``limit=`` (kept with a deprecation note until 0.x dropped it)."""
    bot = agent(server, "react")
    session = CustomDriver(ticketing / "tools.yaml").environment().start("open-vpn-followup")
    episode = bot.start("system", CustomDriver(ticketing / "tools.yaml").tools)
    with pytest.raises(TypeError, match="unexpected keyword argument 'budget'"):
        bot.user_turn(episode, session, "log in", 0, budget=Recorder(stop_at=2))  # type: ignore[call-arg]
