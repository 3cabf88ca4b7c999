"""ToolSandbox over its *recorded* execution: the verdicts a run already produced, replayed in order.

The importer (:mod:`prefix_exec.importers.toolsandbox.importer`) attaches to every action the reply the sandbox
recorded, ``ToolCall.observation = Observation(content, error)``, where ``error`` is true when the row's
``tool_call_exception`` was set and ``content`` is then the exception text (``"TypeError: missing ..."``).
A session turns each recorded outcome into a :class:`~prefix_exec.trajectory.Verdict` by the rules of
:mod:`~prefix_exec.envs.toolsandbox.semantics` (the live environment uses the same ones), so
:func:`prefix_exec.replay.replay` and :func:`prefix_exec.scoring.run.score_to_file` work unchanged.
"""

from __future__ import annotations

from prefix_exec.envs.toolsandbox.semantics import DATASET, ScenarioFacts, judge, judge_finish
from prefix_exec.errors import ReplayError
from prefix_exec.trajectory import Rollout, ToolCall, Verdict


class RecordedSession:
    """Replays one scenario's recorded outcomes; ``position`` counts the actions stepped so far."""

    def __init__(self, facts: ScenarioFacts, position: int = 0) -> None:
        self.facts = facts
        self.position = position

    def fork(self) -> RecordedSession:
        return RecordedSession(self.facts, self.position)

    def finish_without_tools(self) -> Verdict:
        return judge_finish(self.facts)

    def step(self, call: ToolCall) -> Verdict:
        """The recorded verdict of ``call``, the next action of the rollout.

        Raises :class:`~prefix_exec.errors.ReplayError` for a call with no recorded reply: this environment
        cannot execute calls, only replay what the sandbox did (the live environment executes them).
        """
        self.position += 1
        observation = call.observation
        if observation is None or observation.error is None:
            raise ReplayError(
                f"action {self.position} ({call.name}) has no recorded reply in the ToolSandbox run, so it cannot "
                "be judged; the recorded environment only replays what the sandbox executed"
            )
        exception = str(observation.content) if observation.error else None
        return judge(exception, observation.content, self.position, self.facts)


class RecordedToolSandbox:
    """The environment of one imported rollout: ``start(task_id)`` replays that rollout's record.

    Pair each rollout with :func:`recorded_environment` (a :class:`~prefix_exec.scoring.units.Scorable` builds it
    from the rollout when scoring).
    """

    name = DATASET

    def __init__(self, task_id: str, facts: ScenarioFacts) -> None:
        self.task_id = task_id
        self.facts = facts

    def start(self, task_id: str) -> RecordedSession:
        if task_id != self.task_id:
            raise KeyError(task_id)
        return RecordedSession(self.facts)


def recorded_environment(rollout: Rollout) -> RecordedToolSandbox:
    """The recorded environment of an imported ToolSandbox rollout."""
    return RecordedToolSandbox(rollout.task_id, ScenarioFacts.from_metadata(rollout.task_id, rollout.metadata))
