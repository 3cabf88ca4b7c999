"""A scripted ToolSandbox conversation: the agent plays a fixed list of answers, the user a fixed list of replies.

Requests are told apart by model name: ``user-sim`` is ToolSandbox's ``OpenAIAPIUser``, anything else is our
agent (planner and verifier requests by their system prompt, prompt-planning's plan request by its text). Set
:attr:`ToolSandboxScript.scenario` before each run. An agent step is one answer: a list of ``(tool, arguments)``
calls (arguments may be a raw string: malformed JSON), or a text. The user says its replies in order, one per
agent answer, then calls ToolSandbox's ``end_conversation`` tool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fakes.openai_server import text_message, tool_message
from fakes.planning import planning_answer
from prefix_exec.agents.prompt_planning import PROMPT_PLAN_PROCEED

Step = str | Sequence[tuple[str, Mapping[str, Any] | str]]


class ToolSandboxScript:
    def __init__(self, agent: Mapping[str, Sequence[Step]], user: Mapping[str, Sequence[str]] | None = None) -> None:
        self.agent = {name: list(steps) for name, steps in agent.items()}
        self.user = {name: list(replies) for name, replies in (user or {}).items()}
        self.scenario = ""

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages: list[dict[str, Any]] = body["messages"]
        if body["model"] == "user-sim":
            return self._user(messages)
        planned = planning_answer(body, "1. do what was asked")
        if planned is not None:
            return planned
        steps = self.agent[self.scenario_of(messages)]
        done = sum(1 for i, m in enumerate(messages) if m["role"] == "assistant" and not _is_plan(messages, i))
        step = steps[min(done, len(steps) - 1)]
        if isinstance(step, str):
            return text_message(step)
        return tool_message(list(step))

    def scenario_of(self, messages: list[dict[str, Any]]) -> str:
        """The scenario an agent request belongs to (here: the one set last; a subclass may read the request)."""
        return self.scenario

    def _user(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        replies = self.user.get(self.scenario, [])
        # Roles are flipped for the simulated user: its own earlier messages are "assistant"; the few-shot
        # examples ToolSandbox puts first are also "assistant" messages, so count only after the last system one.
        last_system = max((i for i, m in enumerate(messages) if m["role"] == "system"), default=-1)
        said = sum(1 for m in messages[last_system + 1 :] if m["role"] == "assistant")
        said -= 1  # the scenario's first user message is in the starting context
        if 0 <= said < len(replies):
            return text_message(replies[said])
        return tool_message([("end_conversation", {})])


def _is_plan(messages: list[dict[str, Any]], index: int) -> bool:
    following = messages[index + 1] if index + 1 < len(messages) else {}
    return following.get("role") == "user" and following.get("content") == PROMPT_PLAN_PROCEED
