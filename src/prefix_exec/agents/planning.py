"""Structured plans: the planner's and verifier's prompts, and decoding their JSON answers.

A plan is ``{"steps": [{"tool": NAME, "arguments": {...}, "bindings": {ARG: "step N.PATH"}}]}``: each
step names one tool and its arguments; ``bindings`` say which argument takes a value from an earlier step's
output (1-based step number and a dotted path into that output). A verdict is ``{"approved": bool,
"issues": [{"step": N, "check": CHECK, "message": TEXT}]}`` with ``CHECK`` one of :data:`CHECKS`. Model text
is only ever parsed as JSON; an answer that is not a JSON object is kept as text with a parse error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefix_exec.llm.types import Message, ToolSchema

CHECKS = ("tool_existence", "schema", "precondition", "binding")

PLANNER_SYSTEM = (
    "You are the PLANNER of a tool-using agent. Write a plan for the user's goal as one JSON object and "
    'nothing else: {"steps": [{"tool": NAME, "arguments": {...}, "bindings": {ARG: "step N.PATH"}}]}. '
    "Use only the listed tools and their argument schemas. When an argument must come from an earlier "
    "step's output, put it in bindings (1-based step number and a dotted path into that output) instead of "
    "guessing it. An empty steps list means no tool is needed."
)
VERIFIER_SYSTEM = (
    "You are the VERIFIER of a tool-using agent's plan. Check every step for: tool_existence (the tool is "
    "listed), schema (the arguments conform to its JSON Schema), precondition (explicit preconditions hold "
    "given the state and earlier steps), binding (each binding refers to an earlier step and an output that "
    'step produces). Answer with one JSON object and nothing else: {"approved": true|false, "issues": '
    '[{"step": N, "check": "tool_existence|schema|precondition|binding", "message": TEXT}]}.'
)
PROMPT_PLAN_REQUEST = (
    "Before acting, write a short numbered plan of the tool calls you will make. Do not call any tool in "
    "this message."
)
PROMPT_PLAN_PROCEED = "Now carry out your plan."


@dataclass(frozen=True)
class Plan:
    """A decoded plan; ``parse_error`` is set (and ``steps`` empty) when the answer was not a plan object."""

    steps: tuple[Mapping[str, Any], ...]
    raw: str
    parse_error: str | None = None

    def to_text(self) -> str:
        if self.parse_error is not None:
            return self.raw
        return json.dumps({"steps": [dict(s) for s in self.steps]}, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class PlanVerdict:
    """The verifier's answer; an undecodable answer counts as not approved, with the error as its issue."""

    approved: bool
    issues: tuple[Mapping[str, Any], ...]
    raw: str

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


def parse_plan(text: str | None) -> Plan:
    try:
        data = first_json_object(text)
    except ValueError as exc:
        return Plan((), text or "", parse_error=str(exc))
    steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(steps, list) or not all(isinstance(s, dict) and isinstance(s.get("tool"), str) for s in steps):
        return Plan((), text or "", parse_error="'steps' must be a list of objects with a string 'tool'")
    return Plan(tuple(steps), text or "")


def parse_verdict(text: str | None) -> PlanVerdict:
    try:
        data = first_json_object(text)
    except ValueError as exc:
        return PlanVerdict(False, ({"step": None, "check": "format", "message": str(exc)},), text or "")
    if not isinstance(data, dict) or not isinstance(data.get("approved"), bool):
        issue = {"step": None, "check": "format", "message": "'approved' must be true or false"}
        return PlanVerdict(False, (issue,), text or "")
    issues = tuple(i for i in data.get("issues") or [] if isinstance(i, dict))
    return PlanVerdict(bool(data["approved"]), issues, text or "")


def tools_listing(tools: Sequence[ToolSchema]) -> str:
    return json.dumps(
        [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools],
        ensure_ascii=False,
        sort_keys=True,
    )


def planner_messages(goal: str, tools: Sequence[ToolSchema], state: str) -> list[Message]:
    return [
        {"role": "system", "content": PLANNER_SYSTEM},
        {"role": "user", "content": f"Goal:\n{goal}\n\nTools:\n{tools_listing(tools)}\n\nState:\n{state or '(none)'}"},
    ]


def revision_messages(base: list[Message], plan: Plan, verdict: PlanVerdict) -> list[Message]:
    return [
        *base,
        {"role": "assistant", "content": plan.raw},
        {"role": "user", "content": f"The verifier found problems:\n{verdict.feedback()}\nRevise the plan."},
    ]


def verifier_messages(goal: str, tools: Sequence[ToolSchema], state: str, plan: Plan) -> list[Message]:
    return [
        {"role": "system", "content": VERIFIER_SYSTEM},
        {
            "role": "user",
            "content": f"Goal:\n{goal}\n\nTools:\n{tools_listing(tools)}\n\nState:\n{state or '(none)'}\n\n"
            f"Plan:\n{plan.to_text()}",
        },
    ]


def plan_control_text(plan: Plan, verdict: PlanVerdict | None) -> str:
    """The text that hands a plan to the executor as its control signal (appended to the user's message)."""
    text = (
        "PLAN (control signal): execute these steps in order with tool calls, taking bound arguments from the "
        f"named earlier results; deviate only when a result makes a step impossible.\n{plan.to_text()}"
    )
    if verdict is not None and not verdict.approved:
        text += f"\nThe plan was not approved by the verifier; its last findings:\n{verdict.feedback()}"
    return text
