"""Final success Y by BFCL's multi-turn rule, re-implemented on the safe invocation (:mod:`.invocation`).

BFCL's rule (``multi_turn_checker`` and its caller in ``eval_runner``), which this follows step by step:

- a rollout whose number of turns differs from the ground truth's was force-terminated: Y = 0;
- the model's calls of every turn are executed, in order, on the model's instances, *whether or not they
  fail* (a failing call still yields its error text); steps BFCL could not decode are skipped;
- the ground truth's calls of the turn are executed on separate ground-truth instances;
- a turn whose ground truth is empty is skipped (no check);
- otherwise the model must have made at least one call in the turn, every involved instance's public
  attributes must equal the ground truth's, and the ground truth's result texts must be a multiset subset
  of every result text the model produced so far (all turns).

Differences from BFCL by design: nothing is ``eval``-ed. A call that is not a plain public method of an
involved class (BFCL would ``eval`` it) yields an error text and changes nothing; a call over the static
cost bound yields an error text instead of hanging. Held-back miss_func tools and wrongly typed arguments
*are* executed here, as BFCL executes them: Y is BFCL's outcome, not prefix validity.

Ground-truth executions are deterministic, so they are cached per task. The model's executions are kept
for the rollout's replay (:class:`Execution`): the strict session takes each call's outcome from there
instead of running the call a second time.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from prefix_exec.envs.bfcl import api_classes, invocation
from prefix_exec.envs.bfcl.calls import bind_positional, parse_call
from prefix_exec.envs.bfcl.labels import soft_signals
from prefix_exec.envs.bfcl.tasks import BfclTask
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.trajectory import Rollout, ToolCall

#: ``metadata["loop"]`` of rollouts the BFCL driver produced (its loop goes on after an undecodable call).
OWN_LOOP = "prefix_exec"
#: ``metadata`` key of BFCL's own reading of a prompting rollout's calls, per turn (see ``prompting``).
BFCL_CALLS = "bfcl_calls"
#: How importers name a call: turn, step within the turn, index within the step.
CALL_ID = re.compile(r"^t(\d+)\.s(\d+)\.c(\d+)$")
#: Result text an :class:`Execution` keeps, in characters; a replay runs the calls past it itself. Over ten
#: times the most any rollout of the shared data gets (85,000; the median is 400), and a bound on what n
#: listings of n files would otherwise hold, growing as n * n.
EXECUTION_CHARS = 1_000_000


@dataclass(frozen=True)
class Execution:
    """What the final-success check ran of a rollout's calls, for the rollout's strict replay to take over
    (:meth:`~prefix_exec.envs.bfcl.BfclEnvironment.after`).

    ``calls`` are the rollout's calls the check executed, in order: the objects themselves, since a replay
    matches its calls to them by identity. ``outcomes[i]`` is what ``calls[i]`` answered (without the result
    object, which a later call may change) and ``notes[i]`` its soft signals, taken as it returned.
    ``time_limit`` is the per-call bound the calls ran under (s). The state after the last of them goes to the
    first caller of :meth:`take_state`.
    """

    task_id: str
    calls: tuple[ToolCall, ...]
    outcomes: tuple[invocation.CallOutcome, ...]
    notes: tuple[tuple[str, ...], ...]
    time_limit: float
    #: The state after the last call, until taken; empty when the outcomes stopped at EXECUTION_CHARS.
    _state: list[api_classes.Instances] = field(default_factory=list, compare=False, repr=False)

    def take_state(self) -> api_classes.Instances | None:
        """The API instances after the last call, to the first caller only (they go on changing there);
        ``None`` to any later one, and when the outcomes stopped at :data:`EXECUTION_CHARS` before the check's
        last call."""
        return self._state.pop() if self._state else None


@dataclass(frozen=True)
class Check:
    """Y and, when 0, why (BFCL's error type in brackets) and at which 0-based turn.

    ``execution`` is what the check ran of the rollout's own calls, for its replay, when asked for
    (``keep_execution``); ``None`` otherwise, for a force-terminated rollout (nothing ran), and when the check
    ran other calls than the rollout's (``bfcl_calls``).
    """

    success: int
    reason: str = ""
    turn: int | None = None
    execution: Execution | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class TurnTruth:
    """The ground truth after one turn: its result texts and a snapshot of its instances."""

    calls: int
    results: tuple[str, ...]
    instances: api_classes.Instances


def invoke_lenient(
    instances: api_classes.Instances, owners: Mapping[str, str], name: str, arguments: JsonMapping
) -> str:
    """Execute as BFCL's own execution code would (any public method of an involved class); the result text."""
    return invocation.invoke_as_bfcl(instances, owners, name, arguments).text


def ground_truth_calls(task: BfclTask) -> list[list[tuple[str, JsonObject]]]:
    """The task's ground-truth calls per turn as ``(name, arguments)``, positional arguments named."""
    turns = []
    for turn in task.ground_truth:
        calls = []
        for source in turn:
            parsed = parse_call(source)
            calls.append((parsed.name, bind_positional(parsed, api_classes.positional_names)))
        turns.append(calls)
    return turns


class FinalSuccess:
    """BFCL's final-success check with a per-task cache of the ground truth's executions."""

    def __init__(self, templates: api_classes.Templates | None = None) -> None:
        self.templates = templates if templates is not None else api_classes.Templates()
        self._truth: dict[str, list[TurnTruth]] = {}

    def truth(self, task: BfclTask) -> list[TurnTruth]:
        cached = self._truth.get(task.id)
        if cached is not None:
            return cached
        instances = self.templates.fresh(task)
        owners = _owners(task)
        turns = []
        for calls in ground_truth_calls(task):
            results = tuple(invoke_lenient(instances, owners, name, arguments) for name, arguments in calls)
            snapshot = api_classes.clone(instances) if calls else {}
            turns.append(TurnTruth(len(calls), results, snapshot))
        self._truth[task.id] = turns
        return turns

    def check(
        self,
        task: BfclTask,
        actions: Sequence[ToolCall],
        turns: int | None = None,
        *,
        whole_steps: bool = True,
        keep_execution: bool = False,
    ) -> Check:
        """Y for a rollout with ``actions`` over ``turns`` turns (``None``: assume the ground truth's count).

        ``whole_steps`` (BFCL's logs): a step with an undecodable call is skipped whole, as BFCL's evaluation
        skips it (BFCL's loop ended the turn there). False (the driver's own rollouts, whose loop goes on):
        only the undecodable calls are skipped, so Y counts exactly the calls that ran live.
        ``keep_execution``: the check's :class:`Execution` in ``Check.execution``, for the rollout's replay.
        """
        truth = self.truth(task)
        if turns is not None and turns != len(truth):
            return _force_terminated(turns, len(truth))
        return self._run(task, executed_calls(actions, len(truth), whole_steps), keep_execution)

    def check_turns(self, task: BfclTask, per_turn: Sequence[Sequence[ToolCall]]) -> Check:
        """Y for the calls BFCL executes, given per turn (one list per ground-truth turn, or force-terminated)."""
        return self._run(task, per_turn, keep_execution=False)

    def _run(self, task: BfclTask, per_turn: Sequence[Sequence[ToolCall]], keep_execution: bool) -> Check:
        """:meth:`check_turns`, with the :class:`Execution` of the calls it ran when ``keep_execution``."""
        truth = self.truth(task)
        if len(per_turn) != len(truth):
            return _force_terminated(len(per_turn), len(truth))
        instances = self.templates.fresh(task)
        owners = _owners(task)
        # Only texts some ground-truth turn expects can matter to the multiset check, so only those are
        # counted: keeping every full result text made n listings of n files quadratic in memory.
        wanted = {text for turn_truth in truth for text in turn_truth.results}
        produced: Counter[str] = Counter()
        recording = _Recording(task.id) if keep_execution else None
        check = Check(1)
        for index, (calls, expected) in enumerate(zip(per_turn, truth, strict=True)):
            for call in calls:
                outcome = invocation.invoke_as_bfcl(instances, owners, call.name, call.arguments)
                if recording is not None:
                    recording.add(call, outcome)
                if outcome.text in wanted:
                    produced[outcome.text] += 1
            failure = _turn_failure(index, bool(calls), expected, instances, produced)
            if failure is not None:
                check = failure
                break
        return check if recording is None else replace(check, execution=recording.execution(instances))

    def check_rollout(self, task: BfclTask, rollout: Rollout, *, keep_execution: bool = False) -> Check:
        """Y for a rollout; its turn count comes from ``metadata["turns"]`` when the importer recorded it.

        A prompting rollout whose calls BFCL reads differently (``metadata["bfcl_calls"]``, written by the
        importer: see :mod:`prefix_exec.envs.bfcl.prompting`) is checked on BFCL's reading. Otherwise, a
        rollout of the driver's own loop (``metadata["loop"] == "prefix_exec"``) skips undecodable calls
        one by one, as that loop did; any other skips their whole step, as BFCL does. Raises
        :class:`~prefix_exec.errors.InputError` when ``bfcl_calls`` is not a list of turns of
        ``[name, arguments]`` pairs. ``keep_execution``: see :meth:`check`.
        """
        turns = rollout.metadata.get("turns")
        if BFCL_CALLS in rollout.metadata:
            per_turn = read_bfcl_calls(rollout.metadata[BFCL_CALLS], rollout.task_id)
            if turns is not None and int(turns) != len(per_turn):
                raise InputError(
                    f"{rollout.task_id}: metadata.{BFCL_CALLS} has {len(per_turn)} turns, metadata.turns {turns}"
                )
            return self.check_turns(task, per_turn)
        whole = rollout.metadata.get("loop") != OWN_LOOP
        turn_count = int(turns) if turns is not None else None
        return self.check(task, rollout.actions, turn_count, whole_steps=whole, keep_execution=keep_execution)

    def model_state(
        self, task: BfclTask, actions: Sequence[ToolCall], *, whole_steps: bool = True
    ) -> api_classes.Instances:
        """The model's instances after every call :meth:`check` would execute (all turns the actions reach)."""
        turns = max((call.turn + 1 for call in actions), default=0)
        instances = self.templates.fresh(task)
        owners = _owners(task)
        for calls in executed_calls(actions, turns, whole_steps):
            for call in calls:
                invoke_lenient(instances, owners, call.name, call.arguments)
        return instances


_MISSING = object()


def _turn_failure(
    index: int, called: bool, expected: TurnTruth, instances: api_classes.Instances, produced: Counter[str]
) -> Check | None:
    """Why turn ``index`` fails BFCL's checks once its calls ran (``called``: it had any), or ``None``."""
    if expected.calls == 0:
        return None
    if not called:
        return Check(0, f"[empty_turn_model_response] no call in turn {index}", index)
    for class_name, reference in expected.instances.items():
        differences = [
            attr
            for attr, value in api_classes.public_state(reference).items()
            if _differs(getattr(instances[class_name], attr, _MISSING), value)
        ]
        if differences:
            return Check(
                0,
                f"[instance_state_mismatch] {class_name} differs after turn {index} in {', '.join(differences)}",
                index,
            )
    missing = Counter(expected.results) - produced
    if missing:
        shown = "; ".join(sorted(missing))[:300]
        return Check(0, f"[execution_response_mismatch] turn {index} lacks ground-truth results: {shown}", index)
    return None


class _Recording:
    """The :class:`Execution` being recorded, in the order the calls run, up to :data:`EXECUTION_CHARS`."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.calls: list[ToolCall] = []
        self.outcomes: list[invocation.CallOutcome] = []
        self.notes: list[tuple[str, ...]] = []
        self.chars = 0
        self.full = False

    def add(self, call: ToolCall, outcome: invocation.CallOutcome) -> None:
        """Record ``call``'s ``outcome`` as it returns; past the bound, nothing more (the call's text and its
        error message, often a second copy of the text, are counted)."""
        if self.full:
            return
        self.chars += len(outcome.text) + len(outcome.error or "") + len(outcome.exceeded or "")
        if self.chars > EXECUTION_CHARS:
            self.full = True
            return
        self.calls.append(call)
        self.notes.append(soft_signals(outcome.result))  # now: a later call may change the result object
        self.outcomes.append(outcome if outcome.result is None else replace(outcome, result=None))

    def execution(self, instances: api_classes.Instances) -> Execution:
        """The execution, ``instances`` being the state after every call the check ran (all recorded unless
        :attr:`full`)."""
        calls, outcomes, notes = tuple(self.calls), tuple(self.outcomes), tuple(self.notes)
        state = [] if self.full else [instances]
        return Execution(self.task_id, calls, outcomes, notes, invocation.TIME_LIMIT, state)


def _differs(found: Any, expected: Any) -> bool:
    """``found != expected``; a state nested too deeply to compare (hundreds of folders) differs."""
    try:
        return bool(found != expected)
    except RecursionError:
        return True


def _owners(task: BfclTask) -> dict[str, str]:
    return {name: c for c in task.involved_classes for name in api_classes.public_methods(c)}


def _force_terminated(turns: int, expected: int) -> Check:
    return Check(0, f"[force_terminated] the rollout has {turns} turns, the ground truth {expected}")


def read_bfcl_calls(value: Any, task_id: str) -> list[list[ToolCall]]:
    """``metadata["bfcl_calls"]`` (a list per turn of ``[name, arguments]`` pairs) as calls per turn."""
    where = f"{task_id}: metadata.{BFCL_CALLS}"
    if not isinstance(value, list):
        raise InputError(f"{where} must be a list of turns, got {type(value).__name__}")
    per_turn = []
    for turn, calls in enumerate(value):
        if not isinstance(calls, list):
            raise InputError(f"{where}[{turn}] must be a list of [name, arguments] pairs")
        decoded = []
        for index, pair in enumerate(calls):
            if not (
                isinstance(pair, list | tuple)
                and len(pair) == 2
                and isinstance(pair[0], str)
                and isinstance(pair[1], Mapping)
            ):
                raise InputError(f"{where}[{turn}][{index}] must be a [name, arguments] pair")
            decoded.append(ToolCall(pair[0], dict(pair[1]), f"t{turn}.s0.c{index}", turn))
        per_turn.append(decoded)
    return per_turn


def executed_calls(actions: Sequence[ToolCall], turns: int, whole_steps: bool = True) -> list[list[ToolCall]]:
    """Calls per turn that run: undecodable calls never do, and with ``whole_steps`` neither does their step."""
    bad_steps = set()
    for call in actions:
        if call.parse_error is not None and whole_steps:
            bad_steps.add(_step_of(call))
    per_turn: list[list[ToolCall]] = [[] for _ in range(turns)]
    for call in actions:
        if call.parse_error is not None or _step_of(call) in bad_steps:
            continue
        if 0 <= call.turn < turns:
            per_turn[call.turn].append(call)
    return per_turn


def _step_of(call: ToolCall) -> tuple[int, int] | str:
    match = CALL_ID.match(call.call_id or "")
    if match is None:
        return f"call:{id(call)}"
    return (int(match.group(1)), int(match.group(2)))
