"""Run agents on a custom tool spec (``prefix_exec.envs.custom.environment``): one user turn per task.

The task's ``description`` in the spec is the user's message; tool descriptions and argument schemas come
from the spec. A custom spec has no success check of its own, so Y is a stated heuristic: 1 when the agent
ended with an answer inside the horizon cap, every action it took was accepted, and it used a tool unless
the task allows finishing without one. Rollouts carry ``success_rule`` saying so.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefix_exec.agents.variants import Agent
from prefix_exec.drivers.base import Outcome
from prefix_exec.envs.base import Environment
from prefix_exec.envs.custom.environment import environment_from_spec, read_spec
from prefix_exec.envs.custom.session import CustomEnvironment, CustomSession
from prefix_exec.llm.types import ToolSchema
from prefix_exec.trajectory import Rollout

SUCCESS_RULE = "heuristic: answered within the cap, every action accepted, a tool used unless allow_no_tool"
SYSTEM = (
    "You are an assistant that completes the user's request with the tools of {name}. Call tools as needed; "
    "when the request is done, answer the user without a tool call."
)


class CustomDriver:
    """Driver over a spec file; ``dataset`` names the rows (default: the spec's name)."""

    def __init__(self, spec: str | Path, *, dataset: str | None = None, state_chars: int = 2000) -> None:
        self.spec = Path(spec)
        # Read once, in our format whatever form the file has (an OpenAI array, MCP): the environment is built
        # from it as load_spec builds one, and the tool and task descriptions the model sees come from it too.
        raw, form = read_spec(self.spec)
        self._env = environment_from_spec(raw, self.spec, form=form)
        self.dataset = dataset or self._env.name
        self.descriptions = {str(k): str((v or {}).get("description", k)) for k, v in (raw.get("tasks") or {}).items()}
        self.tools = [
            ToolSchema(t["name"], t.get("description", ""), self._env.tools[t["name"]].parameters) for t in raw["tools"]
        ]
        self.state_chars = state_chars

    def task_ids(self) -> list[str]:
        return list(self.descriptions)

    def environment(self) -> CustomEnvironment:
        return self._env

    def env_for(self, rollout: Rollout) -> Environment:
        return self._env

    def play(self, agent: Agent, task_id: str, trial: int = 0) -> Outcome:
        session: CustomSession = self._env.start(task_id)
        state = json.dumps(session.state, sort_keys=True)[: self.state_chars]
        episode = agent.start(SYSTEM.format(name=self._env.name), self.tools)
        result = agent.user_turn(episode, session, self.descriptions[task_id], 0, state=state)
        used_tool = bool(episode.actions) or session.task.allow_no_tool
        all_accepted = all(not (a.observation and a.observation.error) for a in episode.actions)
        success = int(not result.capped and used_tool and all_accepted)
        return Outcome(episode, success, {"success_rule": SUCCESS_RULE})
