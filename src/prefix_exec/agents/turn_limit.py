"""What bounds one user turn: a limit the turn loop asks before each call of the executor's model.

Before each executor model call the turn loop asks :meth:`TurnLimit.before_call` whether the turn goes on
(``None``) or stops, and why (a :class:`Stop`); after each call it hands the answer to
:meth:`TurnLimit.after_call`, which counts it. The loop's own per-turn cap is :class:`StepCap`; a driver
passes another limit for a benchmark's own horizon (tau2's step and error counts, BFCL's step limit), which
then replaces that cap for the turn. Only executor calls are asked about and counted: planner and verifier
calls are not steps of the benchmark.

A stop whose :attr:`Stop.capped` is true is a step limit: the turn counts in ``metadata["capped_turns"]``.
A limit is asked before every call, including the first of a turn, and may keep counts across turns (tau2's
counts are the conversation's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from prefix_exec.agents.episode import Episode
from prefix_exec.llm.types import Completion


@dataclass(frozen=True)
class Stop:
    """Why a turn stops before its next model call: ``reason`` names the limit (``"max_steps"``,
    ``"too_many_errors"``...); ``capped`` is true for a step limit (counted as a capped turn)."""

    reason: str
    capped: bool = True


class TurnLimit(Protocol):
    """A limit on a turn's executor model calls (see the module docstring)."""

    def before_call(self, episode: Episode, calls: int) -> Stop | None:
        """``None`` to make the next model call, or why not; ``calls`` is the model calls made this turn (>= 0)."""
        ...

    def after_call(self, episode: Episode, completion: Completion) -> None:
        """Count the executor's answer ``completion`` (its tool calls are not run yet)."""
        ...


@dataclass(frozen=True)
class StepCap:
    """At most ``limit`` (>= 1) executor model calls per turn; the stop is ``max_steps``, a capped turn."""

    limit: int

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"a turn's step cap must be >= 1, got {self.limit}")

    def before_call(self, episode: Episode, calls: int) -> Stop | None:
        return Stop("max_steps") if calls >= self.limit else None

    def after_call(self, episode: Episode, completion: Completion) -> None:
        return None
