"""The demo's link to the BFCL environment: ground truth as tool calls, function docs, the witness run on
BFCL's raw API classes, and BFCL's final-success rule.

Everything here reads ``bfcl_eval``'s packaged data and classes (no network, no key).
"""

from __future__ import annotations

from collections.abc import Sequence

from prefix_exec.envs.bfcl import api_classes, invocation
from prefix_exec.envs.bfcl.checker import FinalSuccess, ground_truth_calls
from prefix_exec.envs.bfcl.tasks import BfclTask, function_docs, load_category
from prefix_exec.json_types import JsonMapping
from prefix_exec.trajectory import ToolCall


def task_count(category: str) -> int:
    """How many tasks a BFCL multi-turn category has."""
    return len(load_category(category))


def tasks(category: str, count: int) -> list[BfclTask]:
    """The first ``count`` tasks of a BFCL multi-turn category, in file order."""
    return list(load_category(category).values())[:count]


def truth_calls(task: BfclTask) -> tuple[ToolCall, ...]:
    """The task's ground truth as one flat rollout, each call tagged with its 0-based user turn."""
    return tuple(
        ToolCall(name, arguments, turn=turn)
        for turn, calls in enumerate(ground_truth_calls(task))
        for name, arguments in calls
    )


def docs(task: BfclTask) -> dict[str, JsonMapping]:
    """Every function doc of the task's classes, by tool name."""
    return {name: doc for c in task.involved_classes for name, doc in function_docs(c).items()}


class Witness:
    """Runs calls on fresh raw API instances of one task, with none of prefix-exec's per-action checks,
    and reports the 1-based depth of the first call the API itself refuses (error result, raised
    exception, unknown method), or ``None``."""

    def __init__(self, task: BfclTask, templates: api_classes.Templates) -> None:
        self.task = task
        self.templates = templates
        self.owners = {name: c for c in task.involved_classes for name in api_classes.public_methods(c)}

    def __call__(self, calls: Sequence[ToolCall]) -> int | None:
        instances = self.templates.fresh(self.task)
        for depth, call in enumerate(calls, start=1):
            owner = self.owners.get(call.name)
            if owner is None:
                return depth
            method = getattr(instances[owner], call.name)
            outcome = invocation.invoke(method, call.name, api_classes.call_arguments(owner, call.name, call.arguments))
            if not outcome.ran_clean:
                return depth
        return None


def success(checker: FinalSuccess, task: BfclTask, calls: Sequence[ToolCall]) -> int:
    """BFCL's final success Y for a rollout that kept the task's turn structure."""
    return checker.check(task, calls, task.turns).success
