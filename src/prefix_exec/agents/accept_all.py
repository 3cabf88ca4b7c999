"""``dual-loop-accept-all``: the deterministic acceptance-wrapper control of the sensitivity study (paper 3.3).

Dual-loop with its verifier step replaced by a rule that approves every plan: the planner proposes the turn's
shared initial plan (:func:`~prefix_exec.agents.plan_conditioned.initial_plan`, the same prompts as
``dual-loop`` and ``plan-conditioned``), the rule approves it in exactly one verification round without any
verifier call, and the plan conditions the executor through dual-loop's hand-over
(:func:`~prefix_exec.agents.plan_conditioned.plan_control_text` with an approved verdict). The executor's
step cap (``max_steps``) and the noted validation budget ``k_val`` are the grid's, as for ``dual-loop``; no
revision ever happens, so the rule never uses more than the first round.

The rule approves plans that fail the structure check as well (dual-loop would ask for a rewrite): every plan
is approved, and it is handed over as ``plan-conditioned`` hands an unreadable plan.

What the control separates. Dual-loop − control is the effect of verification and revision on the same initial
plan, limits and hand-over; control − plan-conditioned is what the dual-loop wrapper itself changes. In this
implementation an approved plan is handed to the executor in exactly plan-conditioned's words, so the
executor of the control sees what plan-conditioned's sees: that difference is the run-to-run variation of the
executor on one plan (0 with a deterministic server). The paper's own wrapper changed the executor guidance
(3.3); ours does not, and its prompts are our own (the paper's appendices are not available).

Per planned turn ``metadata`` records ``plan_approved`` (always true) and ``verification_rounds`` (always 1),
as dual-loop does; a rollout notes ``k_val`` and ``verifier_rule = "accept-all"``. The transcript notes the
rule's verdict as a verifier entry with ``"verifier_called": false`` and ``"rule": "accept-all"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefix_exec.agents.episode import Episode
from prefix_exec.agents.plan_conditioned import initial_plan, plan_control_text
from prefix_exec.agents.planning import PlanRequest, PlanVerdict
from prefix_exec.json_types import JsonMapping

if TYPE_CHECKING:
    from prefix_exec.agents.variants import Agent

#: :attr:`~prefix_exec.agents.planning.PlanVerdict.origin` of the rule's verdicts, and the rule's name.
RULE = "accept-all"


def prepare(agent: Agent, episode: Episode, request: PlanRequest) -> None:
    """Propose the initial plan, approve it by rule in one round, and hand it to the executor."""
    plan = initial_plan(agent, episode, request)
    verdict = PlanVerdict(True, (), "", RULE)
    episode.note("verifier", {"round": 1, "verifier_called": False, "rule": RULE, "approved": True, "issues": []})
    episode.record("verification_rounds", 1)
    episode.record("plan_approved", True)
    content = f"{request.goal}\n\n{plan_control_text(plan, verdict)}"
    episode.say({"role": "user", "content": content}, given_text=request.goal)


def notes(agent: Agent) -> JsonMapping:
    """What a control rollout notes of its setting: the validation budget and the rule in the verifier's place."""
    return {"k_val": agent.settings.k_val, "verifier_rule": RULE}
