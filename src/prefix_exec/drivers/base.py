"""What the runner needs from a benchmark driver: its tasks, its environment, and one played episode per task."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from prefix_exec.agents.episode import Episode
from prefix_exec.agents.variants import Agent
from prefix_exec.envs.base import Environment
from prefix_exec.json_types import JsonMapping
from prefix_exec.trajectory import Rollout


@dataclass(frozen=True)
class Outcome:
    """One played episode: the agent's episode, the benchmark's final success Y (0/1) and driver notes."""

    episode: Episode
    success: int
    metadata: JsonMapping = field(default_factory=dict)


class Driver(Protocol):
    """Runs an agent on a benchmark's tasks. One driver (and its environment) per worker thread or process."""

    dataset: str

    def task_ids(self) -> list[str]:
        """Every task the driver can run, in a stable order."""
        ...

    def environment(self) -> Environment:
        """The environment the agent acts on."""
        ...

    def env_for(self, rollout: Rollout) -> Environment:
        """The environment that scores ``rollout``: the same one, seeing what the agent saw."""
        ...

    def play(self, agent: Agent, task_id: str, trial: int = 0) -> Outcome:
        """Play one episode of ``agent`` on ``task_id`` from its initial state; ``trial`` seeds the driver's own
        LLMs (a user simulator)."""
        ...


def to_rollout(outcome: Outcome, *, dataset: str, task_id: str, model: str, method: str, trial: int) -> Rollout:
    """The canonical rollout of a played episode: actions, Y, the full transcript, agent cost and metadata."""
    episode = outcome.episode
    return Rollout(
        dataset=dataset,
        task_id=task_id,
        model=model,
        method=method,
        actions=tuple(episode.actions),
        success=outcome.success,
        trial=trial,
        transcript=tuple(episode.transcript),
        cost=tuple(episode.cost),
        metadata={**episode.metadata, **outcome.metadata},
    )
