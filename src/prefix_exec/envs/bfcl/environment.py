"""The BFCL v3 multi-turn environment: per-action checks on BFCL's own API classes.

A session has two modes.

**Strict** (the default; what scoring replays, and the live session of ``guarded-react``). Per action, in
order (the first failing check decides; nothing runs after a schema failure):

1. the name is a plain public identifier -> ``schema``;
2. the tool is exposed at the call's turn (``ToolCall.turn``): a public method of one of the task's
   involved classes, and for miss_func not held back until a later turn -> ``schema``;
3. the arguments bind to BFCL's function doc (:mod:`.binding`): no unknown names, every required one present,
   each value of the doc's type; ``None`` only for an optional parameter -> ``schema``;
4. the static cost bound and the per-call time bound (:mod:`.invocation`) -> ``schema``;
5. the API's result: an error result or a raised exception is rejected with the label of
   :mod:`.errors`; a soft result such as ``{"verification_status": false}`` is accepted with a note;
6. information availability (:mod:`.information`, unless the environment was built with
   ``information=False``): a credential argument must have appeared in a user message, an earlier
   result or call, or a function doc -> ``information`` (the call ran, so the state is rebuilt).

A rejected action leaves the state as it was: when the API call was made and did not run cleanly, the session
rebuilds its instances from the task's template by re-running the accepted calls (deterministic, seeds
included), on first use after the rejection (a replay, which stops there, never pays for it). The
verdict's ``reason`` is our diagnosis; its ``result`` is BFCL's own answer whenever BFCL answers the call
with an error (the API's error text, ``Error during execution: name 'x' is not defined``, a missing
argument's ``TypeError``), computed on a copy for checks 1-3; it is ``None`` when BFCL would have run the
call cleanly (a held-back tool, a wrongly typed argument), since no BFCL text describes a call that did
not run.

**BFCL's own execution** (``strict=False``; the live session of every other variant). Every call runs as
BFCL's own execution code runs it (:func:`.invocation.invoke_as_bfcl`: held-back tools and wrongly typed arguments too,
still through the safe decoder, the cost bound and the time bound, never ``eval``), nothing is rolled
back, and the verdict's ``result`` is BFCL's answer: accepted when the call ran cleanly, rejected (with the
label and diagnosis strict mode would give) when BFCL's answer is an error. The state is therefore the one
:class:`~prefix_exec.envs.bfcl.FinalSuccess` computes from the same calls.

**Taking over the final-success check's execution** (strict sessions from :meth:`BfclEnvironment.after`).
Scoring computes Y before the replay, and Y runs the rollout's calls as BFCL runs them
(:class:`~prefix_exec.envs.bfcl.checker.Execution`). Up to the first call strict mode would run differently,
the two runs are the same calls on the same state, so the session takes each call's outcome over from the
check instead of running it again; checks 1-3, the information check and the verdicts are its own. It stops
taking outcomes over at the first call the check did not run there (a step the check skipped whole, a blocked
name, a call past the check's last), and carries on from the check's state when the check ran exactly the
accepted calls (and no other session took that state), else from the accepted calls run again.

Differences by design, on hostile input only: an outcome that depends on where the call was made is the
check's. For a call failing checks 1-3, BFCL's answer is the one the check got on the state itself, where a
fork can fail to copy a state nested hundreds of folders deep; and a call that recurses through such a state
can exhaust the stack one frame deeper in the replay than in the check.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from prefix_exec.envs.base import Environment
from prefix_exec.envs.bfcl import api_classes, information, invocation
from prefix_exec.envs.bfcl.binding import binding_problems
from prefix_exec.envs.bfcl.calls import check_name
from prefix_exec.envs.bfcl.checker import Execution
from prefix_exec.envs.bfcl.labels import label_error, soft_signals
from prefix_exec.envs.bfcl.tasks import BfclTask, function_docs, load_task
from prefix_exec.envs.tau.information import Evidence
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.trajectory import FailureLabel, ToolCall, Verdict


@dataclass
class Exposure:
    """Which tools a task exposes: name -> owning class, and name -> reveal turn for held-back ones."""

    owners: dict[str, str]
    reveal: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, task: BfclTask) -> Exposure:
        owners = {name: c for c in task.involved_classes for name in api_classes.public_methods(c)}
        return cls(owners=owners, reveal=dict(task.missed_function))

    def problem(self, name: str, turn: int) -> str | None:
        """Why tool ``name`` is not exposed at ``turn``, or ``None``."""
        if name not in self.owners:
            other = api_classes.method_owners().get(name)
            if other is not None:
                return f"tool {name!r} belongs to {other}, which this task does not involve"
            return f"unknown tool {name!r}"
        reveal = self.reveal.get(name)
        if reveal is not None and turn < reveal:
            return f"tool {name!r} is held back until turn {reveal} (miss_func); called at turn {turn}"
        return None


class BfclSession:
    """The live API instances of one rollout. See the module docstring for the two modes."""

    def __init__(
        self,
        task: BfclTask,
        instances: api_classes.Instances | None,
        templates: api_classes.Templates,
        time_limit: float,
        *,
        strict: bool = True,
        evidence: Evidence | None = None,
        execution: Execution | None = None,
    ):
        self.task = task
        self.exposure = Exposure.of(task)
        self.strict = strict
        self._templates = templates
        self._time_limit = time_limit
        self.accepted: list[tuple[str, JsonObject]] = []
        #: What the agent had seen (``None``: no information check); user turns join as calls reach them.
        self.evidence = evidence
        self._turns_seen = 0
        usable = (
            strict and execution is not None and execution.task_id == task.id and execution.time_limit == time_limit
        )
        #: The check's execution while this session takes outcomes over from it (:meth:`_take_over`), and how
        #: many it took.
        self._execution = execution if usable else None
        self._taken = 0
        #: The state; ``None`` until first use (the task's initial state, or the accepted calls run again after
        #: a rejection) and while outcomes are taken over (:attr:`instances`).
        self._instances = None if usable else instances

    @property
    def instances(self) -> api_classes.Instances:
        """The API instances after the accepted calls (built on first use: see ``_instances``)."""
        if self._execution is not None:
            self._stop_taking_over()
        if self._instances is None:
            self._instances = self._templates.fresh(self.task)
            for name, arguments in self.accepted:
                self._invoke(self.exposure.owners[name], name, arguments)
        return self._instances

    def step(self, call: ToolCall) -> Verdict:
        if not self.strict:
            return self._bfcl_step(call)
        taken = self._take_over(call)
        verdict = self._strict_step(call, taken)
        if taken is not None:
            if verdict.accepted:
                self._taken += 1
            else:
                # The check ran this call, which strict mode did not run or rolls back: from now on the state
                # is the accepted calls', rebuilt on first use.
                self._execution = None
        return verdict

    def _take_over(self, call: ToolCall) -> tuple[invocation.CallOutcome, tuple[str, ...]] | None:
        """The check's outcome and notes for ``call`` when the check ran it next, on this session's state;
        else ``None``, and the session runs calls itself from now on."""
        execution = self._execution
        if execution is None:
            return None
        at = self._taken
        if at < len(execution.calls) and execution.calls[at] is call and call.name not in invocation.BLOCKED_NAMES:
            return execution.outcomes[at], execution.notes[at]
        self._stop_taking_over()
        return None

    def _stop_taking_over(self) -> None:
        """Take the check's state when it ran exactly the accepted calls; otherwise rebuild on first use."""
        execution, self._execution = self._execution, None
        if execution is not None and self._taken == len(execution.calls):
            self._instances = execution.take_state()

    def _bfcl_step(self, call: ToolCall) -> Verdict:
        """BFCL's own execution: the call runs as BFCL runs it and the verdict carries BFCL's answer."""
        outcome = invocation.invoke_as_bfcl(
            self.instances, self.exposure.owners, call.name, call.arguments, time_limit=self._time_limit
        )
        if outcome.ran_clean:
            return Verdict.accept(result=outcome.text, notes=soft_signals(outcome.result))
        label, reason, notes = self._diagnosis(call, outcome)
        return Verdict.reject(label, reason, result=outcome.text, notes=notes)

    def _strict_step(self, call: ToolCall, taken: tuple[invocation.CallOutcome, tuple[str, ...]] | None) -> Verdict:
        """Strict mode's verdict, on the check's outcome and notes when ``taken`` over (:meth:`_take_over`)."""
        problem = self._static_problem(call)
        if problem is not None:
            # Not executed. The agent may see BFCL's answer only where BFCL itself answers with an error
            # (an undefined name, a missing argument); a success text would describe a call that never ran.
            bfcl = taken[0] if taken is not None else self._bfcl_answer_on_fork(call)
            return Verdict.reject(FailureLabel.SCHEMA, problem, result=None if bfcl.ran_clean else bfcl.text)
        name = call.name
        owner = self.exposure.owners[name]
        arguments = dict(call.arguments)
        self._read_turns(call.turn)
        outcome = taken[0] if taken is not None else self._invoke(owner, name, arguments)
        if outcome.ran_clean:
            notes = taken[1] if taken is not None else soft_signals(outcome.result)
            missing = self._unseen(name, arguments) if not notes else []
            if missing:
                self._rebuild()  # the call ran and may have changed the state (a token set, say)
                return Verdict.reject(FailureLabel.INFORMATION, information.reason(name, missing))
            self.accepted.append((name, arguments))
            if self.evidence is not None:
                self.evidence.add(outcome.text)
                self.evidence.add(repr(arguments))
            return Verdict.accept(result=outcome.text, notes=notes)
        # The call may have changed the state before it failed: an error, the alarm, or the memory budget
        # mid-call (a bound exceeded before the call changed nothing, and the rebuild is lazy).
        self._rebuild()
        label, reason, notes = self._diagnosis(call, outcome)
        return Verdict.reject(label, reason, result=outcome.text, notes=notes)

    def _read_turns(self, turn: int) -> None:
        """Add the user messages up to ``turn`` to the evidence (the agent has read them by then)."""
        if self.evidence is None:
            return
        while self._turns_seen <= turn and self._turns_seen < len(self.task.questions):
            self.evidence.add(self.task.questions[self._turns_seen])
            self._turns_seen += 1

    def _unseen(self, name: str, arguments: JsonMapping) -> list[tuple[str, str]]:
        return [] if self.evidence is None else information.unseen(name, arguments, self.evidence)

    def _static_problem(self, call: ToolCall) -> str | None:
        """Why the call fails checks 1-3 (name, exposure, binding), or ``None``."""
        name = call.name
        problem = check_name(name) if isinstance(name, str) else "the function name is not a string"
        if problem is None:
            problem = self.exposure.problem(name, call.turn)
        if problem is not None:
            return problem
        if not isinstance(call.arguments, Mapping):
            return f"{name}: arguments must be an object of named values"
        problems = binding_problems(name, dict(call.arguments), function_docs(self.exposure.owners[name])[name])
        return "; ".join(problems) if problems else None

    def _diagnosis(self, call: ToolCall, outcome: invocation.CallOutcome) -> tuple[FailureLabel, str, tuple[str, ...]]:
        """Label, reason and notes of a call that BFCL's execution did not run cleanly."""
        if outcome.exceeded is not None:
            return FailureLabel.SCHEMA, outcome.exceeded, ()
        static = self._static_problem(call) if outcome.exception in ("NameError", "TypeError") else None
        if static is not None:
            return FailureLabel.SCHEMA, static, ()
        message = outcome.error or ""
        label, why, classified = label_error(message, outcome.exception)
        kind = f"raised {outcome.exception}" if outcome.exception else "returned an error"
        notes = () if classified else ("unclassified backend error",)
        return label, f"{call.name} {kind}: {message} ({why})", notes

    def _bfcl_answer_on_fork(self, call: ToolCall) -> invocation.CallOutcome:
        """What BFCL would answer to ``call`` now, computed on a copy (the live state does not change)."""
        owners = self.exposure.owners
        try:
            instances = api_classes.clone(self.instances) if call.name in owners else self.instances
        except api_classes.StateTooDeep as exc:
            return invocation.CallOutcome(text=invocation.error_text(str(exc)), exceeded=str(exc))
        return invocation.invoke_as_bfcl(instances, owners, call.name, call.arguments, time_limit=self._time_limit)

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
        evidence = self.evidence.copy() if self.evidence is not None else None
        twin = BfclSession(
            self.task,
            api_classes.clone(self.instances),
            self._templates,
            self._time_limit,
            strict=self.strict,
            evidence=evidence,
        )
        twin.accepted = list(self.accepted)
        twin._turns_seen = self._turns_seen
        return twin

    def _rebuild(self) -> None:
        """Back to the state after the accepted calls (a failing API call may have half-applied), on first use
        of :attr:`instances`."""
        self._instances = None

    def _invoke(self, owner: str, name: str, arguments: JsonObject) -> invocation.CallOutcome:
        exceeded = invocation.cost_excess(name, arguments)  # before the arguments are copied (deep values)
        if exceeded is None:
            exceeded = invocation.state_excess(name, self.instances[owner])
        if exceeded is not None:
            return invocation.CallOutcome(text=invocation.error_text(exceeded), exceeded=exceeded)
        method = getattr(self.instances[owner], name)
        call = api_classes.call_arguments(owner, name, arguments)
        return invocation.run_bounded(method, name, call, time_limit=self._time_limit)


class BfclEnvironment:
    """BFCL v3 multi-turn (base, miss_func, miss_param, long_context), on BFCL's own API classes.

    ``time_limit`` is the per-call wall-clock bound in seconds (main thread only; see :mod:`.invocation`).
    ``information`` turns the information check of strict sessions on (the default; :mod:`.information`).
    Task templates are cached, so one environment should serve many rollouts.
    """

    name = "bfcl"

    def __init__(self, *, time_limit: float = invocation.TIME_LIMIT, information: bool = True) -> None:
        self.time_limit = time_limit
        self.information = information
        self.templates = api_classes.Templates()

    def task(self, task_id: str) -> BfclTask:
        """The task ``task_id``; ``KeyError`` when BFCL has no such multi-turn task."""
        return load_task(task_id)

    def start(self, task_id: str, *, strict: bool = True, execution: Execution | None = None) -> BfclSession:
        """A fresh session; ``strict`` False gives BFCL's own execution (see the module docstring). A strict
        session given the final-success check's ``execution`` of the rollout it will replay takes its outcomes
        over (see the module docstring); of several such sessions, only the first to need it takes the check's
        state, and the others run the accepted calls again."""
        task = self.task(task_id)
        evidence = doc_evidence(task.involved_classes).copy() if strict and self.information else None
        return BfclSession(
            task,
            None,  # the initial state on first use: a session taking the check's over may never need it
            self.templates,
            self.time_limit,
            strict=strict,
            evidence=evidence,
            execution=execution,
        )

    def after(self, execution: Execution | None) -> Environment:
        """This environment for the replay of the rollout whose final-success check ran ``execution``: a session
        started on its task takes the outcomes over (:meth:`start`), any other starts as usual."""
        return _After(self, execution)


@dataclass
class _After:
    """:meth:`BfclEnvironment.after`."""

    env: BfclEnvironment
    execution: Execution | None
    name: str = "bfcl"

    def start(self, task_id: str) -> BfclSession:
        return self.env.start(task_id, execution=self.execution)


@functools.cache
def doc_evidence(classes: tuple[str, ...]) -> Evidence:
    """The evidence every session of a task involving ``classes`` starts with: the classes' function docs,
    each as its JSON text. Built once per tuple of classes (serialising the docs was a tenth of a BFCL
    replay); sessions take a :meth:`~Evidence.copy`, never this one."""
    evidence = Evidence()
    for class_name in classes:
        evidence.extend(json.dumps(doc) for doc in function_docs(class_name).values())
    return evidence
