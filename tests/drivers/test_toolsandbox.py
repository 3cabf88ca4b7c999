"""The ToolSandbox driver end to end: ToolSandbox's message loop, its OpenAIAPIUser and our five variants, all
through the official openai client on the loopback scripted server; each live record equals the import of the
run folder the driver wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import ScriptedServer
from fakes.toolsandbox_agent import ToolSandboxScript
from prefix_exec.agents import METHODS, Agent
from prefix_exec.drivers.base import to_rollout
from prefix_exec.drivers.toolsandbox import ToolSandboxDriver
from prefix_exec.envs.toolsandbox import recorded_environment
from prefix_exec.importers.toolsandbox.importer import ImportOptions, read_toolsandbox
from prefix_exec.llm import ChatBackend, EndpointConfig
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel, PrefixRecord, Rollout


def fredrik() -> str:
    from tool_sandbox.common.utils import deterministic_uuid

    return str(deterministic_uuid(payload="Fredrik Thordendal"))


PHONE = "+12453344098"
# scenario -> (agent answers, user replies, expected (FED, T, label, Y))
CASES: dict[str, tuple[list[Any], list[str], tuple[int, int, FailureLabel | None, int]]] = {
    "wifi_off": ([[("set_wifi_status", {"on": False})], "Wifi is turned off"], [], (2, 1, None, 1)),
    "send_message_with_contact_content_cellular_off": (
        [[("send_message_with_phone_number", {"phone_number": PHONE, "content": "Hi"})], "I could not send it."],
        [],
        (1, 1, FailureLabel.PRECONDITION, 0),
    ),
    "cellular_off": (
        [[("set_cellular_service_status", {"on": True})], "Cellular service is turned off"],
        [],
        (1, 1, FailureLabel.STATE_CONSISTENCY, 0),
    ),
    "wifi_off_3_distraction_tools": (
        [[("set_wifi_status", {"enabled": False})], [("set_wifi_status", {"on": False})], "Wifi is turned off"],
        [],
        (1, 2, FailureLabel.SCHEMA, 1),
    ),
    "find_current_city_insufficient_information": (
        ["I cannot find your city with the tools I have."],
        [],
        (2, 1, None, 1),
    ),  # the no-tool finish is the one action
    # An agent that never answers: ToolSandbox's max_messages (30 rows) ends the loop after 15 call/reply pairs.
    "get_cellular": ([[("get_cellular_service_status", {})]], [], (16, 15, None, 0)),
    "remove_contact_by_phone_multiple_user_turn": (
        [
            "Which phone number should I delete?",
            [("search_contacts", {"phone_number": PHONE})],
            "<remove>",
            f"Phone number {PHONE} has been removed from your contact",
        ],
        [PHONE],
        (3, 2, None, 1),
    ),
}

# guarded-react: the guard rejects a failing call before it runs (it is no action); the agent's next answer goes on.
GUARDED = {
    "send_message_with_contact_content_cellular_off": (1, 1, FailureLabel.PRECONDITION, 0),  # no call ran
    "cellular_off": (1, 1, FailureLabel.PRECONDITION, 0),
    "wifi_off_3_distraction_tools": (2, 1, None, 1),
}


# Each scenario is played by react, guarded-react (which differs on three of them) and one planning variant in
# turn, so every variant meets two scenarios or so: a ToolSandbox play costs about a second and the planning
# variants' scripted plays differ only in their planner's and verifier's requests.
PLANNING = [m for m in METHODS if m not in ("react", "guarded-react")]
PLAYS = [(name, m) for name in sorted(CASES) for m in ("react", "guarded-react")] + [
    (name, PLANNING[i % len(PLANNING)]) for i, name in enumerate(sorted(CASES))
]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[Rollout, PrefixRecord, Path]]:
    agent_steps = {
        name: [[("remove_contact", {"person_id": fredrik()})] if s == "<remove>" else s for s in steps]
        for name, (steps, _, _) in CASES.items()
    }
    script = ToolSandboxScript(agent_steps, {name: user for name, (_, user, _) in CASES.items()})
    files = tmp_path_factory.mktemp("toolsandbox-runs")
    out = {}
    with ScriptedServer(script) as server:

        def endpoint(model: str) -> EndpointConfig:
            return EndpointConfig(model=model, base_url=server.base_url, api_key_env="", max_retries=0)

        driver = ToolSandboxDriver(user=endpoint("user-sim"), files=files)
        for name, method in PLAYS:
            script.scenario = name
            agent = Agent(method, ChatBackend(endpoint("agent")))
            rollout = to_rollout(
                driver.play(agent, name), dataset="toolsandbox", task_id=name, model="agent", method=method, trial=0
            )
            out[(name, method)] = (rollout, replay(rollout, driver.env_for(rollout)), files)
    return out


def test_every_variant_plays_at_least_one_scenario_and_every_scenario_a_planning_variant() -> None:
    assert {m for _, m in PLAYS} == set(METHODS)
    assert {n for n, m in PLAYS if m in PLANNING} == set(CASES)


@pytest.mark.parametrize(("name", "method"), PLAYS)
def test_every_variant_gives_the_scenarios_fed_label_and_y(played: Any, name: str, method: str) -> None:
    rollout, record, _ = played[(name, method)]
    fed, horizon, label, success = GUARDED.get(name, CASES[name][2]) if method == "guarded-react" else CASES[name][2]
    assert (record.fed, record.T, record.label, record.success) == (fed, horizon, label, success), record.reason
    assert rollout.metadata["source"] == "live"
    if method == "guarded-react" and name in GUARDED:
        assert rollout.metadata["guard_rejections"] == 1


@pytest.mark.parametrize("method", METHODS)
def test_the_live_record_equals_the_import_of_the_run_folder(played: Any, method: str) -> None:
    for name in (n for n, m in PLAYS if m == method):
        rollout, record, files = played[(name, method)]
        folder = files / "toolsandbox" / "agent" / method / "trial0" / name
        (imported,) = read_toolsandbox([folder], ImportOptions(model="agent", method=method))
        assert isinstance(imported, Rollout), imported
        scored = replay(imported, recorded_environment(imported))
        assert (scored.fed, scored.T, scored.label, scored.success) == (
            record.fed,
            record.T,
            record.label,
            record.success,
        ), name
        assert [a.name for a in imported.actions] == [a.name for a in rollout.actions]
        assert [a.arguments for a in imported.actions] == [a.arguments for a in rollout.actions]


def test_the_multi_turn_scenario_answers_the_simulated_user_twice(played: Any) -> None:
    rollout, _, _ = played[("remove_contact_by_phone_multiple_user_turn", "react")]
    assert rollout.metadata["user_turns"] == 2
    assert [a.turn for a in rollout.actions] == [1, 1]


def test_toolsandbox_max_messages_is_the_turn_limit(played: Any) -> None:
    for method in (m for n, m in PLAYS if n == "get_cellular"):
        rollout, _, _ = played[("get_cellular", method)]
        assert rollout.metadata["capped_turns"] == 1
        assert rollout.metadata["user_turns"] == 1
        assert len(rollout.actions) == 15
