"""Run agents on ToolSandbox scenarios through ToolSandbox's own message loop, scored live and by its evaluation.

One task is one named scenario (of ToolSandbox's 1032), played by ``Scenario.play`` with three roles:

- the **user** is ToolSandbox's ``OpenAIAPIUser`` (its prompts and its ``end_conversation`` tool), with the
  ``user_model``'s endpoint: its client is replaced after construction, since the role hard-codes OpenAI's URL;
- the **execution environment** is ToolSandbox's ``ExecutionEnvironment``;
- the **agent** is a role of ours: on each user message it runs one user turn of the variant (planning on the
  first turn only). Only the executor emits tool calls; each runs at once through a
  :class:`~prefix_exec.envs.toolsandbox.live.ToolSandboxSession` on the scenario's context, which hands
  ToolSandbox's execution environment code we build (never model text). The turn's answer goes to the user.

The horizon is ToolSandbox's ``max_messages`` (30 rows after the starting ones), checked where ToolSandbox
checks it, before each agent response (:class:`MessageLimit`, the turn loop's limit); ``Scenario.play``
then stops the loop. One difference: ToolSandbox's loop may stop between an agent's tool-call rows and their
execution, while our calls run as soon as the model emits them. A scenario that raises in the
loop (an API error of the user model, say) ends as ToolSandbox's CLI records it: ``exception_type``, similarity 0.

Y is ToolSandbox's evaluation, ``similarity >= similarity_threshold`` (default 1.0); minefield hits are located
as the importer locates them (:func:`~prefix_exec.envs.toolsandbox.semantics.locate_minefields`) and kept in the
rollout's metadata by :class:`~prefix_exec.envs.toolsandbox.semantics.ScenarioFacts`. ``env_for`` replays the
rollout on a fresh live session with those facts. The driver writes the scenario's ToolSandbox run folder
(:mod:`~prefix_exec.drivers.toolsandbox_files`), so ``prefix-exec score toolsandbox`` can score it too.
"""

from __future__ import annotations

import functools
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tqdm

from prefix_exec.agents.episode import Episode
from prefix_exec.agents.turn_limit import Stop
from prefix_exec.agents.variants import Agent
from prefix_exec.drivers.base import Outcome
from prefix_exec.drivers.toolsandbox_files import run_folder, write_run_files
from prefix_exec.envs.toolsandbox.live import (
    ToolSandboxEnvironment,
    ToolSandboxSession,
    toolsandbox,
    toolsandbox_module,
)
from prefix_exec.envs.toolsandbox.sample import SUBSET, paper_sample, rapid_api_note, runnable, subset_name
from prefix_exec.envs.toolsandbox.semantics import ScenarioFacts, final_success, locate_minefields
from prefix_exec.json_types import JsonObject
from prefix_exec.llm.client import openai_client
from prefix_exec.llm.config import EndpointConfig
from prefix_exec.llm.types import Completion, ToolSchema
from prefix_exec.trajectory import Rollout


class ToolSandboxDriver:
    """``subset`` ``"stratified-200"`` (our stratified 200) or ``None`` (every
    runnable scenario); ``files`` is where
    run folders go (``None``: not written)."""

    def __init__(
        self,
        *,
        user: EndpointConfig,
        dataset: str = "toolsandbox",
        subset: str | None = None,
        similarity_threshold: float = 1.0,
        files: Path | None = None,
    ) -> None:
        if subset is not None:
            try:
                subset = subset_name(subset)
            except KeyError as exc:
                raise ValueError(exc.args[0]) from None
        if not 0.0 <= similarity_threshold <= 1.0:
            raise ValueError(f"similarity_threshold must be in [0, 1], got {similarity_threshold}")
        self._env = ToolSandboxEnvironment()
        self.dataset = dataset
        self.user = user
        self.subset = subset
        self.similarity_threshold = similarity_threshold
        self.files = files

    def task_ids(self) -> list[str]:
        """The runnable scenarios (or our stratified 200); says on stderr whether RapidAPI scenarios are left out."""
        print(f"prefix-exec: {self.dataset}: {rapid_api_note()}", file=sys.stderr)
        if self.subset == SUBSET:
            return paper_sample(self._env.scenarios)
        return sorted(runnable(self._env.scenarios))

    def environment(self) -> ToolSandboxEnvironment:
        return self._env

    def env_for(self, rollout: Rollout) -> ToolSandboxEnvironment:
        """A live environment that replays the rollout from the scenario's start, with its recorded facts."""
        facts = ScenarioFacts.from_metadata(rollout.task_id, rollout.metadata)
        env = ToolSandboxEnvironment(lambda _task: facts)
        return env

    def play(self, agent: Agent, task_id: str, trial: int = 0) -> Outcome:
        ctx = toolsandbox("context")
        scenario = self._env.scenario(task_id)
        role = _agent_role(agent, self._env.facts(task_id), scenario.max_messages)
        roles = {
            ctx.RoleType.USER: self._user_role(trial),
            ctx.RoleType.EXECUTION_ENVIRONMENT: toolsandbox("environment").ExecutionEnvironment(),
            ctx.RoleType.AGENT: role,
        }
        error: dict[str, str] | None = None
        _quiet_progress()
        try:
            context = scenario.play(roles, task_id)
        except Exception as exc:  # ToolSandbox's CLI records any exception of the loop and scores the run 0
            error = {"exception_type": type(exc).__name__, "traceback": traceback.format_exc()}
            context = ctx.get_current_context()
        result = scenario.evaluation.evaluate(execution_context=context, max_turn_count=scenario.max_messages)
        similarity = 0.0 if error else float(result.similarity)
        categories = [str(c) for c in scenario.categories]
        mapping = {} if error else result.minefield_mapping
        triples = sorted((int(k), int(v[0]), float(v[1])) for k, v in mapping.items())
        session: ToolSandboxSession | None = role.session
        hits = locate_minefields(triples, session.rows if session else ())
        facts = ScenarioFacts.of_scenario(categories, hits)
        episode = role.episode or agent.start("", [])
        notes: JsonObject = {
            **facts.to_metadata(categories, hits, "live"),
            "similarity": similarity,
            "milestone_similarity": 0.0 if error else float(result.milestone_similarity),
            "user_model": self.user.model,
            "user_turns": role.turns,
            "toolsandbox_messages": int(context.max_sandbox_message_index) + 1,
        }
        if error:
            notes["aborted_with"] = error["exception_type"]
        if self.files is not None:
            folder = run_folder(self.files, self.dataset, agent.executor.config.model, agent.method, trial, task_id)
            write_run_files(folder, task_id, scenario, context, result, error)
            notes["scenario_dir"] = str(folder / "trajectories" / task_id)
        return Outcome(episode, final_success(similarity, self.similarity_threshold), notes)

    def _user_role(self, trial: int) -> Any:
        role = toolsandbox("user").OpenAIAPIUser
        user = role.__new__(role)  # its __init__ only builds a client for OpenAI's URL, which needs a key
        user.model_name = self.user.model
        user.openai_client = openai_client(
            base_url=self.user.base_url,
            api_key=self.user.api_key() or "none",
            timeout_s=self.user.timeout_s,
            max_retries=self.user.max_retries,
        )
        return user


def _quiet_progress() -> None:
    """``Scenario.play`` draws a tqdm bar per scenario, which would garble the runner's status lines: give its
    module (only its module, at run time; the source is untouched) a tqdm that is disabled."""
    module = toolsandbox_module("tool_sandbox.common.scenario")
    if not isinstance(getattr(module, "tqdm", None), functools.partial):
        setattr(module, "tqdm", functools.partial(tqdm.tqdm, disable=True))  # noqa: B010


def _agent_role(agent: Agent, facts: ScenarioFacts, max_messages: int) -> Any:
    """Our agent as a ToolSandbox role (built here: ``BaseRole`` exists only once ToolSandbox is imported)."""
    base = toolsandbox("base").BaseRole
    ctx = toolsandbox("context")

    class AgentRole(base):  # type: ignore[misc,valid-type]
        role_type = ctx.RoleType.AGENT

        def __init__(self) -> None:
            self.episode: Episode | None = None
            self.session: ToolSandboxSession | None = None
            self.turns = 0
            self.last_row = 0

        def respond(self, ending_index: int | None = None) -> None:
            messages = self.get_messages(ending_index=ending_index)
            self.messages_validation(messages=messages)
            visible = self.filter_messages(messages=messages)
            if visible[-1].sender != ctx.RoleType.USER:
                return
            context = ctx.get_current_context()
            if self.session is None:
                self.last_row = context.max_sandbox_message_index  # where Scenario.play's message count starts
                self.session = ToolSandboxSession(context, facts)
                system = next((m.content for m in visible if m.sender == ctx.RoleType.SYSTEM), "")
                self.episode = agent.start(system, _tool_schemas(self.session))
            self.session.context = context  # the loop's current context (it never swaps it mid-scenario here)
            assert self.episode is not None
            limit = MessageLimit(context, self.last_row + max_messages)
            result = agent.user_turn(
                self.episode, self.session, str(visible[-1].content), self.turns, plan=self.turns == 0, limit=limit
            )
            self.turns += 1
            if result.answer is not None:
                message = toolsandbox("messages").Message
                self.add_messages(
                    [message(sender=ctx.RoleType.AGENT, recipient=ctx.RoleType.USER, content=result.answer)]
                )

    return AgentRole()


@dataclass
class MessageLimit:
    """ToolSandbox's horizon as a turn limit: ``Scenario.play`` asks a role to respond only while the last
    SANDBOX row index is below ``limit`` (its starting rows plus ``max_messages``); one of our model calls is
    one agent response. The stop is ``max_messages``, a capped turn."""

    context: Any
    limit: int

    def before_call(self, episode: Episode, calls: int) -> Stop | None:
        return Stop("max_messages") if self.context.max_sandbox_message_index >= self.limit else None

    def after_call(self, episode: Episode, completion: Completion) -> None:
        return None


def _tool_schemas(session: ToolSandboxSession) -> list[ToolSchema]:
    """The agent-facing tools as ToolSandbox converts them for OpenAI agents (names may be scrambled)."""
    converted = toolsandbox("tools").convert_to_openai_tools(session.agent_tools())
    return [
        ToolSchema(
            t["function"]["name"],
            t["function"].get("description", ""),
            t["function"].get("parameters", {"type": "object", "properties": {}}),
        )
        for t in converted
    ]
