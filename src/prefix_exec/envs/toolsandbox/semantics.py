"""ToolSandbox's semantics, in one place for the importer, the recorded and the live environment.

Exception -> label (:data:`EXCEPTION_RULES`), an outcome -> verdict (:func:`judge`), the no-tool finish
(:func:`judge_finish`), where minefield hits land (:func:`locate_minefields`), Y (:func:`final_success`), and
the facts a session needs beyond the calls, with their typed metadata contract (:class:`ScenarioFacts`).

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
``information`` failure even though the sandbox accepted it. When a call both raised and hit a minefield,
both causes are kept and the fixed order picks the primary one. **Environment faults** are not the agent's
(a search tool without a RapidAPI key, a network error): such a call is accepted with a note starting
``environment fault``, never labelled.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping
from prefix_exec.trajectory import FailureLabel, Verdict

DATASET = "toolsandbox"
#: The category ToolSandbox gives scenarios where the agent should ask or refuse instead of acting.
INSUFFICIENT_INFORMATION = "INSUFFICIENT_INFORMATION"
#: Note put on every verdict of a rollout read from ``conversation.json`` (no execution context).
HEURISTIC_NOTE = "heuristic: verdict inferred from the tool message text (no execution_context.json)"
ENVIRONMENT_FAULT_NOTE = "environment fault"
#: Longest exception text classified (the regexes are linear, but a 10 MB message is still not read twice).
MAX_EXCEPTION_CHARS = 4096


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
UNMAPPED = ExceptionRule("unmapped exception type", FailureLabel.SCHEMA)


def split_exception(text: str) -> tuple[str, str]:
    """``"polars.exceptions.NoDataError: No db entry"`` -> ``("polars.exceptions.NoDataError", "No db entry")``.

    The type is the text before the first ``": "`` (it may be module-qualified); a text without one is all
    type, with an empty message.
    """
    head, sep, tail = text.strip().partition(": ")
    return head.strip(), tail if sep else ""


def classify_exception(text: str) -> ExceptionRule:
    """The first rule of :data:`EXCEPTION_RULES` matching the exception text, or :data:`UNMAPPED`."""
    qualified, message = split_exception(text[:MAX_EXCEPTION_CHARS])
    for rule in EXCEPTION_RULES:
        if rule.matches(qualified, message):
            return rule
    return UNMAPPED


class MinefieldHit(TypedDict):
    """One minefield hit: the 1-based action ``depth`` it lands on (0: before any call), the minefield's
    index in the scenario and its similarity (> 0)."""

    depth: int
    minefield: int
    similarity: float


class FactsMetadata(TypedDict, total=False):
    """The keys of ``Rollout.metadata`` that :class:`ScenarioFacts` reads and writes: the scenario's
    ``categories`` (absent: unknown), its ``minefield_hits`` and the ``source`` the calls came from
    (``execution_context``, ``conversation`` or ``live``)."""

    categories: list[str]
    minefield_hits: list[MinefieldHit]
    source: str


@dataclass(frozen=True)
class ScenarioFacts:
    """What a session needs beyond the calls.

    ``minefield_depths`` are 1-based action depths that hit a minefield; depth 0 means the forbidden state was
    reached before any call. ``insufficient_information`` allows finishing without tools. ``heuristic`` marks
    verdicts inferred from message text (no execution context).
    """

    insufficient_information: bool = False
    minefield_depths: frozenset[int] = frozenset()
    heuristic: bool = False

    @classmethod
    def from_metadata(cls, task_id: str, metadata: JsonMapping) -> ScenarioFacts:
        """Read :class:`FactsMetadata` keys; raises :class:`InputError` naming the field when one is malformed."""
        categories = metadata.get("categories")
        if categories is None:
            # Without result_summary.json the categories are unknown; ToolSandbox names every
            # insufficient-information scenario with this suffix.
            insufficient = task_id.endswith("_insufficient_information")
        elif isinstance(categories, list) and all(isinstance(c, str) for c in categories):
            insufficient = INSUFFICIENT_INFORMATION in categories
        else:
            raise InputError("expected a list of category names", field=f"{task_id}: metadata.categories")
        hits = metadata.get("minefield_hits") or []
        if not isinstance(hits, list):
            raise InputError("expected a list", field=f"{task_id}: metadata.minefield_hits")
        depths = set()
        for number, hit in enumerate(hits):
            depth = hit.get("depth") if isinstance(hit, Mapping) else None
            if type(depth) is not int or depth < 0:
                raise InputError(
                    "each hit needs an integer depth >= 0", field=f"{task_id}: metadata.minefield_hits[{number}].depth"
                )
            depths.add(depth)
        return cls(insufficient, frozenset(depths), heuristic=metadata.get("source") == "conversation")

    @classmethod
    def of_scenario(cls, categories: Sequence[str], hits: Sequence[MinefieldHit]) -> ScenarioFacts:
        return cls(INSUFFICIENT_INFORMATION in categories, frozenset(h["depth"] for h in hits))

    def to_metadata(self, categories: Sequence[str], hits: Sequence[MinefieldHit], source: str) -> FactsMetadata:
        """The metadata keys :meth:`from_metadata` reads back to these facts (``hits`` give the depths)."""
        if frozenset(h["depth"] for h in hits) != self.minefield_depths:
            raise ValueError("the minefield hits do not give these facts' depths")
        return {"categories": list(categories), "minefield_hits": [MinefieldHit(**h) for h in hits], "source": source}


def locate_minefields(minefields: Sequence[tuple[int, int, float]], rows: Sequence[int | None]) -> list[MinefieldHit]:
    """Hits of ``(minefield index, snapshot index, similarity)`` triples with similarity > 0 (the rule by which
    ToolSandbox zeroes a scenario's similarity), each at the last agent call whose SANDBOX row index ``rows[i]``
    is <= the matched snapshot (depth 0: before any call)."""
    known = sorted(row for row in rows if row is not None)
    hits: list[MinefieldHit] = []
    for index, snapshot, similarity in minefields:
        if similarity > 0:
            depth = bisect.bisect_right(known, snapshot)
            hits.append(MinefieldHit(depth=depth, minefield=index, similarity=similarity))
    return hits


def final_success(similarity: float, threshold: float = 1.0) -> int:
    """Y: 1 when ToolSandbox's similarity (milestones, zeroed by any minefield hit) reaches ``threshold``."""
    return int(similarity >= threshold)


def judge(exception: str | None, result: Any, depth: int, facts: ScenarioFacts) -> Verdict:
    """The verdict of the call at ``depth`` (1-based): ``exception`` is the sandbox's exception text for it
    (``None``: it ran), ``result`` what the sandbox answered."""
    causes: list[FailureLabel] = []
    reasons: list[str] = []
    notes: list[str] = [HEURISTIC_NOTE] if facts.heuristic else []
    if exception is not None:
        rule = classify_exception(exception)
        if rule.label is None:
            notes.append(f"{ENVIRONMENT_FAULT_NOTE} ({rule.name}), not the agent's: {exception}")
        else:
            causes.append(rule.label)
            reasons.append(f"{exception} [{rule.name}]")
            if rule is UNMAPPED:
                notes.append(f"exception type {split_exception(exception)[0]!r} is not in the table; schema by default")
    if depth in facts.minefield_depths or (depth == 1 and 0 in facts.minefield_depths):
        causes.append(FailureLabel.INFORMATION)
        reasons.append("the call hit a minefield (a forbidden state); the sandbox itself did not reject it")
    if causes:
        return Verdict.reject(causes, "; ".join(reasons), result=result, notes=notes)
    return Verdict.accept(result=result, notes=notes)


def judge_finish(facts: ScenarioFacts) -> Verdict:
    """The no-tool finish: allowed only in an insufficient-information scenario that hit no minefield."""
    notes = (HEURISTIC_NOTE,) if facts.heuristic else ()
    if 0 in facts.minefield_depths:
        return Verdict.reject(
            FailureLabel.INFORMATION,
            "the agent reached a minefield (forbidden state) without any tool call",
            notes=notes,
        )
    if facts.insufficient_information:
        return Verdict.accept(notes=(*notes, "insufficient-information scenario: finishing without tools is allowed"))
    return Verdict.reject(
        FailureLabel.PRECONDITION,
        "the scenario needs tool use, but the agent stopped before any tool call",
        notes=notes,
    )
