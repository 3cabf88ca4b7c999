"""The generic environment's sessions: a loaded tool spec's tools and tasks, and the checks of one call.

:class:`CustomEnvironment` is what :mod:`prefix_exec.envs.custom.environment` builds from a spec; :class:`CustomSession`
answers one call at a time with our checks (the list in :mod:`prefix_exec.envs.custom.environment`) and the call's
recorded outcome (:mod:`envs.custom.evidence`). ``envs.custom.environment`` re-exports every public name here.
"""

from __future__ import annotations

import copy
import json
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefix_exec.envs.custom import evidence
from prefix_exec.envs.custom.evidence import DEFAULT_POLICY, ORIGIN_CHECK, EvidencePolicy
from prefix_exec.envs.custom.json_schema import Schema
from prefix_exec.envs.custom.mentions import Mentions
from prefix_exec.envs.custom.schema_keywords import SchemaProblem
from prefix_exec.errors import InputError, ReplayError
from prefix_exec.json_types import JsonMapping, JsonObject, json_path
from prefix_exec.trajectory import FailureLabel, ToolCall, Verdict

Hook = Callable[..., Any]  # (state, args), and a postcondition's (state, args, result)
#: The note on a verdict a postcondition rejected (the call ran; its result failed the check).
POSTCONDITION = "postcondition"


@dataclass(frozen=True)
class Reject:
    """Returned by a hook to reject the action: the benchmark does not accept the transition."""

    label: FailureLabel | str
    reason: str

    @property
    def cause(self) -> FailureLabel:
        return self.label if isinstance(self.label, FailureLabel) else FailureLabel.parse(self.label)


@dataclass(frozen=True)
class ToolSpec:
    """One declared tool. ``produces`` maps a value kind to a result path (``id``, ``items[*].id``, ``$``).

    Arrays are element-wise unless ``whole_arrays``: an argument of ``refs`` that is a list refers to each of its
    elements, an ``invalidates`` argument that is a list invalidates each, and a ``produces`` path that selects a
    list produces each element (``whole_arrays: true``: the array is one value, compared whole)."""

    name: str
    parameters: JsonMapping
    validator: Schema = field(repr=False, compare=False)
    refs: Mapping[str, str] = field(default_factory=dict)
    produces: Mapping[str, str] = field(default_factory=dict)
    invalidates: Mapping[str, str] = field(default_factory=dict)
    precondition: Hook | None = None
    effect: Hook | None = None
    exposed_from_turn: int = 0
    whole_arrays: bool = False
    #: Run on a call that ran, with its result: ``postcondition(state, args, result)`` returns None, a reason (the
    #: call fails as ``state_consistency``) or a :class:`Reject`. Not run on a call that has no result yet.
    postcondition: Hook | None = None
    #: Whether a value an earlier user or system message gave satisfies this tool's ``refs``; ``None``: the
    #: spec's ``conversation_gives`` decides (:meth:`CustomEnvironment.gives`).
    conversation_gives: bool | None = None

    def values(self, value: Any) -> list[Any]:
        """The values an argument or a produced value stands for: a list's elements, unless ``whole_arrays``."""
        return list(value) if isinstance(value, list) and not self.whole_arrays else [value]


@dataclass(frozen=True)
class TaskSpec:
    """One task's settings; ``no_tool_rule`` says where ``allow_no_tool`` comes from (records quote it)."""

    initial_state: JsonMapping
    allow_no_tool: bool
    given: Mapping[str, tuple[Any, ...]]
    no_tool_rule: str = ""


class CustomEnvironment:
    """An :class:`~prefix_exec.envs.base.Environment` over a loaded tool spec."""

    def __init__(
        self,
        name: str,
        tools: Mapping[str, ToolSpec],
        tasks: Mapping[str, TaskSpec],
        default: TaskSpec | None,
        *,
        form: str = "spec",
        policy: EvidencePolicy = DEFAULT_POLICY,
        conversation: bool | Mapping[str, bool] = True,
    ) -> None:
        self.name = name
        self.tools = dict(tools)
        self.tasks = dict(tasks)
        self.default = default
        #: The form the spec was read as: ``spec``, ``openai`` or ``mcp`` (see spec_formats.FORM_NAMES).
        self.form = form
        #: How recorded outcomes count, and whether a rollout must call a tool (:mod:`envs.custom.evidence`).
        self.policy = policy
        #: Tools the hooks side file names that this MCP listing lacks: their entries wait, left out
        #: (:func:`envs.custom.spec_layers.split_unlisted`); a call to one is an unknown tool.
        self.unlisted: tuple[str, ...] = ()
        #: The spec's top-level ``conversation_gives``: a switch, or one per kind (kinds not named: on).
        self.conversation = conversation
        #: Whether any tool's ``refs`` may be satisfied by the conversation (else sessions skip its messages).
        self.hears = any(self.gives(t, kind) for t in self.tools.values() for kind in t.refs.values())

    def gives(self, tool: ToolSpec, kind: str) -> bool:
        """Whether a value an earlier user or system message gave satisfies ``tool``'s ``refs`` of ``kind``: the
        tool's own ``conversation_gives`` when it sets one, else the spec's for ``kind``, else the spec's switch
        (default on)."""
        if tool.conversation_gives is not None:
            return tool.conversation_gives
        if isinstance(self.conversation, Mapping):
            return bool(self.conversation.get(kind, True))
        return self.conversation

    @property
    def schema_only(self) -> bool:
        """True when no tool declares refs, produces, invalidates or hooks: only the schema checks apply
        (names, exposure and arguments), as for an OpenAI or MCP tool list without a side file."""
        return not any(t.refs or t.produces or t.invalidates or t.precondition or t.effect for t in self.tools.values())

    def start(self, task_id: str) -> CustomSession:
        task = self.tasks.get(task_id, self.default)
        if task is None:
            raise KeyError(task_id)
        produced: dict[str, dict[str, bool]] = {
            kind: {_key(v): True for v in values} for kind, values in task.given.items()
        }
        return CustomSession(self, task, copy.deepcopy(dict(task.initial_state)), produced, Mentions())


class CustomSession:
    """State of one task: the hooks' state dict, the produced-value registry per kind, and the values the
    conversation's user and system messages gave (:class:`~prefix_exec.envs.custom.mentions.Mentions`, fed by
    :meth:`hear`: replay feeds it the rollout's transcript, :class:`~prefix_exec.envs.base.ConversationAware`).

    :meth:`step` runs our checks (the module docstring) first. When they accept and the call carries a recorded
    observation that the environment's policy reads as a refusal (:func:`prefix_exec.envs.custom.evidence.refusal`), the
    step is rejected with the classifier's label and a reason quoting the recorded error. When the call is
    accepted and no ``effect`` hook simulates the tool, the recorded result (:func:`prefix_exec.envs.custom.evidence.
    recorded_value`) is what its ``produces`` paths read. Every verdict notes its source: ``source: our check``,
    or ``source: recorded outcome (error flag | error pattern)`` with the classifier's rule.
    """

    def __init__(
        self,
        env: CustomEnvironment,
        task: TaskSpec,
        state: JsonObject,
        produced: dict[str, dict[str, bool]],
        heard: Mentions | None = None,
    ) -> None:
        self.env, self.task, self.state, self.produced = env, task, state, produced
        self.heard = heard if heard is not None else Mentions()

    def fork(self) -> CustomSession:
        produced = {k: dict(v) for k, v in self.produced.items()}
        return CustomSession(self.env, self.task, copy.deepcopy(self.state), produced, self.heard.fork())

    def hear(self, index: int, content: Any) -> None:
        """A user or system message (``index``: its 0-based place in the conversation) came before the next call:
        the values it gave (:mod:`envs.custom.mentions`) may satisfy later ``refs``. Not read when no tool's
        ``refs`` may take a value from the conversation (``conversation_gives``)."""
        if self.env.hears:
            self.heard.hear(index, content)

    def reference(self, kind: str, value: Any) -> bool | None:
        """Whether ``value`` is a current ``kind`` (True), a ``kind`` no longer current (False: an ``invalidates``
        used it up), or no ``kind`` an earlier call produced or the task gave (None)."""
        return self.produced.get(kind, {}).get(_key(value))

    def finish_without_tools(self) -> Verdict:
        """The terminal no-tool action: accepted when the task allows it and ``--require-tools`` is off; the
        verdict notes the rule that decided."""
        if self.env.policy.require_tools:
            return Verdict.reject(
                FailureLabel.PRECONDITION,
                "the task needs tool use (--require-tools), but the agent stopped before any tool call",
                notes=(ORIGIN_CHECK, "no-tool rule: --require-tools"),
            )
        rule = f"no-tool rule: {self.task.no_tool_rule}"
        if self.task.allow_no_tool:
            return Verdict.accept(notes=(ORIGIN_CHECK, rule))
        return Verdict.reject(
            FailureLabel.PRECONDITION,
            f"the task needs tool use ({self.task.no_tool_rule}), but the agent stopped before any tool call",
            notes=(ORIGIN_CHECK, rule),
        )

    def step(self, call: ToolCall) -> Verdict:
        tool = self.env.tools.get(call.name)
        if tool is None:
            return Verdict.reject(FailureLabel.SCHEMA, f"unknown tool {call.name!r}", notes=(ORIGIN_CHECK,))
        args = dict(call.arguments)
        causes, reasons, given = self._check(tool, call, args)
        if causes:
            return Verdict.reject(causes, "; ".join(reasons), notes=(ORIGIN_CHECK,))
        # Effects run on a copy so a rejected transition leaves the state as it was.
        state = copy.deepcopy(self.state) if tool.effect is not None else self.state
        result = _run_hook(tool, "effect", tool.effect, state, args) if tool.effect is not None else None
        if isinstance(result, Reject):
            return Verdict.reject(result.cause, result.reason, notes=(ORIGIN_CHECK,))
        refused = evidence.refusal(call.observation, self.env.policy)
        if refused is not None:
            return Verdict.reject(refused.label, refused.reason, notes=refused.notes)
        if tool.postcondition is not None and call.observation is not None:
            after = _run_hook(tool, "postcondition", tool.postcondition, state, args, _result(call))
            if after:
                failed = after if isinstance(after, Reject) else Reject(FailureLabel.STATE_CONSISTENCY, str(after))
                return Verdict.reject(failed.cause, failed.reason, notes=(ORIGIN_CHECK, POSTCONDITION))
        self.state = state
        if tool.effect is not None:
            self._register(tool, args, result)
            return Verdict.accept(result, notes=(ORIGIN_CHECK, *given))
        cut = self._register(tool, args, _recorded(tool, call), limit=evidence.PRODUCED_VALUES)
        return Verdict.accept(result, notes=(ORIGIN_CHECK, *given, *cut))

    def _check(
        self, tool: ToolSpec, call: ToolCall, args: JsonObject
    ) -> tuple[list[FailureLabel], list[str], list[str]]:
        """Every cause our checks 1 to 4 find (the module docstring), their reasons, and the notes of references
        the conversation satisfied (:meth:`_references`)."""
        causes: list[FailureLabel] = []
        reasons: list[str] = []
        if call.turn < tool.exposed_from_turn:
            causes.append(FailureLabel.SCHEMA)
            reasons.append(f"tool {tool.name!r} is not exposed before turn {tool.exposed_from_turn}")
        try:
            errors = tool.validator.errors(args)
        except SchemaProblem as exc:  # the spec is at fault, not the call: no verdict on it (docs/custom.md)
            raise InputError(
                f"tool {tool.name!r}'s schema could not be applied to a call's arguments: {exc}",
                hint="fix the tool's schema in the spec (a pattern, a reference); the call is not judged",
            ) from None
        if errors:
            causes.append(FailureLabel.SCHEMA)
            reasons.extend(f"argument {json_path(e.absolute_path) or '(object)'}: {e.message}" for e in errors)
            return causes, reasons, []
        given = self._references(tool, args, causes, reasons)
        if tool.precondition is not None:
            outcome = _run_hook(tool, "precondition", tool.precondition, self.state, args)
            if isinstance(outcome, Reject):
                causes.append(outcome.cause)
                reasons.append(outcome.reason)
            elif outcome:
                causes.append(FailureLabel.PRECONDITION)
                reasons.append(str(outcome))
        return causes, reasons, given

    def _references(
        self, tool: ToolSpec, args: JsonObject, causes: list[FailureLabel], reasons: list[str]
    ) -> list[str]:
        """Check 3 on each ``refs`` argument, adding causes and reasons; returns a note per value that only the
        conversation gave (``given by the conversation at message N``; N as :meth:`hear` numbered it).

        A value an earlier call produced, or the task gave, is current until an ``invalidates`` uses it up. A value
        only the conversation gave is current too, until an ``invalidates`` uses it up: then it is no longer
        current however often a later message names it again (naming a cancelled reservation does not bring it
        back); only a call that produces it again does."""
        notes: list[str] = []
        for param, kind in tool.refs.items():
            for name, value in referred(tool, args, param):
                current = self.reference(kind, value)
                hears = self.env.gives(tool, kind)
                message = self.heard.given_at(value) if current is None and hears else None
                if message is not None:
                    notes.append(f"given by the conversation at message {message}: {name}={value!r:.80}")
                elif current is None:
                    causes.append(FailureLabel.DEPENDENCY)
                    said = ", the task gave or an earlier user or system message gave" if hears else " or the task gave"
                    reasons.append(f"{name}={value!r} is no {kind} that an earlier call produced{said}")
                elif not current:
                    causes.append(FailureLabel.STATE_CONSISTENCY)
                    reasons.append(f"{name}={value!r} refers to a {kind} that is no longer current")
        return notes

    def _register(self, tool: ToolSpec, args: JsonMapping, result: Any, *, limit: int | None = None) -> list[str]:
        """Apply the call's ``invalidates`` and ``produces``; with ``limit``, at most that many values of a kind
        are taken from ``result``, and the notes returned say where more were left out."""
        for kind, param in tool.invalidates.items():
            for value in tool.values(args[param]) if param in args else []:
                self.produced.setdefault(kind, {})[_key(value)] = False
        notes: list[str] = []
        for kind, path in tool.produces.items():
            values = [v for found in _select(result, path) for v in tool.values(found)]
            if limit is not None and len(values) > limit:
                notes.append(
                    f"produces: the recorded result holds {len(values)} values of {kind}; the first {limit} count"
                )
                values = values[:limit]
            for value in values:
                self.produced.setdefault(kind, {})[_key(value)] = True
        return notes


def _recorded(tool: ToolSpec, call: ToolCall) -> Any:
    """The recorded result of an accepted call, for a tool whose ``produces`` reads it (parsed only then)."""
    return evidence.recorded_value(call.observation) if tool.produces else None


def _result(call: ToolCall) -> Any:
    """A call's result as a postcondition reads it: the recorded value (parsed JSON, or the text)."""
    return evidence.recorded_value(call.observation)


def _run_hook(tool: ToolSpec, kind: str, hook: Hook, state: JsonObject, args: JsonObject, *more: Any) -> Any:
    """Call a user hook; an exception in it is a :class:`ReplayError` for this rollout (a bug in the hooks
    module, named with the raising line), so it is one skipped unit under ``--keep-going``, not a traceback."""
    try:
        return hook(state, args, *more)
    except (Exception, SystemExit) as exc:  # the user's code may raise anything (sys.exit too); budgets and ^C pass
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
        name = getattr(hook, "__name__", repr(hook))
        raise ReplayError(
            f"the {kind} hook {name!r} of tool {tool.name!r} raised {type(exc).__name__}: {exc}{where}; "
            "fix the hooks module (hooks get the task's state dict and the schema-valid arguments)"
        ) from None


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def referred(tool: ToolSpec, args: JsonMapping, param: str) -> list[tuple[str, Any]]:
    """``(name, value)`` for each value the ``refs`` key ``param`` points at in ``args``: an argument's value, or,
    when ``param`` is a path into the arguments (``flights[*].flight_number``: an argument holding a list of
    objects), each value at that path; a list is element-wise unless ``whole_arrays``. ``name`` says where, for
    reasons (``names[1]``, ``flights[*].flight_number[0]``). Nothing when the argument is absent."""
    if param in args:
        each = isinstance(args[param], list) and not tool.whole_arrays
        return [(f"{param}[{i}]" if each else param, v) for i, v in enumerate(tool.values(args[param]))]
    if "." not in param and "[" not in param:
        return []
    values = [v for found in _select(args, param) for v in tool.values(found)]
    return [(f"{param}[{index}]", value) for index, value in enumerate(values)]


def argument_of(param: str) -> str:
    """The argument a ``refs`` key names: itself, or a path's first name (``flights[*].flight_number`` ->
    ``flights``)."""
    return param.split(".", 1)[0].split("[", 1)[0]


def _select(value: Any, path: str) -> list[Any]:
    """Values at a dotted path; ``[*]`` fans out over a list's elements or an object's values (an object keyed
    by data, such as ``{"credit_card_7815826": {...}}``), once per ``[*]`` (``[*][*].flight_number``: a list of
    lists), and ``$`` is the whole value."""
    found = [value]
    for part in [p for p in path.split(".") if p and p != "$"]:
        name = part
        fans = 0
        while name.endswith("[*]"):
            name, fans = name[:-3], fans + 1
        if name:
            found = [item.get(name) for item in found if isinstance(item, Mapping)]
        for _ in range(fans):
            found = [v for item in found for v in _elements(item)]
        found = [item for item in found if item is not None]
    return found


def _elements(item: Any) -> list[Any]:
    """What ``[*]`` fans out to: a list's elements or an object's values (nothing for a scalar)."""
    if isinstance(item, list):
        return item
    return list(item.values()) if isinstance(item, Mapping) else []
