"""ToolSandbox over its *recorded* execution: the verdicts a run already produced, replayed in order.

ToolSandbox (apple/ToolSandbox) is not on PyPI, and the paper derives its prefix quantities from executed
trajectories. So this environment does not execute anything: the importer
(:mod:`prefix_exec.importers.toolsandbox`) attaches to every action the reply the sandbox recorded,
``ToolCall.observation = Observation(content, error)``, where ``error`` is true when the row's
``tool_call_exception`` was set and ``content`` is then the exception text (``"TypeError: missing ..."``).
A session turns each recorded outcome into a :class:`~prefix_exec.trajectory.Verdict` with a label from
:data:`EXCEPTION_RULES`, so :func:`prefix_exec.replay.replay` and :func:`prefix_exec.scoring.score_to_file`
work unchanged.

Labelling table (first matching rule wins; ``type`` is the text before the first ``": "``, and its last
dotted part is compared, so ``polars.exceptions.NoDataError`` matches ``NoDataError``):

============================  ==========================================================  ====================
rule                          matches                                                     label
============================  ==========================================================  ====================
missing API key               message names ``RAPID_API_KEY``                             environment fault
network                       type qualified with ``requests.``/``urllib3.``/``http.``    environment fault
remote API                    ``RuntimeError`` "Conversion failed" (currency API)         environment fault
unknown tool                  ``KeyError`` "... is not a known allowed tool"              schema
parse error                   ``JSONDecodeError``, ``SyntaxError``                        schema
wrong type / arguments        ``TypeError``                                               schema
missing reference             ``NoDataError``                                             dependency
setting off                   ``ConnectionError`` (cellular, wifi off)                    precondition
setting forbids               ``PermissionError`` (location service, low battery mode)    precondition
already in that state         ``DuplicateError``, or any message with "already"           state_consistency
bad value                     ``ValueError`` (any other)                                  schema
unmapped                      anything else                                               schema, with a note
============================  ==========================================================  ====================

A call that hit a minefield (a forbidden state, in practice the insufficient-information scenarios) is an
``information`` failure even though the sandbox accepted it; the importer locates it and lists its depth in
``rollout.metadata["minefield_hits"]``. When a call both raised and hit a minefield, both causes are kept
and the fixed order picks the primary one.

**Environment faults** are not the agent's (a search tool without a RapidAPI key, a network error). Such a
call is *accepted* with a note starting ``environment fault:``, never labelled; the importer also lists it
in ``rollout.metadata["environment_faults"]`` and the CLI counts those rollouts in its summary, so they are
visible and can be excluded (``--environment-faults skip``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefix_exec.replay import ReplayError
from prefix_exec.trajectory import FailureLabel, Rollout, ToolCall, Verdict

DATASET = "toolsandbox"
#: The category ToolSandbox gives scenarios where the agent should ask or refuse instead of acting.
INSUFFICIENT_INFORMATION = "INSUFFICIENT_INFORMATION"
#: Note put on every verdict of a rollout read from ``conversation.json`` (no execution context).
HEURISTIC_NOTE = "heuristic: verdict inferred from the tool message text (no execution_context.json)"
ENVIRONMENT_FAULT_NOTE = "environment fault"


@dataclass(frozen=True)
class ExceptionRule:
    """One row of the labelling table. ``label`` ``None`` marks an environment fault (not the agent's).

    ``types`` are unqualified exception names (empty: any type); ``pattern`` is a case-insensitive regex
    searched in the message (``None``: any message); ``qualifiers`` are module prefixes of the type.
    """

    name: str
    label: FailureLabel | None
    types: tuple[str, ...] = ()
    pattern: str | None = None
    qualifiers: tuple[str, ...] = ()

    def matches(self, qualified_type: str, message: str) -> bool:
        short = qualified_type.rsplit(".", 1)[-1]
        if self.types and short not in self.types:
            return False
        if self.qualifiers and not qualified_type.startswith(self.qualifiers):
            return False
        return self.pattern is None or re.search(self.pattern, message, re.IGNORECASE) is not None


EXCEPTION_RULES: tuple[ExceptionRule, ...] = (
    ExceptionRule("missing API key", None, pattern=r"RAPID_API_KEY"),
    ExceptionRule("network", None, qualifiers=("requests.", "urllib3.", "http.")),
    ExceptionRule("remote API", None, types=("RuntimeError",), pattern=r"conversion failed"),
    ExceptionRule("unknown tool", FailureLabel.SCHEMA, types=("KeyError",), pattern=r"not a known allowed tool"),
    ExceptionRule("parse error", FailureLabel.SCHEMA, types=("JSONDecodeError", "SyntaxError")),
    ExceptionRule("wrong type or arguments", FailureLabel.SCHEMA, types=("TypeError",)),
    ExceptionRule("missing reference", FailureLabel.DEPENDENCY, types=("NoDataError",)),
    ExceptionRule("setting off", FailureLabel.PRECONDITION, types=("ConnectionError",)),
    ExceptionRule("setting forbids", FailureLabel.PRECONDITION, types=("PermissionError",)),
    ExceptionRule("duplicate", FailureLabel.STATE_CONSISTENCY, types=("DuplicateError",)),
    ExceptionRule("already in that state", FailureLabel.STATE_CONSISTENCY, pattern=r"\balready\b"),
    ExceptionRule("bad value", FailureLabel.SCHEMA, types=("ValueError",)),
)
_UNMAPPED = ExceptionRule("unmapped exception type", FailureLabel.SCHEMA)


def split_exception(text: str) -> tuple[str, str]:
    """``"polars.exceptions.NoDataError: No db entry"`` -> ``("polars.exceptions.NoDataError", "No db entry")``.

    The type is the text before the first ``": "`` (it may be module-qualified); a text without one is all
    type, with an empty message.
    """
    head, sep, tail = text.strip().partition(": ")
    return head.strip(), tail if sep else ""


def classify_exception(text: str) -> ExceptionRule:
    """The first rule of :data:`EXCEPTION_RULES` matching the recorded exception text, or the unmapped rule."""
    qualified, message = split_exception(text)
    for rule in EXCEPTION_RULES:
        if rule.matches(qualified, message):
            return rule
    return _UNMAPPED


@dataclass(frozen=True)
class ScenarioFacts:
    """What a session needs beyond the recorded calls, read from ``Rollout.metadata``.

    ``minefield_depths`` are 1-based action depths that hit a minefield; depth 0 means the forbidden state was
    reached before any call. ``insufficient_information`` allows finishing without tools.
    """

    insufficient_information: bool = False
    minefield_depths: frozenset[int] = frozenset()
    heuristic: bool = False

    @classmethod
    def from_metadata(cls, task_id: str, metadata: Mapping[str, Any]) -> ScenarioFacts:
        categories = metadata.get("categories")
        if categories is None:
            # Without result_summary.json the categories are unknown; ToolSandbox names every
            # insufficient-information scenario with this suffix.
            insufficient = task_id.endswith("_insufficient_information")
        else:
            insufficient = INSUFFICIENT_INFORMATION in categories
        hits: Sequence[Mapping[str, Any]] = metadata.get("minefield_hits") or ()
        return cls(
            insufficient_information=insufficient,
            minefield_depths=frozenset(int(hit["depth"]) for hit in hits),
            heuristic=metadata.get("source") == "conversation",
        )


class RecordedSession:
    """Replays one scenario's recorded outcomes; ``position`` counts the actions stepped so far."""

    def __init__(self, facts: ScenarioFacts, position: int = 0) -> None:
        self.facts = facts
        self.position = position

    def fork(self) -> RecordedSession:
        return RecordedSession(self.facts, self.position)

    def finish_without_tools(self) -> Verdict:
        notes = (HEURISTIC_NOTE,) if self.facts.heuristic else ()
        if 0 in self.facts.minefield_depths:
            return Verdict.reject(
                FailureLabel.INFORMATION,
                "the agent reached a minefield (forbidden state) without any tool call",
                notes=notes,
            )
        if self.facts.insufficient_information:
            return Verdict.accept(
                notes=(*notes, "insufficient-information scenario: finishing without tools is allowed")
            )
        return Verdict.reject(
            FailureLabel.PRECONDITION,
            "the scenario needs tool use, but the agent stopped before any tool call",
            notes=notes,
        )

    def step(self, call: ToolCall) -> Verdict:
        """The recorded verdict of ``call``, the next action of the rollout.

        Raises :class:`~prefix_exec.replay.ReplayError` for a call with no recorded reply: this environment
        cannot execute calls, only replay what the sandbox did (live replay needs ToolSandbox installed).
        """
        self.position += 1
        depth = self.position
        observation = call.observation
        if observation is None or observation.error is None:
            raise ReplayError(
                f"action {depth} ({call.name}) has no recorded reply in the ToolSandbox run, so it cannot be "
                "judged; the recorded environment only replays what the sandbox executed"
            )
        causes: list[FailureLabel] = []
        reasons: list[str] = []
        notes: list[str] = [HEURISTIC_NOTE] if self.facts.heuristic else []
        if observation.error:
            text = str(observation.content)
            rule = classify_exception(text)
            if rule.label is None:
                notes.append(f"{ENVIRONMENT_FAULT_NOTE} ({rule.name}), not the agent's: {text}")
            else:
                causes.append(rule.label)
                reasons.append(f"{text} [{rule.name}]")
                if rule is _UNMAPPED:
                    notes.append(f"exception type {split_exception(text)[0]!r} is not in the table; schema by default")
        if depth in self.facts.minefield_depths or (depth == 1 and 0 in self.facts.minefield_depths):
            causes.append(FailureLabel.INFORMATION)
            reasons.append("the call hit a minefield (a forbidden state); the sandbox itself did not reject it")
        if causes:
            return Verdict.reject(causes, "; ".join(reasons), result=observation.content, notes=notes)
        return Verdict.accept(result=observation.content, notes=notes)


class RecordedToolSandbox:
    """The environment of one imported rollout: ``start(task_id)`` replays that rollout's record.

    Use :func:`recorded_environment` as the ``env_for`` of :func:`~prefix_exec.scoring.score_to_file`.
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
