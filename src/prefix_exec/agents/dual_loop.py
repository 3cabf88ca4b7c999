"""``dual-loop``: the planner proposes, an LLM verifier checks, and the planner revises on failure.

The verifier checks tool existence, schema, preconditions and bindings. The loop runs within the validation
budget ``k_val``; the approved plan, or the last one with its verdict, conditions the executor as in
``plan-conditioned`` (:func:`~prefix_exec.agents.plan_conditioned.plan_control_text`).

**The validation budget** ``k_val`` is the number of verification rounds per planned turn (the paper's
K_val, 验证预算), not the number of revisions: ``k_val = 3`` means at most 3 verifier verdicts and 2
revisions (at most ``k_val`` planner and ``k_val`` verifier calls). Each round uses one unit:

- a plan that fails the structure check is a failed round with a ``format`` issue and no verifier call; the
  planner is asked to rewrite it in the required format;
- a verifier answer that is not a verdict is re-asked (with the unreadable answer and the format it must
  use), not sent to the planner; it is counted in ``metadata["verifier_parse_errors"]``;
- otherwise the verifier's verdict decides: approved ends the loop, rejected goes back to the planner.

The first proposal of a turn is the shared initial plan (:func:`~prefix_exec.agents.plan_conditioned.initial_plan`):
the same plan the matching ``plan-conditioned`` run and every other verifier setting of this unit start from.

Planner and verifier see the same context (:class:`~prefix_exec.agents.planning.PlanRequest`). Per planned
turn ``metadata`` records ``plan_approved`` and ``verification_rounds``; a rollout notes ``k_val`` and
``verifier_model``. The transcript notes each verifier answer with its round (a re-ask notes the correction);
a round that asks no verifier (a structure error) is noted with ``"verifier_called": false``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefix_exec.agents.episode import Episode
from prefix_exec.agents.plan_conditioned import initial_plan, plan_control_text, planner_messages, propose
from prefix_exec.agents.planning import (
    PLAN_FORMAT,
    VERIFIER_FORMAT,
    Plan,
    PlanRequest,
    PlanVerdict,
    clip,
    format_verdict,
    parse_verdict,
)
from prefix_exec.json_types import JsonMapping
from prefix_exec.llm.types import Message

if TYPE_CHECKING:
    from prefix_exec.agents.variants import Agent

VERIFIER_SYSTEM = (
    "You are the VERIFIER of a tool-using agent's plan. Check every step for: tool_existence (the tool is "
    "listed), schema (the arguments conform to its JSON Schema), precondition (explicit preconditions hold "
    "given the state and earlier steps), binding (each binding refers to an earlier step and an output that "
    'step produces). Answer with one JSON object and nothing else: {"approved": true|false, "issues": '
    '[{"step": N, "check": "tool_existence|schema|precondition|binding", "message": TEXT}]}.'
)


def prepare(agent: Agent, episode: Episode, request: PlanRequest) -> None:
    """Propose, verify and revise, then hand the plan (and its verdict) to the executor with the user's message."""
    control = plan_control_text(*verified_plan(agent, episode, request))
    episode.say({"role": "user", "content": f"{request.goal}\n\n{control}"}, given_text=request.goal)


def notes(agent: Agent) -> JsonMapping:
    """What a dual-loop rollout notes of its setting: the validation budget and the verifier's model."""
    return {"k_val": agent.settings.k_val, "verifier_model": agent.verifier.config.model}


def verified_plan(agent: Agent, episode: Episode, request: PlanRequest) -> tuple[Plan, PlanVerdict]:
    """Propose, verify and revise within ``k_val`` verification rounds (see the module docstring)."""
    base = planner_messages(request)
    plan = initial_plan(agent, episode, request)
    asked: list[Message] | None = None  # the verifier conversation while re-asking an unreadable answer
    round_ = 0
    while True:
        round_ += 1
        if plan.parse_error is not None:
            verdict = format_verdict(plan)
            episode.note(
                "verifier",
                {
                    "round": round_,
                    "verifier_called": False,
                    "approved": False,
                    "issues": [dict(i) for i in verdict.issues],
                },
            )
        else:
            messages = asked or verifier_messages(request, plan)
            done = agent.verifier.complete(messages, (), role="verifier")
            episode.charge(done)
            verdict = parse_verdict(done.content)
            inputs = {"correction": clip(str(messages[-1]["content"]))} if asked else {}
            episode.note(
                "verifier",
                {
                    "round": round_,
                    "input": inputs,
                    "content": done.content,
                    "approved": verdict.approved,
                    "source": verdict.origin,
                },
            )
            if verdict.origin == VERIFIER_FORMAT:
                episode.count("verifier_parse_errors")
                if round_ < agent.settings.k_val:
                    asked = verifier_retry_messages(messages, done.content, verdict)
                    continue
                break
        asked = None
        if verdict.approved or round_ >= agent.settings.k_val:
            break
        base = revision_messages(base, plan, verdict)
        plan = propose(agent, episode, base, {"feedback": clip(verdict.feedback())})
    episode.record("verification_rounds", round_)
    episode.record("plan_approved", verdict.approved)
    return plan, verdict


def revision_messages(base: list[Message], plan: Plan, verdict: PlanVerdict) -> list[Message]:
    """``base`` plus the plan and the feedback on it, asking for a revision (roles keep alternating)."""
    if verdict.origin == PLAN_FORMAT:
        ask = (
            f"Your plan is not in the required format:\n{verdict.feedback()}\n"
            "Write the whole plan again as one JSON object in the required format."
        )
    else:
        ask = f"The verifier found problems:\n{verdict.feedback()}\nRevise the plan."
    return [*base, {"role": "assistant", "content": plan.raw}, {"role": "user", "content": ask}]


def verifier_messages(request: PlanRequest, plan: Plan) -> list[Message]:
    return [
        {"role": "system", "content": VERIFIER_SYSTEM},
        {"role": "user", "content": f"{request.text()}\n\nPlan:\n{plan.to_text()}"},
    ]


def verifier_retry_messages(asked: list[Message], answer: str | None, verdict: PlanVerdict) -> list[Message]:
    """``asked`` plus the verifier's unreadable ``answer`` and a request to answer again in the verdict format."""
    problem = "; ".join(str(i.get("message")) for i in verdict.issues)
    ask = (
        f"Your answer could not be read as a verdict ({problem}). Answer again with one JSON object and "
        'nothing else: {"approved": true|false, "issues": [{"step": N, "check": CHECK, "message": TEXT}]}.'
    )
    return [*asked, {"role": "assistant", "content": answer or ""}, {"role": "user", "content": ask}]
