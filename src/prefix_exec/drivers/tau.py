"""Run agents on tau3-bench airline/retail tasks against tau2's user simulator, scored by tau2's evaluator.

One task is one conversation, as tau2's ``Orchestrator`` runs it with its ``LLMAgent``:

- the agent opens with tau2's first agent message ("Hi! How can I help you today?"); tau2's
  ``UserSimulator`` (its LLM is a setting) answers from the task's user scenario;
- each user message is one turn: the agent (any variant; planning happens on the first turn only) calls
  tools until it answers in text; the answer goes back to the user simulator;
- the live session answers as tau2's environment does (:class:`~prefix_exec.envs.tau.TauSession` with
  ``strict=False``): a call tau2 executes is executed, and the agent gets tau2's exact tool message and error
  flag. Our checks (schema binding, information) apply when the rollout is scored (:meth:`TauDriver.env_for`),
  and live only for ``guarded-react``, whose guard is the point of the comparison (its session is strict);
- the horizon is tau2's (:mod:`prefix_exec.drivers.tau_horizon`): ``max_steps`` messages (200) and
  ``max_errors`` failed tool calls (10), counted and checked as tau2's orchestrator does, also inside a turn
  (the horizon is the turn loop's limit), with tau2's termination names (``user_stop``, ``max_steps``,
  ``too_many_errors``). The agent's own per-turn
  cap (``AgentSettings.max_steps``) does not apply: each turn may use what is left of tau2's horizon.
  ``max_turns`` (off by default; not tau2's) can cap the user messages, ending as ``max_turns``;
- Y is tau2's ``evaluate_simulation`` on the conversation, whose tool calls and tool messages are exactly
  those tau2 would have recorded: every executed call, failed ones with ``error=True``. Calls a guard
  rejected never ran and are not in it; nor are calls whose arguments were not JSON (tau2's agent cannot
  emit them; they are shown to the agent as errors and count as tau2 errors).

The evaluation is ``ALL``, or ``ALL_WITH_NL_ASSERTIONS`` for a task whose reward basis holds
``NL_ASSERTION``: only then is the judge (a setting) called, and only then is the rollout marked
``nondeterministic``. Such a task without a judge is an input error. User-simulator tokens go to
``metadata["simulator"]`` and judge tokens to ``metadata["judge"]``, never into agent cost.

Needs tau2's simulator and evaluator dependencies (``litellm``, ``pandas``) on top of the replay set.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from prefix_exec.agents.episode import Episode, render
from prefix_exec.agents.variants import Agent
from prefix_exec.drivers.base import Outcome
from prefix_exec.drivers.tau_horizon import MAX_ERRORS, MAX_STEPS, Horizon, failed_calls
from prefix_exec.envs.tau import RolloutEnvironment, TauEnvironment, load_domain
from prefix_exec.envs.tau.domain import import_tau2
from prefix_exec.envs.tau.judge import count, metered, metering, new_usage
from prefix_exec.envs.tau.pool import TauPool
from prefix_exec.envs.tau.pooled import TAU3, local_id, qualify
from prefix_exec.envs.tau.session import Tau2Session, TauSession
from prefix_exec.envs.tau.tasks import paper_task_ids
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.llm.config import EndpointConfig
from prefix_exec.llm.types import ToolSchema
from prefix_exec.trajectory import Rollout, ToolCall

FIRST_AGENT_MESSAGE = "Hi! How can I help you today?"
AGENT_INSTRUCTION = (
    "You are a customer service agent that helps the user according to the <policy> provided below.\n"
    "In each turn you can either:\n- Send a message to the user.\n- Make a tool call.\n"
    "You cannot do both at the same time.\n\n"
    "Try to be helpful and always follow the policy. Always make sure you generate valid JSON only."
)


def describe_state(domain: str, db: Any) -> str:
    """The planner's compact state description: the DB's collections and their sizes, never a record.

    Planning runs on the first user message, before any lookup; a record's ids in the plan would hand the
    agent information it never saw (the information check would then be meaningless), so the description says
    what exists, not which.
    """
    fields = type(db).model_fields if hasattr(type(db), "model_fields") else dict(db)
    values = ((name, getattr(db, name) if hasattr(type(db), "model_fields") else db[name]) for name in fields)
    sizes = [f"{name}: {len(value)}" for name, value in values if isinstance(value, dict | list)]
    return (
        f"{domain} database with {', '.join(sizes) or 'no collections'}. Nothing has been looked up yet: "
        "ids come from the user or from tool results."
    )


def system_prompt(policy: str) -> str:
    """tau2's LLM-agent system prompt layout: instructions, then the domain policy."""
    return f"<instructions>\n{AGENT_INSTRUCTION}\n</instructions>\n<policy>\n{policy}\n</policy>"


@dataclass(frozen=True)
class LiteLLMModel:
    """A model as tau2's ``generate`` (litellm) calls it, built from an endpoint config."""

    model: str
    args: JsonMapping

    @classmethod
    def of(cls, config: EndpointConfig) -> LiteLLMModel:
        args: JsonObject = {
            "api_base": config.base_url,
            "api_key": config.api_key(),
            "temperature": config.temperature,
            "num_retries": config.max_retries,
        }
        if config.seed is not None:
            args["seed"] = config.seed
        return cls(f"openai/{config.model}", args)


class Conversation:
    """One task's conversation as tau2's orchestrator keeps it: the simulated user and its state, the message
    it answers next (``outgoing``, the agent's opening first), tau2's messages so far (``trajectory``), the
    user's texts the agent answered (``users``), the simulator's token usage, tau2's horizon and the start time
    (``time.time()``)."""

    def __init__(self, msg: Any, user: Any, user_state: Any, horizon: Horizon) -> None:
        self.msg, self.user, self.user_state, self.horizon = msg, user, user_state, horizon
        self.outgoing: Any = msg.AssistantMessage(role="assistant", content=FIRST_AGENT_MESSAGE)
        self.trajectory: list[Any] = [self.outgoing]
        self.usage = new_usage()
        self.users: list[str] = []
        self.started = time.time()


def _tau2() -> JsonObject:
    # litellm fetches its price list from the network at import unless told to use its bundled copy.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    message = import_tau2("tau2.data_model.message")
    return {
        "message": message,
        "tasks": import_tau2("tau2.data_model.tasks"),
        "simulation": import_tau2("tau2.data_model.simulation"),
        "evaluator": import_tau2("tau2.evaluator.evaluator"),
        "nl": import_tau2("tau2.evaluator.evaluator_nl_assertions"),
        "user": import_tau2("tau2.user.user_simulator"),
    }


class TauDriver:
    """``domain`` is ``airline``, ``retail`` or both (a sequence): one dataset, ``tau3`` unless ``dataset``
    says otherwise, whose task ids are qualified with their domain (``airline/18``, :mod:`prefix_exec.envs.tau.pooled`)
    and which the live and the scoring environments route to that domain's environment. The tasks are the
    paper's set (50 airline + 114 retail) unless the grid lists some.

    ``max_steps`` and ``max_errors`` are tau2's horizon (its defaults, 200 and 10; both >= 1). ``max_turns``
    (``None``: no cap, as in tau2) caps the user messages the agent answers.
    """

    def __init__(
        self,
        domain: str | Sequence[str],
        *,
        user: EndpointConfig,
        judge: EndpointConfig | None = None,
        dataset: str | None = None,
        max_steps: int = MAX_STEPS,
        max_errors: int = MAX_ERRORS,
        max_turns: int | None = None,
        data: str | None = None,
    ) -> None:
        Horizon(max_steps, max_errors)  # validates the limits now, not at the first run
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be >= 1 or None, got {max_turns}")
        domains = (domain,) if isinstance(domain, str) else tuple(domain)
        if not domains or len(set(domains)) != len(domains):
            raise ValueError(f"expected one or more distinct tau domains, got {domains!r}")
        self._pool = TauPool({name: TauEnvironment(load_domain(name, data)) for name in domains})
        self.domains = domains
        self.dataset = dataset or TAU3
        self.user = LiteLLMModel.of(user)
        self.judge = LiteLLMModel.of(judge) if judge is not None else None
        self.max_steps = max_steps
        self.max_errors = max_errors
        self.max_turns = max_turns
        self.tools = {name: _tool_schemas(env) for name, env in self._pool.envs.items()}

    def task_ids(self) -> list[str]:
        """The paper's tasks of each domain, domain by domain, as ``<domain>/<id>``."""
        return [qualify(name, t) for name, env in self._pool.envs.items() for t in paper_task_ids(env.domain)]

    def environment(self) -> TauPool:
        return self._pool

    def env_for(self, rollout: Rollout) -> RolloutEnvironment:
        """The environment bound to what the agent saw before each action, so replay's information check
        matches the live one: the user's messages and the results of accepted calls (plans, guard feedback
        and error texts are not evidence). The calls of one model answer (actions ``t<turn>.s<step>.c<i>`` of
        one step) form one assistant message, so a call never sees a parallel sibling's result."""
        users = list(rollout.metadata.get("user_messages", []))
        view: list[JsonObject] = []
        for turn, text in enumerate(users):
            view.append({"role": "user", "content": text})
            steps: dict[str, list[ToolCall]] = {}
            for action in (a for a in rollout.actions if a.turn == turn):
                steps.setdefault((action.call_id or "").rpartition(".c")[0] or str(id(action)), []).append(action)
            for calls in steps.values():
                view.append({"role": "assistant", "tool_calls": [{"id": c.call_id, "name": c.name} for c in calls]})
                view += [
                    {"role": "tool", "content": c.observation.content}
                    for c in calls
                    if c.observation is not None and not c.observation.error
                ]
        return self._pool.bind(replace(rollout, transcript=tuple(view)))

    def play(self, agent: Agent, task_id: str, trial: int = 0) -> Outcome:
        tau = _tau2()
        msg = tau["message"]
        env = self._pool.part(task_id)
        task = tau["tasks"].Task.model_validate(env.task(task_id))
        judged = _nl_judged(tau, task)
        if judged and self.judge is None:
            raise InputError(
                f"{self.dataset} task {task_id}: its reward basis holds NL_ASSERTION, which needs a judge model",
                hint="set judge_model for this dataset",
            )
        args = dict(self.user.args)
        if "seed" in args:
            args["seed"] = int(args["seed"]) + trial  # trials differ in the simulated user too
        user = tau["user"].UserSimulator(instructions=str(task.user_scenario), llm=self.user.model, llm_args=args)
        user_state = user.get_init_state()
        # Live, the session is tau2's environment; our checks run when the rollout is scored (env_for), and live
        # only for the guarded variant, whose guard is the point of the comparison.
        guarded = agent.variant.guarded
        session = env.start(task_id, evidence=()) if guarded else env.start(task_id, strict=False)
        episode = agent.start(system_prompt(env.domain.policy), self.tools[env.domain.name])
        episode.say({"role": "assistant", "content": FIRST_AGENT_MESSAGE})
        talk = Conversation(msg, user, user_state, Horizon(self.max_steps, self.max_errors))
        termination = self._converse(talk, agent, episode, session, env, task_id)
        reward, notes = self._evaluate(tau, task, env, task_id, talk.trajectory, termination, talk.started, judged)
        notes.update(
            {
                "termination": termination,
                "simulator": talk.usage,
                "user_model": self.user.model,
                "tau2_steps": talk.horizon.steps,
                "tau2_errors": talk.horizon.errors,
                "tau2_messages": len(talk.trajectory),
            }
        )
        notes["tau2"] = env.domain.provenance.to_json()
        notes["domain"] = env.domain.name
        notes["user_seed"] = args.get("seed")
        notes["user_messages"] = talk.users
        return Outcome(episode, int(reward >= 1.0 - 1e-6), notes)

    def _converse(
        self,
        talk: Conversation,
        agent: Agent,
        episode: Episode,
        session: TauSession | Tau2Session,
        env: TauEnvironment,
        task_id: str,
    ) -> str:
        """tau2's orchestration of one task: the user simulator and the agent take turns until the user stops,
        tau2's horizon ends it or ``max_turns`` is reached; returns tau2's termination reason (or
        ``max_turns``)."""
        msg, user, horizon = talk.msg, talk.user, talk.horizon
        termination: str | None = None
        turn = 0
        while termination is None:
            if self.max_turns is not None and turn >= self.max_turns:
                termination = "max_turns"
                break
            reply, talk.user_state = user.generate_next_message(talk.outgoing, talk.user_state)
            horizon.steps += 1
            count(talk.usage, reply)
            talk.trajectory.append(reply)
            if user.is_stop(reply):
                termination = "user_stop"
                episode.transcript.append({"role": "user", "content": reply.content})  # the agent never answers it
            termination = horizon.reason() or termination  # tau2 checks its limits after a stop too
            if termination is not None:
                break
            session.observe(reply.content)
            talk.users.append(str(reply.content))
            before = len(episode.actions)
            # tau2's horizon is the turn's only cap: each turn may use what is left of the conversation's horizon.
            planned = turn == 0
            result = agent.user_turn(
                episode,
                session,
                str(reply.content),
                turn,
                plan=planned,
                state=describe_state(env.domain.name, env.initial_db(task_id)) if planned else "",
                policy=env.domain.policy if planned else "",
                limit=horizon,
            )
            talk.trajectory.extend(_tool_messages(msg, episode.actions[before:]))
            horizon.errors = failed_calls(episode)
            if result.stop is None:
                talk.outgoing = msg.AssistantMessage(role="assistant", content=result.answer or "")
                talk.trajectory.append(talk.outgoing)
            termination = horizon.reason()
            if termination is None and result.stop is not None:
                raise RuntimeError("the turn stopped on tau2's horizon, but tau2's limits are not reached")
            turn += 1
        return termination

    def _evaluate(
        self,
        tau: JsonObject,
        task: Any,
        env: TauEnvironment,
        task_id: str,
        trajectory: list[Any],
        termination: str,
        started: float,
        judged: bool,
    ) -> tuple[float, JsonObject]:
        evaluator = tau["evaluator"]
        kind = evaluator.EvaluationType.ALL
        notes: JsonObject = {}
        judge_usage = new_usage()
        if judged and self.judge is not None:
            # tau2 reads the judge model from module constants; this process's runs all use the same judge.
            tau["nl"].DEFAULT_LLM_NL_ASSERTIONS = self.judge.model
            tau["nl"].DEFAULT_LLM_NL_ASSERTIONS_ARGS = dict(self.judge.args)
            metered(tau["nl"])
            kind = evaluator.EvaluationType.ALL_WITH_NL_ASSERTIONS
            notes["nondeterministic"] = f"NL assertions graded by {self.judge.model}"
        now = time.time()
        # A turn cap of ours is no tau2 reason; tau2 scores any early end the same way (reward 0).
        reason = termination if termination != "max_turns" else "max_steps"
        simulation = tau["simulation"].SimulationRun(
            id=str(uuid.uuid4()),
            task_id=local_id(env.domain.name, task_id),
            start_time=str(started),
            end_time=str(now),
            duration=now - started,
            termination_reason=reason,
            messages=trajectory,
        )
        with metering(judge_usage):
            info = evaluator.evaluate_simulation(
                simulation=simulation, task=task, evaluation_type=kind, solo_mode=False, domain=env.domain.name
            )
        if judged:
            notes["judge"] = {**judge_usage, "model": self.judge.model if self.judge else None}
        notes["reward"] = info.reward
        if info.reward_breakdown:
            notes["reward_breakdown"] = {str(getattr(k, "value", k)): v for k, v in info.reward_breakdown.items()}
        return float(info.reward), notes


def _tool_schemas(env: TauEnvironment) -> list[ToolSchema]:
    """The domain's agent tools as the model sees them (tau2's OpenAI schemas)."""
    toolkit = env.domain.make_toolkit(env.domain.base_db)
    return [
        ToolSchema(
            t.openai_schema["function"]["name"],
            t.openai_schema["function"]["description"],
            t.openai_schema["function"]["parameters"],
        )
        for t in toolkit.get_tools().values()
    ]


def _nl_judged(tau: JsonObject, task: Any) -> bool:
    """Whether tau2's reward for ``task`` includes the NL-assertion judge (``NL_ASSERTION`` in its basis)."""
    criteria = task.evaluation_criteria
    basis = set(criteria.reward_basis) if criteria is not None else set()
    return bool(tau["tasks"].RewardType.NL_ASSERTION in basis)


def _tool_messages(msg: Any, actions: Sequence[ToolCall]) -> list[Any]:
    """tau2's messages for one turn's executed calls: per model answer, one assistant message with its calls
    and one tool message per call (tau2's content and error flag). Calls that could not be parsed are left
    out: tau2's agent cannot emit them."""
    messages: list[Any] = []
    groups: dict[str, list[ToolCall]] = {}
    for action in actions:
        if action.parse_error is None and action.observation is not None:
            groups.setdefault((action.call_id or "").rpartition(".c")[0], []).append(action)
    for calls in groups.values():
        messages.append(
            msg.AssistantMessage(
                role="assistant",
                tool_calls=[
                    msg.ToolCall(id=c.call_id or "", name=c.name, arguments=dict(c.arguments), requestor="assistant")
                    for c in calls
                ],
            )
        )
        for c in calls:
            observation = c.observation
            assert observation is not None
            messages.append(
                msg.ToolMessage(
                    id=c.call_id or "",
                    role="tool",
                    requestor="assistant",
                    content=render(observation.content),
                    error=bool(observation.error),
                )
            )
    return messages
