"""The agent variants: one turn loop, different ways of preparing each user turn, registered by method.

=================== ===============================================================================
``react``           no plan; the executor acts directly.
``prompt-planning`` the executor model first writes a plan in the conversation
                    (:mod:`~prefix_exec.agents.prompt_planning`); nothing enforces it.
``plan-conditioned`` a planner writes a structured JSON plan, given to the executor as a control signal,
                    unverified (:mod:`~prefix_exec.agents.plan_conditioned`).
``dual-loop``       the planner proposes, an LLM verifier checks and the planner revises, within the
                    validation budget ``k_val`` (:mod:`~prefix_exec.agents.dual_loop`).
``dual-loop-accept-all`` the control: dual-loop with the verifier replaced by a rule that approves every
                    plan in one round, no verifier call (:mod:`~prefix_exec.agents.accept_all`).
``guarded-react``   ``react`` with the runtime guard: calls the environment would reject are not executed and
                    the verdict goes back to the model.
=================== ===============================================================================

:data:`VARIANTS` maps each :class:`~prefix_exec.methods.Method` to its :class:`Variant`: the turn preparer of a
planning variant (``None``: the user's message goes to the executor as it is), whether the runtime guard is on,
and what a rollout notes of the variant's setting. A new variant is one preparer and one entry here.

Planner and verifier see the same context: the user's latest message as the goal, the tools, the driver's
state description, and the earlier turns (user messages and the agent's final answers, clipped; see
:func:`~prefix_exec.agents.planning.history_text`).

A turn's first proposal is shared by the planning variants of one unit of work (``plan-conditioned``,
``dual-loop``, ``dual-loop-accept-all``) through the agent's :class:`~prefix_exec.agents.shared_plan.PlanBook`
(``plans``; the runner gives each unit the run's plan store), see :mod:`~prefix_exec.agents.shared_plan`.

Metadata per planned turn (lists in turn order, aligned with ``planned_turns``): ``plan_digest``, ``plan_source``
and ``plan_generated_by`` (the initial plan), ``plan_approved`` and ``verification_rounds`` (dual-loop and its
control). Counts: ``plans`` (proposals: planner calls and shared initial plans), ``plan_parse_errors``,
``verifier_parse_errors``, ``plans_discarded``. The transcript notes each planner/verifier answer with its input:
the first proposal of a turn notes the goal, state and history (and the plan's digest, source and maker); a
revision notes the feedback; a verifier re-ask notes the correction (each clipped to
:data:`~prefix_exec.agents.planning.NOTE_CHARS` characters).

Planner and verifier calls are cost (roles ``planner``/``verifier``), never actions, and never count in a
turn's limit (:mod:`~prefix_exec.agents.turn_limit`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from prefix_exec.agents import accept_all, dual_loop, plan_conditioned, prompt_planning
from prefix_exec.agents.episode import Episode
from prefix_exec.agents.planning import PlanRequest, history_text
from prefix_exec.agents.shared_plan import PlanBook
from prefix_exec.agents.turn_limit import TurnLimit
from prefix_exec.agents.turn_loop import TurnLoop, TurnResult
from prefix_exec.envs.base import Session
from prefix_exec.json_types import JsonMapping
from prefix_exec.llm.backend import ChatBackend
from prefix_exec.llm.types import ToolSchema
from prefix_exec.methods import METHODS, Method


class Preparer(Protocol):
    """Hands a planned turn's user message (``request.goal``) to the executor's conversation, with its plan."""

    def __call__(self, agent: Agent, episode: Episode, request: PlanRequest) -> None: ...


def _no_notes(agent: Agent) -> JsonMapping:
    return {}


@dataclass(frozen=True)
class Variant:
    """How one method runs a turn: ``prepare`` plans it (``None``: no planning), ``guarded`` turns the runtime
    guard on, ``notes`` gives what a rollout records of the variant's setting (``metadata``)."""

    prepare: Preparer | None = None
    guarded: bool = False
    notes: Callable[[Agent], JsonMapping] = _no_notes


VARIANTS: Mapping[Method, Variant] = {
    Method.REACT: Variant(),
    Method.PROMPT_PLANNING: Variant(prompt_planning.prepare),
    Method.PLAN_CONDITIONED: Variant(plan_conditioned.prepare),
    Method.DUAL_LOOP: Variant(dual_loop.prepare, notes=dual_loop.notes),
    Method.DUAL_LOOP_ACCEPT_ALL: Variant(accept_all.prepare, notes=accept_all.notes),
    Method.GUARDED_REACT: Variant(guarded=True),
}


@dataclass(frozen=True)
class AgentSettings:
    """Shared by every variant of a model condition; every field is an integer >= 1.

    ``max_steps`` is the per-turn horizon cap (model calls); ``k_val`` the dual-loop validation budget
    (verification rounds per planned turn, see :mod:`~prefix_exec.agents.dual_loop`); ``max_calls_per_step``
    the most tool calls of one answer that run (the rest get a "not executed" reply and are counted, never
    actions).
    """

    max_steps: int = 20
    k_val: int = 3
    max_calls_per_step: int = 64


class Agent:
    """A variant bound to its backends, one per agent role: ``executor`` (whose :class:`TurnLoop` acts),
    ``planner`` and ``verifier`` (both default to ``executor``). ``plans`` is the book of this unit's shared
    initial plans (``None``: every initial plan is asked for)."""

    def __init__(
        self,
        method: str,
        executor: ChatBackend,
        *,
        planner: ChatBackend | None = None,
        verifier: ChatBackend | None = None,
        settings: AgentSettings = AgentSettings(),
        plans: PlanBook | None = None,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
        if settings.k_val < 1:
            raise ValueError("k_val must be >= 1")
        self.method = Method(method)
        self.variant = VARIANTS[self.method]
        self.settings = settings
        self.executor = executor
        self.turn_loop = TurnLoop(
            executor,
            max_steps=settings.max_steps,
            guarded=self.variant.guarded,
            max_calls_per_step=settings.max_calls_per_step,
        )
        self.planner = planner or executor
        self.verifier = verifier or executor
        self.plans = plans

    def start(self, system: str, tools: list[ToolSchema]) -> Episode:
        episode = Episode(system=system, tools=list(tools))
        episode.metadata["method"] = self.method.value
        episode.metadata.update(self.variant.notes(self))
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
        policy: str = "",
        limit: TurnLimit | None = None,
    ) -> TurnResult:
        """Hand the user's message to the agent and run the turn; ``plan`` False skips planning this turn.
        ``limit`` bounds the executor's model calls (default: ``settings.max_steps`` per turn; see
        :mod:`~prefix_exec.agents.turn_limit`); planning is never counted in it. ``state`` and ``policy`` go to
        the planner and verifier (:class:`PlanRequest`).

        Plans and plan requests ride in the user's message (and prompt-planning's plan is followed by a short
        user message), so the conversation keeps one system message and alternating roles, which strict chat
        templates of local servers require. The turn's message and final answer join ``episode.history``.
        """
        prepare = self.variant.prepare if plan else None
        if prepare is not None:
            episode.record("planned_turns", turn)
            request = PlanRequest(content, episode.tools, state, history_text(episode.history), policy, turn)
            prepare(self, episode, request)
        else:
            episode.say({"role": "user", "content": content})
        result = self.turn_loop.run_turn(episode, session, turn, limit)
        episode.history.append((content, result.answer))
        return result
