"""Run agents on tau3-bench airline/retail tasks against tau2's user simulator, scored by tau2's evaluator.

One task is one conversation, as tau2's orchestrator runs it:

- the agent opens with tau2's first agent message ("Hi! How can I help you today?"); tau2's
  ``UserSimulator`` (its LLM is a setting) answers from the task's user scenario;
- each user message is one turn: the agent (any variant; planning happens on the first turn only) calls
  tools on the live :class:`~prefix_exec.envs.tau.TauSession`, with the information check on and fed
  with every user message, until it answers in text; the answer goes back to the user simulator;
- the conversation ends when the user simulator stops (``###STOP###``, transfer, out of scope), or after
  ``max_turns`` user messages, or when the agent hits its horizon cap without answering;
- Y is tau2's ``evaluate_simulation`` (DB, communicate and action checks; ``ALL``) on the conversation, with
  the executed tool calls as tau2 messages. Calls the session rejected changed nothing and are left out of
  the evaluated trajectory (tau2 would re-run them in its environment replay, and some, such as calls on
  an identifier never seen, would succeed there although they never ran here).

With ``judge`` set, the evaluation is ``ALL_WITH_NL_ASSERTIONS`` and the retail NL assertions are graded by
that model; such rewards are non-deterministic, and the rollout's metadata says so. User-simulator and
judge calls are never agent cost: their token counts go to ``metadata["simulator"]``.

Needs tau2's simulator and evaluator dependencies (``litellm``, ``pandas``) on top of the replay set.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from prefix_exec.agents.variants import Agent
from prefix_exec.drivers.base import Outcome
from prefix_exec.envs.tau import RolloutEnvironment, TauEnvironment, load_domain
from prefix_exec.envs.tau.backend import import_tau2
from prefix_exec.envs.tau.tasks import paper_task_ids
from prefix_exec.llm.config import EndpointConfig
from prefix_exec.llm.types import ToolSchema
from prefix_exec.trajectory import Rollout

FIRST_AGENT_MESSAGE = "Hi! How can I help you today?"
AGENT_INSTRUCTION = (
    "You are a customer service agent that helps the user according to the <policy> provided below.\n"
    "In each turn you can either:\n- Send a message to the user.\n- Make a tool call.\n"
    "You cannot do both at the same time.\n\n"
    "Try to be helpful and always follow the policy. Always make sure you generate valid JSON only."
)


def system_prompt(policy: str) -> str:
    """tau2's LLM-agent system prompt layout: instructions, then the domain policy."""
    return f"<instructions>\n{AGENT_INSTRUCTION}\n</instructions>\n<policy>\n{policy}\n</policy>"


@dataclass(frozen=True)
class LiteLLMModel:
    """A model as tau2's ``generate`` (litellm) calls it, built from an endpoint config."""

    model: str
    args: Mapping[str, Any]

    @classmethod
    def of(cls, config: EndpointConfig) -> LiteLLMModel:
        args: dict[str, Any] = {"api_base": config.base_url, "api_key": config.api_key(),
                                "temperature": config.temperature, "num_retries": config.max_retries}
        if config.seed is not None:
            args["seed"] = config.seed
        return cls(f"openai/{config.model}", args)


def _tau2() -> dict[str, Any]:
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
    """``domain`` is ``airline`` or ``retail``; tasks are the paper's set (50 + 114) unless the grid lists some."""

    def __init__(self, domain: str, *, user: EndpointConfig, judge: EndpointConfig | None = None,
                 dataset: str | None = None, max_turns: int = 30, data: str | None = None) -> None:
        self._env = TauEnvironment(load_domain(domain, data))
        self.domain = domain
        self.dataset = dataset or self._env.name
        self.user = LiteLLMModel.of(user)
        self.judge = LiteLLMModel.of(judge) if judge is not None else None
        self.max_turns = max_turns
        toolkit = self._env.domain.make_toolkit(self._env.domain.base_db)
        self.tools = [ToolSchema(t.openai_schema["function"]["name"], t.openai_schema["function"]["description"],
                                 t.openai_schema["function"]["parameters"]) for t in toolkit.get_tools().values()]

    def task_ids(self) -> list[str]:
        return list(paper_task_ids(self._env.domain))

    def environment(self) -> TauEnvironment:
        return self._env

    def env_for(self, rollout: Rollout) -> RolloutEnvironment:
        """The environment bound to what the agent saw before each action, so replay's information check
        matches the live one: the user's messages and the results of accepted calls (plans, guard feedback
        and error texts are not evidence), one action per assistant message."""
        users = list(rollout.metadata.get("user_messages", []))
        view: list[dict[str, Any]] = []
        for turn, text in enumerate(users):
            view.append({"role": "user", "content": text})
            for action in (a for a in rollout.actions if a.turn == turn):
                view.append({"role": "assistant", "tool_calls": [{"id": action.call_id, "name": action.name}]})
                if action.observation is not None and not action.observation.error:
                    view.append({"role": "tool", "content": action.observation.content})
        return self._env.bind(replace(rollout, transcript=tuple(view)))

    def run(self, agent: Agent, task_id: str, trial: int = 0) -> Outcome:
        tau = _tau2()
        msg = tau["message"]
        task = tau["tasks"].Task.model_validate(self._env.task(task_id))
        args = dict(self.user.args)
        if "seed" in args:
            args["seed"] = int(args["seed"]) + trial  # trials differ in the simulated user too
        user = tau["user"].UserSimulator(instructions=str(task.user_scenario), llm=self.user.model, llm_args=args)
        user_state = user.get_init_state()
        # The live session follows tau2: a call tau2 would execute is executed, even when it uses an id the agent
        # never saw. Our information check applies when the rollout is scored (env_for), and live only for the
        # guarded variant, whose guard is the point of the comparison.
        guarded = agent.method == "guarded-react"
        session = self._env.start(task_id, evidence=() if guarded else None)
        episode = agent.start(system_prompt(self._env.domain.policy), self.tools)
        episode.say({"role": "assistant", "content": FIRST_AGENT_MESSAGE})
        outgoing = msg.AssistantMessage(role="assistant", content=FIRST_AGENT_MESSAGE)
        trajectory: list[Any] = [outgoing]
        usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
        users: list[str] = []
        started = time.time()
        termination = "max_steps"
        for turn in range(self.max_turns):
            reply, user_state = user.generate_next_message(outgoing, user_state)
            _count(usage, reply)
            trajectory.append(reply)
            if user.is_stop(reply):
                termination = "user_stop"
                episode.transcript.append({"role": "user", "content": reply.content})  # the agent never answers it
                break
            session.observe(reply.content)
            users.append(str(reply.content))
            before = len(episode.actions)
            result = agent.user_turn(episode, session, str(reply.content), turn, plan=turn == 0)
            for action in episode.actions[before:]:
                observation = action.observation
                if observation is None or observation.error:
                    continue
                call = msg.ToolCall(id=action.call_id or "", name=action.name, arguments=dict(action.arguments),
                                    requestor="assistant")
                trajectory.append(msg.AssistantMessage(role="assistant", tool_calls=[call]))
                trajectory.append(msg.ToolMessage(id=action.call_id or "", role="tool", requestor="assistant",
                                                  content=str(observation.content), error=False))
            if result.capped:
                break
            outgoing = msg.AssistantMessage(role="assistant", content=result.answer or "")
            trajectory.append(outgoing)
        reward, notes = self._evaluate(tau, task, task_id, trajectory, termination, started, usage)
        notes.update({"termination": termination, "simulator": usage, "user_model": self.user.model})
        notes["user_seed"] = args.get("seed")
        notes["user_messages"] = users
        return Outcome(episode, int(reward >= 1.0 - 1e-6), notes)

    def _evaluate(self, tau: dict[str, Any], task: Any, task_id: str, trajectory: list[Any], termination: str,
                  started: float, usage: dict[str, int]) -> tuple[float, dict[str, Any]]:
        evaluator = tau["evaluator"]
        kind = evaluator.EvaluationType.ALL
        notes: dict[str, Any] = {}
        if self.judge is not None:
            # tau2 reads the judge model from module constants; this process's runs all use the same judge.
            tau["nl"].DEFAULT_LLM_NL_ASSERTIONS = self.judge.model
            tau["nl"].DEFAULT_LLM_NL_ASSERTIONS_ARGS = dict(self.judge.args)
            kind = evaluator.EvaluationType.ALL_WITH_NL_ASSERTIONS
            notes["nondeterministic"] = f"NL assertions graded by {self.judge.model}"
        now = time.time()
        simulation = tau["simulation"].SimulationRun(
            id=str(uuid.uuid4()), task_id=task_id, start_time=str(started), end_time=str(now),
            duration=now - started, termination_reason=termination, messages=trajectory,
        )
        info = evaluator.evaluate_simulation(simulation=simulation, task=task, evaluation_type=kind,
                                             solo_mode=False, domain=self.domain)
        notes["reward"] = info.reward
        if info.reward_breakdown:
            notes["reward_breakdown"] = {str(getattr(k, "value", k)): v for k, v in info.reward_breakdown.items()}
        return float(info.reward), notes


def _count(usage: dict[str, int], message: Any) -> None:
    usage["calls"] += 1
    data = getattr(message, "usage", None) or {}
    usage["prompt_tokens"] += int(data.get("prompt_tokens") or 0)
    usage["completion_tokens"] += int(data.get("completion_tokens") or 0)
