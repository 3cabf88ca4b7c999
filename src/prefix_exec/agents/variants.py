"""The agent variants: one executor, different ways of preparing each user turn.

=================  ===============================================================================
``react``          no plan; the executor acts directly.
``prompt-planning`` the executor model first writes a plan in the conversation (a planner call, no tools);
                   nothing enforces it. The plan request lists the tools in text (again only when they
                   changed since the last listing), because the request itself carries no tool schemas.
``plan-conditioned`` a planner writes a structured JSON plan; it is given to the executor as a control
                   signal, unverified. An answer that fails the structure check (see
                   :mod:`~prefix_exec.agents.planning`) is counted in ``metadata["plan_parse_errors"]``
                   and handed over as the planner's raw text, labelled as unstructured, with the error.
``dual-loop``      the planner proposes, an LLM verifier checks (tool existence, schema, preconditions,
                   bindings) and the planner revises on failure, within the validation budget ``k_val``;
                   the approved plan, or the last one with its verdict, conditions the executor as in
                   ``plan-conditioned``.
``guarded-react``  ``react`` with the runtime guard: calls the environment would reject are not executed and
                   the verdict goes back to the model.
=================  ===============================================================================

**The validation budget** ``k_val`` is the number of verification rounds per planned turn (the paper's
K_val, 验证预算), not the number of revisions: ``k_val = 3`` means at most 3 verifier verdicts and 2
revisions (at most ``k_val`` planner and ``k_val`` verifier calls). Each round uses one unit:

- a plan that fails the structure check is a failed round with a ``format`` issue and no verifier call; the
  planner is asked to rewrite it in the required format;
- a verifier answer that is not a verdict is re-asked (with the unreadable answer and the format it must
  use), not sent to the planner; it is counted in ``metadata["verifier_parse_errors"]``;
- otherwise the verifier's verdict decides: approved ends the loop, rejected goes back to the planner.

Planner and verifier see the same context: the user's latest message as the goal, the tools, the driver's
state summary, and the earlier turns (user messages and the agent's final answers, clipped; see
:func:`~prefix_exec.agents.planning.history_text`).

Metadata per planned turn (lists in turn order, aligned with ``planned_turns``): ``plan_approved`` and
``verification_rounds`` (dual-loop). Counts: ``plans`` (planner calls), ``plan_parse_errors``,
``verifier_parse_errors``. The transcript notes each planner/verifier answer with its input: the first
proposal of a turn notes the goal, state and history; a revision notes the feedback; a verifier re-ask notes
the correction (each clipped to :data:`~prefix_exec.agents.planning.NOTE_CHARS` characters). A verifier
round that asks no verifier (a structure error) is noted with ``"verifier_called": false``.

Planner and verifier calls are cost (roles ``planner``/``verifier``), never actions.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefix_exec.agents.budget import TurnBudget
from prefix_exec.agents.episode import Episode
from prefix_exec.agents.executor import Executor, TurnResult
from prefix_exec.agents.planning import (
    PROMPT_PLAN_PROCEED,
    VERIFIER_FORMAT,
    Plan,
    PlanRequest,
    PlanVerdict,
    clip,
    format_verdict,
    history_text,
    parse_plan,
    parse_verdict,
    plan_control_text,
    planner_messages,
    prompt_plan_request,
    revision_messages,
    verifier_messages,
    verifier_retry_messages,
)
from prefix_exec.envs.base import Session
from prefix_exec.llm.backend import ChatBackend
from prefix_exec.llm.types import Message, ToolSchema

METHODS = ("react", "prompt-planning", "plan-conditioned", "dual-loop", "guarded-react")


@dataclass(frozen=True)
class AgentSettings:
    """Shared by every variant of a model condition; every field is an integer >= 1.

    ``max_steps`` is the per-turn horizon cap (model calls); ``k_val`` the dual-loop validation budget
    (verification rounds per planned turn, see the module docstring); ``max_calls_per_step`` the most tool
    calls of one answer that run (the rest get a "not executed" reply and are counted, never actions).
    """

    max_steps: int = 20
    k_val: int = 3
    max_calls_per_step: int = 64


class Agent:
    """A variant bound to its backends. ``planner``/``verifier`` default to the executor's backend."""

    def __init__(
        self,
        method: str,
        executor: ChatBackend,
        *,
        planner: ChatBackend | None = None,
        verifier: ChatBackend | None = None,
        settings: AgentSettings = AgentSettings(),
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
        if settings.k_val < 1:
            raise ValueError("k_val must be >= 1")
        self.method = method
        self.settings = settings
        self.executor = Executor(
            executor,
            max_steps=settings.max_steps,
            guarded=method == "guarded-react",
            max_calls_per_step=settings.max_calls_per_step,
        )
        self.planner = planner or executor
        self.verifier = verifier or executor

    def start(self, system: str, tools: list[ToolSchema]) -> Episode:
        episode = Episode(system=system, tools=list(tools))
        episode.metadata["method"] = self.method
        if self.method == "dual-loop":
            episode.metadata["k_val"] = self.settings.k_val
            episode.metadata["verifier_model"] = self.verifier.config.model
        return episode

    def user_turn(
        self,
        episode: Episode,
        session: Session,
        content: str,
        turn: int,
        *,
        plan: bool = True,
        state: str = "",
        budget: TurnBudget | None = None,
    ) -> TurnResult:
        """Hand the user's message to the agent and run the turn; ``plan`` False skips planning this turn.
        ``budget`` bounds the executor's model calls (default: ``settings.max_steps`` per turn; see
        :mod:`~prefix_exec.agents.budget`); planning is never counted in it.

        Plans and plan requests ride in the user's message (and prompt-planning's plan is followed by a short
        user message), so the conversation keeps one system message and alternating roles, which strict chat
        templates of local servers require. The turn's message and final answer join ``episode.history``.
        """
        planning = plan and self.method in ("prompt-planning", "plan-conditioned", "dual-loop")
        if planning:
            episode.record("planned_turns", turn)
        request = PlanRequest(content, episode.tools, state, history_text(episode.history))
        if planning and self.method == "prompt-planning":
            listed = None if episode.tools_listed == episode.tools else episode.tools
            episode.tools_listed = list(episode.tools)
            episode.say({"role": "user", "content": prompt_plan_request(content, listed)})
            done = self.executor.backend.complete(episode.messages, (), role="planner")
            episode.charge(done)
            episode.say({"role": "assistant", "content": done.content or ""})
            episode.say({"role": "user", "content": PROMPT_PLAN_PROCEED})
        elif planning and self.method == "plan-conditioned":
            control = plan_control_text(self._propose(episode, planner_messages(request), _inputs(request)), None)
            episode.say({"role": "user", "content": f"{content}\n\n{control}"})
        elif planning:
            control = plan_control_text(*self._dual_loop(episode, request))
            episode.say({"role": "user", "content": f"{content}\n\n{control}"})
        else:
            episode.say({"role": "user", "content": content})
        result = self.executor.run_turn(episode, session, turn, budget)
        episode.history.append((content, result.answer))
        return result

    def _propose(self, episode: Episode, messages: list[Message], inputs: dict[str, str]) -> Plan:
        done = self.planner.complete(messages, (), role="planner")
        episode.charge(done)
        plan = parse_plan(done.content)
        episode.note("planner", {"input": inputs, "content": done.content, "parse_error": plan.parse_error})
        episode.count("plans")
        if plan.parse_error is not None:
            episode.count("plan_parse_errors")
        return plan

    def _dual_loop(self, episode: Episode, request: PlanRequest) -> tuple[Plan, PlanVerdict]:
        """Propose, verify and revise within ``k_val`` verification rounds (see the module docstring)."""
        base = planner_messages(request)
        plan = self._propose(episode, base, _inputs(request))
        asked: list[Message] | None = None  # the verifier conversation while re-asking an unreadable answer
        round_ = 0
        while True:
            round_ += 1
            if plan.parse_error is not None:
                verdict = format_verdict(plan)
                episode.note("verifier", {"round": round_, "verifier_called": False, "approved": False,
                                          "issues": [dict(i) for i in verdict.issues]})
            else:
                messages = asked or verifier_messages(request, plan)
                done = self.verifier.complete(messages, (), role="verifier")
                episode.charge(done)
                verdict = parse_verdict(done.content)
                inputs = {"correction": clip(str(messages[-1]["content"]))} if asked else {}
                episode.note("verifier", {"round": round_, "input": inputs, "content": done.content,
                                          "approved": verdict.approved, "source": verdict.source})
                if verdict.source == VERIFIER_FORMAT:
                    episode.count("verifier_parse_errors")
                    if round_ < self.settings.k_val:
                        asked = verifier_retry_messages(messages, done.content, verdict)
                        continue
                    break
            asked = None
            if verdict.approved or round_ >= self.settings.k_val:
                break
            base = revision_messages(base, plan, verdict)
            plan = self._propose(episode, base, {"feedback": clip(verdict.feedback())})
        episode.record("verification_rounds", round_)
        episode.record("plan_approved", verdict.approved)
        return plan, verdict


def _inputs(request: PlanRequest) -> dict[str, str]:
    """The transcript note of what a turn's first proposal was based on (the tool listing is in the rollout)."""
    return {"goal": clip(request.goal), "state": clip(request.state), "history": clip(request.history)}
