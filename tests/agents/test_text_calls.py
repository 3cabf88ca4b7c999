"""Variants on the ticketing example with calls written in text: each format in text mode, and ``auto``'s
content fallback applied alike to every variant of a model, noted per rollout and per step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes import ticketing_agent
from fakes.openai_server import ScriptedServer, text_message
from fakes.text_calls import content_server, write
from prefix_exec.agents import Agent
from prefix_exec.agents.turn_loop import CONTENT_FALLBACK
from prefix_exec.drivers.base import to_rollout
from prefix_exec.drivers.custom import CustomDriver
from prefix_exec.llm import ChatBackend, EndpointConfig
from prefix_exec.llm.textcalls import AUTO_ORDER
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel, Rollout

EXPECTED = [
    ("login", {"username": "sam"}),
    ("search_tickets", {"query": "vpn"}),
    ("add_comment", {"ticket_id": "T-1001", "body": "A fix is rolling out."}),
]


def text_server(fmt: str) -> Any:
    """The ticketing script in text mode, its calls written in ``fmt`` instead of ``<tool_call>`` blocks."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        # The script counts its steps by the <tool_call> blocks of earlier answers: mark them as such.
        marked = {
            **body,
            "messages": [
                {**m, "content": f"{m['content']}<tool_call>"} if m["role"] == "assistant" else m
                for m in body["messages"]
            ],
        }
        message = ticketing_agent.respond(marked)
        content = str(message.get("content") or "")
        if "<tool_call>" not in content:
            return message
        from prefix_exec.llm.textcalls import read_text_calls

        calls = [(c.name, dict(c.arguments)) for c in read_text_calls(content, "hermes").calls]
        return text_message(write(fmt, calls))

    return answer


def play(server: ScriptedServer, ticketing: Path, method: str, **config: Any) -> Rollout:
    driver = CustomDriver(ticketing / "tools.yaml")
    backend = ChatBackend(EndpointConfig(model="exec", base_url=server.base_url, api_key_env="", **config))
    task = "open-vpn-followup"
    outcome = driver.play(Agent(method, backend), task)
    rollout = to_rollout(outcome, dataset="t", task_id=task, model="exec", method=method, trial=0)
    assert replay(rollout, driver.environment()).executable
    return rollout


@pytest.mark.parametrize("fmt", AUTO_ORDER)
def test_each_format_in_text_mode_plays_the_same_rollout_and_records_its_format(fmt: str, ticketing: Path) -> None:
    with ScriptedServer(text_server(fmt)) as server:
        named = play(server, ticketing, "react", tool_mode="text", text_format=fmt)
        auto = play(server, ticketing, "react", tool_mode="text")
    for rollout in (named, auto):
        assert [(a.name, dict(a.arguments)) for a in rollout.actions] == EXPECTED
        assert rollout.metadata["text_formats"] == {"t0.s0": fmt, "t0.s1": fmt, "t0.s2": fmt}
        assert "text_fallback" not in rollout.metadata


@pytest.mark.parametrize("fmt", ["json", "llama", "pythonic"])
def test_every_variant_of_a_model_gets_the_content_fallback_alike(fmt: str, ticketing: Path) -> None:
    methods = ("react", "guarded-react", "plan-conditioned", "dual-loop")
    with ScriptedServer(content_server(ticketing_agent.respond, fmt)) as server:
        rollouts = [play(server, ticketing, method, tool_mode="auto") for method in methods]
        requests = list(server.requests)
    for rollout in rollouts:
        assert [(a.name, dict(a.arguments)) for a in rollout.actions] == EXPECTED, rollout.method
        assert rollout.metadata["text_fallback"] == CONTENT_FALLBACK
        assert set(rollout.metadata["text_formats"].values()) == {fmt}
        # the results went back as tool messages, paired with the ids given to the calls read
        tool_ids = [m["tool_call_id"] for m in rollout.transcript or () if m.get("role") == "tool"]
        assert len(tool_ids) == 3
    with_tools = [b for b in requests if "tools" in b]
    assert len(with_tools) == 4 * 4  # 3 calls and the final answer per variant, all sent with native tools
    assert all(b["tools"] == with_tools[0]["tools"] for b in with_tools)  # one tool spec for every variant
    assert all("You can call these tools" not in str(m.get("content")) for b in requests for m in b["messages"])


def test_native_answers_note_no_fallback(ticketing: Path) -> None:
    with ScriptedServer(ticketing_agent.respond) as server:
        rollout = play(server, ticketing, "react", tool_mode="auto")
    assert "text_fallback" not in rollout.metadata
    assert "text_formats" not in rollout.metadata


@pytest.mark.parametrize(
    ("mode", "answer"),
    [
        ("auto", '{"name": "login", "arguments": {"username": "sam"'),  # cut off by a length limit
        ("text", '<|python_tag|>{"name": "login", "parameters": {"username": sam}}'),
        ("text", "[login(username=sam)]"),  # a name as a value: never evaluated
    ],
)
def test_a_call_in_text_that_does_not_parse_is_a_schema_failure(mode: str, answer: str, ticketing: Path) -> None:
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        answered = any(m["role"] == "tool" or "Result of tool call" in str(m["content"]) for m in body["messages"])
        return text_message("Done." if answered else answer)

    driver = CustomDriver(ticketing / "tools.yaml")
    with ScriptedServer(respond) as server:
        backend = ChatBackend(EndpointConfig(model="m", base_url=server.base_url, api_key_env="", tool_mode=mode))
        outcome = driver.play(Agent("react", backend), "open-vpn-followup")
    rollout = to_rollout(outcome, dataset="t", task_id="open-vpn-followup", model="m", method="react", trial=0)
    record = replay(rollout, driver.environment())
    (action,) = rollout.actions
    assert action.name == "login"
    assert action.parse_error
    assert action.raw and "login" in action.raw
    assert (record.fed, record.label) == (1, FailureLabel.SCHEMA)
