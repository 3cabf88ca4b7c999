"""tau2's horizon for a live tau conversation: its ``max_steps`` and ``max_errors``, counted as tau2 counts them.

tau2's ``Orchestrator`` counts one step per message it routes: each user message, each agent message (text or
tool calls), and each environment reply to an agent message with tool calls (the reply to all the calls of
one message is one step). Every tool message with ``error=True`` is one error. After each step whose message
does not go to the environment (so never between an agent's tool calls and their results) it ends the
simulation when ``step_count >= max_steps`` (termination ``max_steps``), then when ``num_errors >= max_errors``
(``too_many_errors``, which wins when both hold). These checks also follow the user's stop message, so a stop
on the last step ends as ``max_steps``. tau2's command-line defaults are 200 steps and 10 errors.

The agent's turn loop runs a whole user turn by itself, so the tau driver hands it the :class:`Horizon` as the
turn's limit (:mod:`prefix_exec.agents.turn_limit`): the horizon counts the executor's model calls and, before the
next one, stops the turn when tau2 would have ended the simulation after the previous tool results. Reaching
``max_steps`` inside a turn is a step cap (a capped turn); reaching ``max_errors`` is not. The driver counts the
user's messages and checks the limits between turns.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefix_exec.agents.episode import Episode
from prefix_exec.agents.turn_limit import Stop
from prefix_exec.llm.types import Completion

#: tau2's defaults (``tau2.config.DEFAULT_MAX_STEPS`` and ``DEFAULT_MAX_ERRORS``).
MAX_STEPS = 200
MAX_ERRORS = 10


def failed_calls(episode: Episode) -> int:
    """The conversation's failed tool calls so far: tau2's ``num_errors``."""
    return sum(1 for a in episode.actions if a.observation is not None and a.observation.error)


@dataclass
class Horizon:
    """tau2's step and error counts of one conversation, against its limits (both >= 1); a turn limit."""

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

    def before_call(self, episode: Episode, calls: int) -> Stop | None:
        """Inside a turn the last step was the previous call's tool results (or the user's message): stop where
        tau2 would have ended the simulation. The step limit is checked first: it is the turn's cap (a text
        answer ends a turn, so every earlier call of the turn took two steps)."""
        self.errors = failed_calls(episode)
        if self.steps >= self.max_steps:
            return Stop("max_steps")
        if self.errors >= self.max_errors:
            return Stop("too_many_errors", capped=False)
        return None

    def after_call(self, episode: Episode, completion: Completion) -> None:
        """One step for the agent's message, one more for the environment's reply to its tool calls."""
        self.steps += 2 if completion.calls else 1
