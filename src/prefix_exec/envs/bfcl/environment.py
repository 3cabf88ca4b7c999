"""The BFCL v3 multi-turn environment: per-action checks on BFCL's own backend classes.

Per action, in order (the first failing check decides; nothing runs after a schema failure):

1. the name is a plain public identifier -> ``schema``;
2. the tool is exposed at the call's turn (``ToolCall.turn``): a public method of one of the task's
   involved classes, and for miss_func not held back until a later turn -> ``schema``;
3. the arguments bind to BFCL's function doc: no unknown names, every required one present, each value of
   the doc's type (``string``, ``integer``, ``float`` (an int is accepted), ``boolean``, ``array`` (and its
   ``items`` type), ``dict``, ``any``); ``None`` only for an optional parameter -> ``schema``;
4. the static cost guard and the per-call time bound (:mod:`.executor`) -> ``schema``;
5. the backend result: an error result or a raised exception is rejected with the label of
   :mod:`.errors`; a soft result such as ``{"verification_status": false}`` is accepted with a note.

A rejected action leaves the state as it was: when the backend ran and failed, the session rebuilds its
instances from the task's template by re-running the accepted calls (deterministic, seeds included).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prefix_exec.envs.bfcl import backend, executor
from prefix_exec.envs.bfcl.calls import check_name
from prefix_exec.envs.bfcl.errors import label_error, soft_signals
from prefix_exec.envs.bfcl.tasks import BfclTask, function_docs, load_task
from prefix_exec.trajectory import FailureLabel, ToolCall, Verdict

#: Verdict results keep at most this many characters of BFCL's result text (long_context results are huge).

_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "float": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "dict": (dict,),
}


#: Doc types widened where BFCL's own data contradicts its docs: TicketAPI documents ``ticket_id`` as an
#: integer, but ``multi_turn_*_173`` starts with a ticket whose id is the string ``"ticket_001"`` and the
#: ground truth closes it by that id.
WIDENED: Mapping[tuple[str, str], tuple[str, ...]] = {
    (function, "ticket_id"): ("integer", "string")
    for function in ("close_ticket", "edit_ticket", "get_ticket", "resolve_ticket")
}


def type_problem(value: Any, spec: Mapping[str, Any], where: str) -> str | None:
    """Why ``value`` does not have the doc type ``spec``, or ``None``. Booleans are not numbers."""
    declared = spec.get("type")
    if declared in (None, "any") or declared not in _TYPES:
        return None
    if isinstance(value, bool) and declared != "boolean":
        return f"{where}: expected {declared}, got boolean"
    if not isinstance(value, _TYPES[declared]):
        return f"{where}: expected {declared}, got {type(value).__name__}"
    items = spec.get("items")
    if declared == "array" and isinstance(items, Mapping) and isinstance(value, list):
        for index, element in enumerate(value):
            problem = type_problem(element, items, f"{where}[{index}]")
            if problem:
                return problem
    return None


def binding_problems(name: str, arguments: Mapping[str, Any], doc: Mapping[str, Any]) -> list[str]:
    """Every way ``arguments`` fail to bind to the function doc ``doc`` (empty when they bind)."""
    parameters = doc.get("parameters", {})
    properties: Mapping[str, Any] = parameters.get("properties", {})
    required = set(parameters.get("required", ()))
    problems = [f"{name}: unknown argument {key!r}" for key in arguments if key not in properties]
    problems += [f"{name}: missing required argument {key!r}" for key in sorted(required - set(arguments))]
    for key, value in arguments.items():
        if key not in properties:
            continue
        if value is None and key not in required:
            continue
        widened = WIDENED.get((name, key))
        if widened and any(type_problem(value, {"type": t}, "") is None for t in widened):
            continue
        problem = type_problem(value, properties[key], f"{name}: argument {key!r}")
        if problem:
            problems.append(problem)
    return problems


@dataclass
class Exposure:
    """Which tools a task exposes: name -> owning class, and name -> reveal turn for held-back ones."""

    owners: dict[str, str]
    reveal: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, task: BfclTask) -> Exposure:
        owners = {name: c for c in task.involved_classes for name in backend.public_methods(c)}
        return cls(owners=owners, reveal=dict(task.missed_function))

    def problem(self, name: str, turn: int) -> str | None:
        """Why tool ``name`` is not exposed at ``turn``, or ``None``."""
        if name not in self.owners:
            other = backend.method_owners().get(name)
            if other is not None:
                return f"tool {name!r} belongs to {other}, which this task does not involve"
            return f"unknown tool {name!r}"
        reveal = self.reveal.get(name)
        if reveal is not None and turn < reveal:
            return f"tool {name!r} is held back until turn {reveal} (miss_func); called at turn {turn}"
        return None


class BfclSession:
    """The live backend instances of one rollout. See the module docstring for the checks."""

    def __init__(self, task: BfclTask, instances: backend.Instances, templates: backend.Templates, time_limit: float):
        self.task = task
        self.instances = instances
        self.exposure = Exposure.of(task)
        self._templates = templates
        self._time_limit = time_limit
        self.accepted: list[tuple[str, dict[str, Any]]] = []

    def step(self, call: ToolCall) -> Verdict:
        name = call.name
        problem = check_name(name) if isinstance(name, str) else "the function name is not a string"
        if problem is None:
            problem = self.exposure.problem(name, call.turn)
        if problem is not None:
            return Verdict.reject(FailureLabel.SCHEMA, problem)
        owner = self.exposure.owners[name]
        if not isinstance(call.arguments, Mapping):
            return Verdict.reject(FailureLabel.SCHEMA, f"{name}: arguments must be an object of named values")
        arguments = dict(call.arguments)
        problems = binding_problems(name, arguments, function_docs(owner)[name])
        if problems:
            return Verdict.reject(FailureLabel.SCHEMA, "; ".join(problems))
        outcome = self._run(owner, name, arguments)
        if outcome.refused is not None:
            if outcome.timed_out:
                self._rebuild()
            return Verdict.reject(FailureLabel.SCHEMA, outcome.refused)
        if outcome.error is not None:
            self._rebuild()
            label, why, classified = label_error(outcome.error, outcome.exception)
            kind = f"raised {outcome.exception}" if outcome.exception else "returned an error"
            notes = () if classified else ("unclassified backend error",)
            return Verdict.reject(
                label, f"{name} {kind}: {outcome.error} ({why})", result=outcome.text, notes=notes
            )
        self.accepted.append((name, arguments))
        return Verdict.accept(result=outcome.text, notes=soft_signals(outcome.result))

    def finish_without_tools(self) -> Verdict:
        # Every BFCL multi-turn task has tool calls in its ground truth: even miss_param, whose
        # clarification turn expects no call, needs calls in its other turns. So stopping before any tool
        # call never completes a BFCL task.
        calls = sum(len(turn) for turn in self.task.ground_truth)
        if calls == 0:
            return Verdict.accept(notes=("the ground truth has no tool call",))
        return Verdict.reject(
            FailureLabel.PRECONDITION,
            f"the task needs tool calls (its ground truth has {calls}), but the agent made none",
        )

    def fork(self) -> BfclSession:
        twin = BfclSession(self.task, backend.clone(self.instances), self._templates, self._time_limit)
        twin.accepted = list(self.accepted)
        return twin

    def _rebuild(self) -> None:
        """Back to the state after the accepted calls: a failing backend call may have half-applied."""
        self.instances = self._templates.fresh(self.task)
        for name, arguments in self.accepted:
            self._run(self.exposure.owners[name], name, arguments)

    def _run(self, owner: str, name: str, arguments: dict[str, Any]) -> executor.Outcome:
        refused = executor.guard(name, arguments)  # before the arguments are copied (deep values)
        if refused is not None:
            return executor.Outcome(text=executor.error_text(refused), refused=refused)
        method = getattr(self.instances[owner], name)
        call = backend.call_arguments(owner, name, arguments)
        return executor.run(method, name, call, time_limit=self._time_limit)



class BfclEnvironment:
    """BFCL v3 multi-turn (base, miss_func, miss_param, long_context), on BFCL's own backend classes.

    ``time_limit`` is the per-call wall-clock bound in seconds (main thread only; see :mod:`.executor`).
    Task templates are cached, so one environment should serve many rollouts.
    """

    name = "bfcl"

    def __init__(self, *, time_limit: float = executor.TIME_LIMIT) -> None:
        self.time_limit = time_limit
        self.templates = backend.Templates()

    def task(self, task_id: str) -> BfclTask:
        """The task ``task_id``; ``KeyError`` when BFCL has no such multi-turn task."""
        return load_task(task_id)

    def start(self, task_id: str) -> BfclSession:
        task = self.task(task_id)
        return BfclSession(task, self.templates.fresh(task), self.templates, self.time_limit)
