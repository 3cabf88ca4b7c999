"""One rollout in progress: the executor's conversation, the actions taken, their cost and the transcript.

The executor's ``messages`` are what the executor model sees. The ``transcript`` is everything that
happened, in order: the executor's messages plus the planner's and verifier's exchanges (tagged with
``agent_role``) and guard verdicts. Only the executor's tool calls become ``actions``. ``history`` keeps
each finished turn's user message and the agent's final answer, which planners and verifiers get as context.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.llm.types import Completion, Message, ToolSchema
from prefix_exec.trajectory import CallCost, ToolCall


@dataclass
class Episode:
    """Mutable state of one agent run. ``tools`` may grow between turns (BFCL's held-back functions)."""

    system: str
    tools: list[ToolSchema]
    messages: list[Message] = field(default_factory=list)
    actions: list[ToolCall] = field(default_factory=list)
    cost: list[CallCost] = field(default_factory=list)
    transcript: list[JsonObject] = field(default_factory=list)
    metadata: JsonObject = field(default_factory=dict)
    #: One ``(user message, final answer)`` per finished turn; the answer is ``None`` when the turn was capped.
    history: list[tuple[str, str | None]] = field(default_factory=list)
    #: The tools prompt-planning last listed in this conversation (``None``: never), so it lists them again only
    #: when they changed.
    tools_listed: list[ToolSchema] | None = None

    def __post_init__(self) -> None:
        # An empty system prompt sends none (BFCL's function-calling runs have no system message).
        if not self.messages and self.system:
            self.say({"role": "system", "content": self.system})

    def say(self, message: Message, *, given_text: str | None = None) -> None:
        """Append ``message`` to the executor's conversation and the transcript. ``given_text``: the part of a
        user message that is the user's own words (the goal before a plan; ``""`` for a tool result sent as user
        text), kept in the transcript entry only, for replay to hear instead of the content
        (:func:`prefix_exec.replay.replay_session`, values the conversation gave)."""
        self.messages.append(message)
        entry = dict(message)
        if given_text is not None:
            entry["given_text"] = given_text
        self.transcript.append(entry)

    def note(self, agent_role: str, entry: JsonMapping) -> None:
        """Record a planner/verifier/guard event in the transcript only (the executor does not see it)."""
        self.transcript.append({"agent_role": agent_role, **entry})

    def charge(self, completion: Completion) -> None:
        self.cost.append(completion.cost)
        if completion.retries:
            self.metadata["retries"] = int(self.metadata.get("retries", 0)) + len(completion.retries)
        if completion.cached:
            self.metadata["cached_calls"] = int(self.metadata.get("cached_calls", 0)) + 1

    def count(self, key: str, n: int = 1) -> None:
        """Add ``n`` to the integer ``metadata[key]`` (missing counts as 0)."""
        self.metadata[key] = int(self.metadata.get(key, 0)) + n

    def record(self, key: str, value: Any) -> None:
        """Append ``value`` to the list ``metadata[key]`` (one entry per planned turn)."""
        self.metadata.setdefault(key, []).append(value)

    def tokens(self) -> int:
        return sum(c.prompt_tokens + c.completion_tokens for c in self.cost)


def render(value: Any) -> str:
    """A tool result as the text handed back to the model."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
