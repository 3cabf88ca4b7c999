"""tau2's horizon for a live tau conversation: its ``max_steps`` and ``max_errors``, counted as tau2 counts them.

tau2's ``Orchestrator`` counts one step per message it routes: each user message, each agent message (text or
tool calls), and each environment reply to an agent message with tool calls (the reply to all the calls of
one message is one step). Every tool message with ``error=True`` is one error. After each step whose message
does not go to the environment (so never between an agent's tool calls and their results) it ends the
simulation when ``step_count >= max_steps`` (termination ``max_steps``), then when ``num_errors >= max_errors``
(``too_many_errors``, which wins when both hold). These checks also follow the user's stop message, so a stop
on the last step ends as ``max_steps``. tau2's command-line defaults are 200 steps and 10 errors.

The agent's executor runs a whole user turn by itself, so the tau driver enforces this inside the turn through
:class:`GatedBackend`: it counts the executor's model calls and, before the next one, raises
:class:`HorizonReached` when tau2 would have ended the simulation after the previous tool results. (An
``Executor.run_turn`` stop hook would make this proxy unnecessary.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prefix_exec.llm.types import Completion, Message, ToolSchema

#: tau2's defaults (``tau2.config.DEFAULT_MAX_STEPS`` and ``DEFAULT_MAX_ERRORS``).
MAX_STEPS = 200
MAX_ERRORS = 10


class HorizonReached(Exception):
    """Control flow, never an error: tau2 would end the simulation before this executor model call."""


@dataclass
class Horizon:
    """tau2's step and error counts of one conversation, against its limits (both >= 1)."""

    max_steps: int = MAX_STEPS
    max_errors: int = MAX_ERRORS
    steps: int = 0
    errors: int = 0

    def __post_init__(self) -> None:
        if self.max_steps < 1 or self.max_errors < 1:
            raise ValueError(f"max_steps and max_errors must be >= 1, got {self.max_steps} and {self.max_errors}")

    def reason(self) -> str | None:
        """tau2's termination reason at a check, or ``None`` when the simulation goes on."""
        if self.errors >= self.max_errors:
            return "too_many_errors"
        if self.steps >= self.max_steps:
            return "max_steps"
        return None

    def calls_left(self) -> int:
        """Executor model calls tau2 leaves this turn (>= 1): with ``r`` steps left, ``ceil(r / 2)``. A call
        with tool calls costs two steps (the call and the results), so the last allowed call's results are the
        step that reaches ``max_steps``; a text answer costs one."""
        return max(1, (self.max_steps - self.steps + 1) // 2)


class GatedBackend:
    """The executor's backend, counting tau2 steps: before each executor call it syncs the error count
    (``errors()``, the conversation's failed tool calls so far) and raises :class:`HorizonReached` when tau2
    would have stopped; each executor answer adds one step, two with tool calls. Planner and verifier calls
    pass through uncounted (tau2 has none). Everything else is the wrapped backend's."""

    def __init__(self, inner: Any, horizon: Horizon, errors: Callable[[], int]) -> None:
        self.inner = inner
        self.horizon = horizon
        self.errors = errors

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSchema] = (), *,
                 role: str = "executor") -> Completion:
        if role != "executor":
            done: Completion = self.inner.complete(messages, tools, role=role)
            return done
        self.horizon.errors = self.errors()
        reason = self.horizon.reason()
        if reason is not None:
            raise HorizonReached(reason)
        done = self.inner.complete(messages, tools, role=role)
        self.horizon.steps += 2 if done.calls else 1
        return done

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
