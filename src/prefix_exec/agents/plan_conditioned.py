"""``plan-conditioned``: a planner writes a structured JSON plan, given to the executor as a control signal.

The plan is not verified. An answer that fails the structure check (:func:`~prefix_exec.agents.planning.parse_plan`)
is counted in ``metadata["plan_parse_errors"]`` and handed over as the planner's raw text, labelled as
unstructured, with the error. The planner (role ``planner``) sees the user's latest message as the goal, the
tools, the driver's state description and the earlier turns (:class:`~prefix_exec.agents.planning.PlanRequest`);
its answer is noted in the transcript with that input. A turn's first proposal is the shared initial plan
(:func:`initial_plan`, :mod:`~prefix_exec.agents.shared_plan`). :mod:`~prefix_exec.agents.dual_loop` and
:mod:`~prefix_exec.agents.accept_all` propose the same way and hand their plan over with
:func:`plan_control_text` too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from prefix_exec.agents.episode import Episode
from prefix_exec.agents.planning import (
    PLAN_FORMAT,
    PLAN_TEXT_CHARS,
    VERIFIER_FORMAT,
    Plan,
    PlanRequest,
    PlanVerdict,
    clip,
    parse_plan,
)
from prefix_exec.agents.shared_plan import GENERATED, SHARED, SharedPlan
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.llm.types import Completion, Message

if TYPE_CHECKING:
    from prefix_exec.agents.variants import Agent

PLANNER_SYSTEM = (
    "You are the PLANNER of a tool-using agent. Write a plan for the user's goal as one JSON object and "
    'nothing else: {"steps": [{"tool": NAME, "arguments": {...}, "bindings": {ARG: "step N.PATH"}}]}. '
    "Use only the listed tools and their argument schemas. When an argument must come from an earlier "
    "step's output, put it in bindings (1-based step number and a dotted path into that output) instead of "
    "guessing it. An empty steps list means no tool is needed."
)


def prepare(agent: Agent, episode: Episode, request: PlanRequest) -> None:
    """Propose a plan (the turn's shared initial plan) and hand it to the executor with the user's message."""
    control = plan_control_text(initial_plan(agent, episode, request), None)
    episode.say({"role": "user", "content": f"{request.goal}\n\n{control}"}, given_text=request.goal)


def initial_plan(agent: Agent, episode: Episode, request: PlanRequest) -> Plan:
    """The turn's first proposal, shared through ``agent.plans`` (:mod:`~prefix_exec.agents.shared_plan`):
    the stored plan for this turn and planner request when there is one, else one planner call, stored. The
    plan's digest, source and maker are recorded per planned turn, and the transcript note says the same."""
    messages = planner_messages(request)
    asked: list[tuple[Completion, SharedPlan]] = []

    def make() -> SharedPlan:
        done = agent.planner.complete(messages, (), role="planner")
        asked.append((done, SharedPlan(done.content or "", done.cost, agent.method.value)))
        return asked[0][1]

    book = agent.plans
    stored = make() if book is None else book.obtain(request.turn, agent.planner.request_digest(messages), make)
    made = bool(asked) and stored is asked[0][1]
    if made:
        episode.charge(asked[0][0])
    else:  # the book's plan, charged as it was made (and a call whose answer lost a race, counted)
        episode.cost.append(stored.cost)
        if asked:
            episode.count("plans_discarded")
    source = GENERATED if made else SHARED
    episode.record("plan_digest", stored.digest)
    episode.record("plan_source", source)
    episode.record("plan_generated_by", stored.generated_by)
    shared = {"digest": stored.digest, "source": source, "generated_by": stored.generated_by}
    return decoded(episode, stored.content, proposal_inputs(request), shared)


def propose(agent: Agent, episode: Episode, messages: list[Message], inputs: dict[str, str]) -> Plan:
    """One planner call on ``messages`` (a revision): the decoded plan, noted with ``inputs`` and counted."""
    done = agent.planner.complete(messages, (), role="planner")
    episode.charge(done)
    return decoded(episode, done.content, inputs)


def decoded(
    episode: Episode, content: str | None, inputs: Mapping[str, str], shared: JsonMapping | None = None
) -> Plan:
    """A planner answer decoded, noted in the transcript with its ``inputs`` (and, for an initial plan, its
    ``shared`` digest, source and maker) and counted in ``plans`` / ``plan_parse_errors``."""
    plan = parse_plan(content)
    note: JsonObject = {"input": dict(inputs), "content": content, "parse_error": plan.parse_error}
    if shared is not None:
        note["plan"] = dict(shared)
    episode.note("planner", note)
    episode.count("plans")
    if plan.parse_error is not None:
        episode.count("plan_parse_errors")
    return plan


def planner_messages(request: PlanRequest) -> list[Message]:
    return [{"role": "system", "content": PLANNER_SYSTEM}, {"role": "user", "content": request.text()}]


def proposal_inputs(request: PlanRequest) -> dict[str, str]:
    """The transcript note of what a turn's first proposal was based on (the tool listing is in the rollout)."""
    return {"goal": clip(request.goal), "state": clip(request.state), "history": clip(request.history)}


def plan_control_text(plan: Plan, verdict: PlanVerdict | None) -> str:
    """The text that hands a plan to the executor as its control signal (appended to the user's message).

    A plan with a structure error is handed over as the planner's raw text (clipped to
    :data:`PLAN_TEXT_CHARS`), labelled as unstructured and with the error, for the executor to use or ignore.
    """
    if plan.parse_error is None:
        text = (
            "PLAN (control signal): execute these steps in order with tool calls, taking bound arguments from the "
            f"named earlier results; deviate only when a result makes a step impossible.\n{plan.to_text()}"
        )
    else:
        text = (
            "PLAN (control signal): the planner's answer is not a valid structured plan "
            f"({clip(plan.parse_error, 500)}). Its text follows for reference; use it only where it fits the "
            f"request.\n{clip(plan.raw, PLAN_TEXT_CHARS) or '(empty answer)'}"
        )
    if verdict is None or verdict.approved:
        return text
    if verdict.origin == PLAN_FORMAT:
        return text + "\nThe plan was not verified: it failed the structure check."
    if verdict.origin == VERIFIER_FORMAT:
        return text + "\nThe plan could not be verified: the verifier's answers could not be read."
    return text + f"\nThe plan was not approved by the verifier; its last findings:\n{verdict.feedback()}"
