"""Run agents on BFCL v3 multi-turn tasks, as BFCL's own function-calling inference loop does.

Per task (following ``bfcl_eval``'s ``base_handler`` multi-turn loop):

- the tools are the function docs of the task's involved classes, minus miss_func's held-back functions,
  converted to OpenAI tools as BFCL converts them (``dict`` -> ``object``, ``float`` -> ``number`` with
  ``format: float``, ...); no system prompt is sent, as in BFCL's OpenAI function-calling handler;
- the user turns are given in order; per turn the agent loops until it answers without a tool call or
  reaches the horizon cap (``max_steps``, 20 by default, BFCL's ``MAXIMUM_STEP_LIMIT``);
- at a miss_func reveal turn (a turn with no user message) the held-back functions join the tools and the
  user message is BFCL's ``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``;
- long_context tasks run on the long-context state (the environment loads it by category);
- calls run on the safe environment (:mod:`prefix_exec.envs.bfcl`), never ``eval``; Y is BFCL's final
  success rule (:class:`prefix_exec.envs.bfcl.FinalSuccess`) over the rollout's actions and turn count.

Differences from BFCL's loop, by design: a call whose arguments are not JSON is an action (a schema
failure) and the model gets the error back instead of the turn ending; BFCL allows one step past the cap
(it quits when its counter exceeds 20). Outside the main thread (runner threads, Ray actors) only the
environment's static cost guard bounds a call, not its timer.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from typing import Any

from prefix_exec.agents.variants import Agent
from prefix_exec.drivers.base import Outcome
from prefix_exec.envs.base import Environment
from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess
from prefix_exec.envs.bfcl.tasks import CATEGORIES, bfcl_module, data_dir, function_docs, load_category
from prefix_exec.llm.types import ToolSchema
from prefix_exec.trajectory import Rollout

#: BFCL's type names -> JSON Schema types, as BFCL maps them for OpenAI-style tools (unknown -> string).
OPENAI_TYPES: Mapping[str, str] = {
    "integer": "integer", "number": "number", "float": "number", "string": "string", "boolean": "boolean",
    "bool": "boolean", "array": "array", "list": "array", "dict": "object", "object": "object", "tuple": "array",
    "any": "string",
}
#: BFCL's reveal message, used if ``bfcl_eval`` does not expose it.
REVEAL_MESSAGE = "I have updated some more functions you can choose from. What about now?"


def reveal_message() -> str:
    try:
        text: str = bfcl_module("constants.default_prompts").DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
    except (ImportError, AttributeError):
        return REVEAL_MESSAGE
    return text


def openai_schema(spec: Mapping[str, Any]) -> dict[str, Any]:
    """One BFCL parameter spec as JSON Schema (recursing into ``properties`` and ``items``)."""
    out = copy.deepcopy(dict(spec))
    kind = OPENAI_TYPES.get(str(out.get("type", "string")), "string")
    if out.get("type") == "float":
        out["format"] = "float"
        out["description"] = str(out.get("description", "")) + " This is a float type value."
    out["type"] = kind
    if isinstance(out.get("properties"), Mapping):
        out["properties"] = {k: openai_schema(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), Mapping):
        out["items"] = openai_schema(out["items"])
    return out


def tool_schema(doc: Mapping[str, Any]) -> ToolSchema:
    parameters = openai_schema(doc.get("parameters", {"type": "dict", "properties": {}}))
    parameters["type"] = "object"
    return ToolSchema(str(doc["name"]), str(doc.get("description", "")), parameters)


@functools.cache
def questions(category: str) -> Mapping[str, tuple[tuple[str, ...], Mapping[str, tuple[str, ...]]]]:
    """Per task id: the user messages of each turn, and miss_func's held-back names by reveal turn (BFCL's data)."""
    rows: dict[str, tuple[tuple[str, ...], Mapping[str, tuple[str, ...]]]] = {}
    with (data_dir() / f"BFCL_v4_multi_turn_{category}.json").open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                turns = tuple("\n".join(str(m["content"]) for m in turn) for turn in row["question"])
                held = {str(k): tuple(v) for k, v in row.get("missed_function", {}).items()}
                rows[row["id"]] = (turns, held)
    return rows


class BfclDriver:
    """``subset = "paper"`` runs the paper's 4 x 50 sample; ``categories`` limits to some categories."""

    def __init__(self, *, dataset: str = "bfcl", categories: tuple[str, ...] = CATEGORIES,
                 subset: str | None = None, state_chars: int = 2000) -> None:
        if subset not in (None, "paper"):
            raise KeyError(f"unknown BFCL subset {subset!r}; the one subset is 'paper'")
        unknown = [c for c in categories if c not in CATEGORIES]
        if unknown:
            raise KeyError(f"unknown BFCL category {unknown[0]!r}; expected some of {', '.join(CATEGORIES)}")
        self.dataset = dataset
        self.categories = tuple(categories)
        self.subset = subset
        self.state_chars = state_chars
        self._env = BfclEnvironment()
        self._success = FinalSuccess(self._env.templates)

    def task_ids(self) -> list[str]:
        if self.subset == "paper":
            from prefix_exec.envs.bfcl.sample import paper_sample

            return [t for t in paper_sample() if any(t.startswith(f"multi_turn_{c}_") for c in self.categories)]
        return [task for c in self.categories for task in load_category(c)]

    def environment(self) -> BfclEnvironment:
        return self._env

    def env_for(self, rollout: Rollout) -> Environment:
        return self._env

    def run(self, agent: Agent, task_id: str, trial: int = 0) -> Outcome:
        task = self._env.task(task_id)
        turns, held = questions(task.category)[task_id]
        held_names = {name for names in held.values() for name in names}
        docs = [doc for c in task.involved_classes for doc in function_docs(c).values()]
        session = self._env.start(task_id)
        state = json.dumps(task.initial_config, sort_keys=True, default=repr)[: self.state_chars]
        episode = agent.start("", [tool_schema(d) for d in docs if d["name"] not in held_names])
        for index, content in enumerate(turns):
            if str(index) in held:
                episode.tools.extend(tool_schema(d) for d in docs if d["name"] in held[str(index)])
                content = reveal_message()
            agent.user_turn(episode, session, content, index, state=state)
        check = self._success.check(task, episode.actions, len(turns))
        notes: dict[str, Any] = {"turns": len(turns), "category": task.category}
        if not check.success:
            notes["success_reason"] = check.reason
        return Outcome(episode, check.success, notes)
