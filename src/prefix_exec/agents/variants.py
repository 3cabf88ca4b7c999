"""The agent variants: one executor, different ways of preparing each user turn.

=================  ===============================================================================
``react``          no plan; the executor acts directly.
``prompt-planning`` the executor model first writes a plan in the conversation (a planner call, no tools);
                   nothing enforces it.
``plan-conditioned`` a planner writes a structured JSON plan; it is given to the executor as a control
                   signal, unverified.
``dual-loop``      the planner proposes, an LLM verifier checks (tool existence, schema, preconditions,
                   bindings) and the planner revises, for at most ``k_val`` verifications; the approved plan,
                   or the last one with its verdict, conditions the executor as in ``plan-conditioned``.
``guarded-react``  ``react`` with the runtime guard: calls the environment would reject are not executed and
                   the verdict goes back to the model.
=================  ===============================================================================

Planner and verifier calls are cost (roles ``planner``/``verifier``), never actions.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefix_exec.agents.episode import Episode
from prefix_exec.agents.executor import Executor, TurnResult
from prefix_exec.agents.planning import (
    PROMPT_PLAN_PROCEED,
    PROMPT_PLAN_REQUEST,
    Plan,
    PlanVerdict,
    parse_plan,
    parse_verdict,
    plan_control_text,
    planner_messages,
    revision_messages,
    verifier_messages,
)
from prefix_exec.envs.base import Session
from prefix_exec.llm.backend import ChatBackend
from prefix_exec.llm.types import ToolSchema

METHODS = ("react", "prompt-planning", "plan-conditioned", "dual-loop", "guarded-react")


@dataclass(frozen=True)
class AgentSettings:
    """Shared by every variant of a model condition. ``max_steps`` is the per-turn horizon cap (model calls)."""

    max_steps: int = 20
    k_val: int = 3


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
        self.executor = Executor(executor, max_steps=settings.max_steps, guarded=method == "guarded-react")
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
        self, episode: Episode, session: Session, content: str, turn: int, *, plan: bool = True, state: str = ""
    ) -> TurnResult:
        """Hand the user's message to the agent and run the turn; ``plan`` False skips planning this turn.

        Plans and plan requests ride in the user's message (and prompt-planning's plan is followed by a short
        user message), so the conversation keeps one system message and alternating roles, which strict chat
        templates of local servers require.
        """
        if plan and self.method == "prompt-planning":
            episode.say({"role": "user", "content": f"{content}\n\n{PROMPT_PLAN_REQUEST}"})
            done = self.executor.backend.complete(episode.messages, (), role="planner")
            episode.charge(done)
            episode.say({"role": "assistant", "content": done.content or ""})
            episode.say({"role": "user", "content": PROMPT_PLAN_PROCEED})
        elif plan and self.method == "plan-conditioned":
            control = plan_control_text(self._propose(episode, planner_messages(content, episode.tools, state)), None)
            episode.say({"role": "user", "content": f"{content}\n\n{control}"})
        elif plan and self.method == "dual-loop":
            control = plan_control_text(*self._dual_loop(episode, content, state))
            episode.say({"role": "user", "content": f"{content}\n\n{control}"})
        else:
            episode.say({"role": "user", "content": content})
        return self.executor.run_turn(episode, session, turn)

    def _propose(self, episode: Episode, messages: list[dict[str, object]]) -> Plan:
        done = self.planner.complete(messages, (), role="planner")
        episode.charge(done)
        plan = parse_plan(done.content)
        episode.note("planner", {"content": done.content, "parse_error": plan.parse_error})
        episode.metadata["plans"] = int(episode.metadata.get("plans", 0)) + 1
        return plan

    def _dual_loop(self, episode: Episode, goal: str, state: str) -> tuple[Plan, PlanVerdict]:
        base = planner_messages(goal, episode.tools, state)
        plan = self._propose(episode, base)
        for round_ in range(1, self.settings.k_val + 1):
            done = self.verifier.complete(verifier_messages(goal, episode.tools, state, plan), (), role="verifier")
            episode.charge(done)
            verdict = parse_verdict(done.content)
            episode.note("verifier", {"content": done.content, "approved": verdict.approved, "round": round_})
            if verdict.approved or round_ == self.settings.k_val:
                break
            base = revision_messages(base, plan, verdict)
            plan = self._propose(episode, base)
        episode.metadata["verifier_rounds"] = int(episode.metadata.get("verifier_rounds", 0)) + round_
        episode.metadata["plan_approved"] = verdict.approved
        return plan, verdict
