"""Structured plans and verdicts: the records, decoding planners' and verifiers' JSON answers, and what every
planning variant is told (:class:`PlanRequest`). Each variant's prompts and loop are in its own module
(:mod:`~prefix_exec.agents.prompt_planning`, :mod:`~prefix_exec.agents.plan_conditioned`,
:mod:`~prefix_exec.agents.dual_loop`).

A plan is ``{"steps": [{"tool": NAME, "arguments": {...}, "bindings": {ARG: "step N.PATH"}}]}``: each
step names one tool (a non-empty string) and its arguments (an object; absent means ``{}``); ``bindings``
(an object; absent means ``{}``) say which argument takes a value from an earlier step's output, as
``"step N"`` (that step's whole output) or ``"step N.PATH"`` (a dotted path into it), with ``N`` the 1-based
number of an earlier step. Anything else is a structure error: the plan keeps its raw text, no steps and
the error (:attr:`Plan.parse_error`). Whether a tool exists and its arguments fit its schema is the
verifier's check, not the parser's.

A verdict is ``{"approved": bool, "issues": [{"step": N, "check": CHECK, "message": TEXT}]}`` with ``CHECK``
one of :data:`CHECKS`; :attr:`PlanVerdict.origin` says whether a verifier gave it, or it stands for a plan that
failed the structure check (no verifier call) or a verifier answer that could not be read. Model text is only
ever parsed as JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prefix_exec.json_types import JsonMapping
from prefix_exec.llm.types import ToolSchema

CHECKS = ("tool_existence", "schema", "precondition", "binding")
#: :attr:`PlanVerdict.origin` values: a verifier's verdict, a plan failing the structure check, an unreadable verifier.
VERIFIER, PLAN_FORMAT, VERIFIER_FORMAT = "verifier", "plan_format", "verifier_format"

#: Bounds (characters) on what planning puts in prompts and transcript notes besides the tool listing.
NOTE_CHARS = 2000
PLAN_TEXT_CHARS = 8000
HISTORY_USER_CHARS = 1500
HISTORY_ANSWER_CHARS = 400
HISTORY_CHARS = 6000

_BINDING = re.compile(r"step ([0-9]+)((?:\.[^.]+)*)")


def clip(text: str | None, limit: int = NOTE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut; ``None`` is ``""``."""
    text = text or ""
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more characters]"


@dataclass(frozen=True)
class Plan:
    """A decoded plan; ``parse_error`` is set (and ``steps`` empty) when the answer was not a valid plan.

    ``issues`` are the structure errors in the verdict issue shape (``check`` = ``"format"``).
    """

    steps: tuple[JsonMapping, ...]
    raw: str
    parse_error: str | None = None
    issues: tuple[JsonMapping, ...] = ()

    def to_text(self) -> str:
        if self.parse_error is not None:
            return self.raw
        return json.dumps({"steps": [dict(s) for s in self.steps]}, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class PlanVerdict:
    """The verdict on a plan. ``origin`` is :data:`VERIFIER`, :data:`PLAN_FORMAT` or :data:`VERIFIER_FORMAT`;
    the last two are never approved and carry a ``format`` issue."""

    approved: bool
    issues: tuple[JsonMapping, ...]
    raw: str
    origin: str = VERIFIER

    def feedback(self) -> str:
        return json.dumps({"approved": self.approved, "issues": [dict(i) for i in self.issues]}, ensure_ascii=False)


def first_json_object(text: str | None) -> Any:
    """The first JSON object in ``text`` (code fences and prose around it allowed); raises ``ValueError``."""
    if not text:
        raise ValueError("empty answer")
    stripped = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    decoder = json.JSONDecoder()
    for start in [i for i, ch in enumerate(stripped) if ch == "{"]:
        try:
            value, _ = decoder.raw_decode(stripped, start)
        except json.JSONDecodeError:
            continue
        return value
    raise ValueError("no JSON object in the answer")


def _step_errors(number: int, step: Any) -> list[str]:
    """What is wrong with plan step ``number`` (1-based); empty when it is well formed."""
    if not isinstance(step, dict):
        return ["a step must be an object"]
    errors = []
    if not isinstance(step.get("tool"), str) or not step["tool"]:
        errors.append("'tool' must be a non-empty string")
    if not isinstance(step.get("arguments", {}), dict):
        errors.append("'arguments' must be an object")
    bindings = step.get("bindings", {})
    if not isinstance(bindings, dict):
        return [*errors, "'bindings' must be an object"]
    for arg, source in bindings.items():
        match = _BINDING.fullmatch(source) if isinstance(source, str) else None
        if match is None:
            errors.append(f"binding {arg!r} must be a string 'step N' or 'step N.PATH', got {source!r}")
        elif not 1 <= int(match.group(1)) < number:
            earlier = f"1..{number - 1}" if number > 1 else "none: step 1 has no earlier step"
            errors.append(f"binding {arg!r} names step {match.group(1)}; it must name an earlier step ({earlier})")
    return errors


def parse_plan(text: str | None) -> Plan:
    """Decode and structure-check a planner's answer (see the module docstring for the shape)."""
    try:
        data = first_json_object(text)
    except ValueError as exc:
        issue = {"step": None, "check": "format", "message": str(exc)}
        return Plan((), text or "", parse_error=str(exc), issues=(issue,))
    steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(steps, list):
        message = "the plan must be an object with a 'steps' list"
        issue = {"step": None, "check": "format", "message": message}
        return Plan((), text or "", parse_error=message, issues=(issue,))
    issues = tuple(
        {"step": n, "check": "format", "message": e} for n, step in enumerate(steps, 1) for e in _step_errors(n, step)
    )
    if issues:
        error = "; ".join(f"step {i['step']}: {i['message']}" for i in issues)
        return Plan((), text or "", parse_error=error, issues=issues)
    return Plan(tuple(steps), text or "")


def parse_verdict(text: str | None) -> PlanVerdict:
    """Decode a verifier's answer; one that is not a verdict object has source :data:`VERIFIER_FORMAT`."""
    try:
        data = first_json_object(text)
    except ValueError as exc:
        issue = {"step": None, "check": "format", "message": str(exc)}
        return PlanVerdict(False, (issue,), text or "", VERIFIER_FORMAT)
    if not isinstance(data, dict) or not isinstance(data.get("approved"), bool):
        issue = {"step": None, "check": "format", "message": "'approved' must be true or false"}
        return PlanVerdict(False, (issue,), text or "", VERIFIER_FORMAT)
    issues = tuple(i for i in data.get("issues") or [] if isinstance(i, dict))
    return PlanVerdict(bool(data["approved"]), issues, text or "")


def format_verdict(plan: Plan) -> PlanVerdict:
    """The failed verification round a plan with a structure error stands for (no verifier is asked)."""
    return PlanVerdict(False, plan.issues, plan.raw, PLAN_FORMAT)


def tools_listing(tools: Sequence[ToolSchema]) -> str:
    return json.dumps(
        [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools],
        ensure_ascii=False,
        sort_keys=True,
    )


def history_text(turns: Sequence[tuple[str, str | None]]) -> str:
    """Earlier turns, oldest first, compactly: each user message and the agent's final answer (``None``: the
    turn hit the step cap), clipped, keeping the most recent turns within :data:`HISTORY_CHARS`; ``""`` for none.
    """
    blocks = [
        f"User: {clip(user, HISTORY_USER_CHARS)}\nAgent: "
        + (clip(answer, HISTORY_ANSWER_CHARS) if answer is not None else "(no answer: the turn hit the step cap)")
        for user, answer in turns
    ]
    kept: list[str] = []
    for block in reversed(blocks):
        if kept and sum(len(b) for b in kept) + len(block) > HISTORY_CHARS:
            break
        kept.insert(0, block)
    omitted = len(blocks) - len(kept)
    return (f"({omitted} earlier turns omitted)\n\n" if omitted else "") + "\n\n".join(kept)


@dataclass(frozen=True)
class PlanRequest:
    """What the planner and verifier are told: the user's latest message (the goal), the tools, the driver's
    state description, the earlier turns (:func:`history_text`, ``""`` for none) and the domain policy the executor's
    system prompt holds (tau; ``""``: none, as on BFCL, which sends no system prompt). ``turn`` is the user
    turn's index; it is not shown, it keys the turn's shared initial plan (:mod:`~prefix_exec.agents.shared_plan`)."""

    goal: str
    tools: Sequence[ToolSchema]
    state: str = ""
    history: str = ""
    policy: str = ""
    turn: int = 0

    def text(self) -> str:
        policy = f"Policy (the executor must follow it):\n{self.policy}\n\n" if self.policy else ""
        earlier = f"Earlier in this conversation (oldest first):\n{self.history}\n\n" if self.history else ""
        return (
            f"{policy}{earlier}Goal:\n{self.goal}\n\nTools:\n{tools_listing(self.tools)}\n\n"
            f"State:\n{self.state or '(none)'}"
        )
