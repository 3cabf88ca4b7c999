"""Run agents on BFCL v3 multi-turn tasks, as BFCL's own function-calling inference loop does.

Per task (following ``bfcl_eval``'s ``base_handler`` multi-turn loop):

- the tools are the function docs of the task's involved classes, minus miss_func's held-back functions,
  with BFCL's Python hint appended to their descriptions (held-back ones join later without it, as in
  BFCL), converted to OpenAI tools exactly as BFCL's ``convert_to_tool`` converts them for OpenAI chat
  completions (:func:`tool_schema`: every doc key is kept, ``response`` included; ``dict`` -> ``object``,
  a top-level or nested-object ``float`` -> ``number`` with ``format: float`` and " This is a float type
  value." appended to its description, while array items only get their type mapped); no system prompt
  is sent, as in BFCL's OpenAI function-calling handler;
- the user turns are given in order; per turn the agent loops until it answers without a tool call;
- **steps**: the grid's ``max_steps`` (``AgentSettings.max_steps``, 20 by default) plays the role of BFCL's
  ``MAXIMUM_STEP_LIMIT`` (20). BFCL counts the steps whose calls it executed and force-quits when the count
  *exceeds* the limit, so a turn may use ``max_steps + 1`` model calls, and is force-quit when all of them
  called tools. The driver gives the shared turn loop a turn limit of ``max_steps + 1`` model calls to match
  (:class:`~prefix_exec.agents.turn_limit.StepCap`);
- **force quit**: a capped turn ends the episode (no later turn is played), and Y is BFCL's rule over the
  turns played, so it is 0 (``[force_terminated]``) unless the capped turn was the last one, exactly as
  ``eval_runner`` compares turn counts; the rollout notes ``force_quit_turn`` and ``force_terminated``;
- at a miss_func reveal turn (a turn with no user message) the held-back functions join the tools and the
  user message is BFCL's ``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``;
- long_context tasks run on the long-context state (the environment loads it by category);
- **the live session follows BFCL** for every variant but ``guarded-react``: a call BFCL would execute is
  executed as BFCL executes it (held-back tools and wrongly typed arguments included, nothing rolled back;
  on the safe invocation, never ``eval``), and the agent gets BFCL's own answer text. Validity is measured
  when the rollout is scored, by strict replay (:meth:`BfclDriver.env_for`). ``guarded-react`` keeps the
  strict session live, because its guard is the point of the comparison;
- Y is BFCL's final success rule (:class:`prefix_exec.envs.bfcl.FinalSuccess`) over the rollout's actions
  and the turns played; it executes the same calls the live session executed, so its state is the live one;
- planners get a state description per turn, built from the live session before the turn
  (:func:`prefix_exec.envs.bfcl.state_description.describe_state`, at most ``state_chars`` characters).

Differences from BFCL's loop, by design: a call whose arguments are not JSON is an action (a schema
failure) and the model gets the error back instead of the turn ending; the step's other calls run, and Y
skips only the undecodable call (``metadata["loop"]`` says so to :meth:`FinalSuccess.check_rollout`). A
name that is not a method of an involved class is undefined rather than evaluated. Outside the main thread
(runner threads, Ray actors) only the environment's static cost bound bounds a call, not its timer.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prefix_exec.agents.turn_limit import StepCap
from prefix_exec.agents.variants import Agent
from prefix_exec.drivers.base import Outcome
from prefix_exec.envs.base import Environment
from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess
from prefix_exec.envs.bfcl.checker import OWN_LOOP
from prefix_exec.envs.bfcl.state_description import describe_state
from prefix_exec.envs.bfcl.tasks import CATEGORIES, bfcl_module, data_dir, function_docs, load_category
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.llm.types import ToolSchema
from prefix_exec.trajectory import Rollout

#: BFCL's type names -> JSON Schema types, as BFCL maps them for OpenAI-style tools (unknown -> string).
OPENAI_TYPES: Mapping[str, str] = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
}
#: BFCL's reveal message, used if ``bfcl_eval`` does not expose it.
REVEAL_MESSAGE = "I have updated some more functions you can choose from. What about now?"
#: What BFCL's dataset loader appends to the description of each function listed from the start (Python
#: categories); miss_func's held-back functions are set aside before it, so they join without it.
PYTHON_HINT = " Note that the provided function is in Python 3 syntax."
#: What BFCL appends to a float parameter's description.
FLOAT_NOTE = " This is a float type value."


def reveal_message() -> str:
    try:
        text: str = bfcl_module("constants.default_prompts").DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
    except (ImportError, AttributeError):
        return REVEAL_MESSAGE
    return text


def _openai_type(name: Any) -> str:
    return OPENAI_TYPES.get(str(name), "string")


def openai_properties(properties: JsonMapping) -> JsonObject:
    """BFCL's parameter ``properties`` as OpenAI JSON Schema, converted the way BFCL converts them.

    Per property: a missing type becomes ``string``; ``float`` gets ``format: float`` and
    :data:`FLOAT_NOTE` appended to its description; the type is mapped (unknown -> ``string``). An
    ``array``/``object`` with ``properties`` recurses into them; otherwise its ``items`` get their type
    mapped (and only that), one level further for an array of arrays, recursing for an array of objects
    with ``properties``. Where BFCL's conversion would crash (a float without a description, items without
    a type) this one uses an empty description and ``string``.
    """
    out: JsonObject = {}
    for key, source in properties.items():
        spec = copy.deepcopy(dict(source))
        declared = spec.get("type")
        if declared is None:
            spec["type"] = "string"
        else:
            if declared == "float":
                spec["format"] = "float"
                spec["description"] = str(spec.get("description", "")) + FLOAT_NOTE
            spec["type"] = _openai_type(declared)
        if spec["type"] in ("array", "object"):
            if isinstance(spec.get("properties"), Mapping):
                spec["properties"] = openai_properties(spec["properties"])
            elif isinstance(spec.get("items"), Mapping):
                items = spec["items"]
                items["type"] = _openai_type(items.get("type"))
                if items["type"] == "array" and isinstance(items.get("items"), Mapping):
                    items["items"]["type"] = _openai_type(items["items"].get("type"))
                elif items["type"] == "object" and isinstance(items.get("properties"), Mapping):
                    items["properties"] = openai_properties(items["properties"])
        out[key] = spec
    return out


@dataclass(frozen=True)
class BfclTool(ToolSchema):
    """A BFCL tool: the OpenAI schema plus the doc's ``response`` schema, which BFCL sends too."""

    response: JsonMapping | None = None

    def to_openai(self) -> JsonObject:
        function: JsonObject = {
            "name": self.name,
            "description": self.description,
            "parameters": copy.deepcopy(dict(self.parameters)),
        }
        if self.response is not None:
            function["response"] = copy.deepcopy(dict(self.response))
        return {"type": "function", "function": function}


def tool_schema(doc: JsonMapping, *, hint: bool = True) -> BfclTool:
    """One BFCL function doc as the tool BFCL's OpenAI chat-completions handler sends.

    ``hint`` appends :data:`PYTHON_HINT` to the description, as BFCL's dataset loader does for the functions
    offered from the start; BFCL offers miss_func's held-back functions without it.
    """
    parameters = copy.deepcopy(dict(doc.get("parameters", {"type": "dict", "properties": {}})))
    parameters["type"] = "object"
    parameters["properties"] = openai_properties(parameters.get("properties", {}))
    response = doc.get("response")
    return BfclTool(
        str(doc["name"]).replace(".", "_"),  # BFCL's rule: OpenAI names cannot hold dots
        str(doc.get("description", "")) + (PYTHON_HINT if hint else ""),
        parameters,
        response=copy.deepcopy(dict(response)) if isinstance(response, Mapping) else None,
    )


def bfcl_steps(agent: Agent) -> StepCap:
    """A turn limit with room for BFCL's step counting: ``max_steps + 1`` model calls (module docstring)."""
    return StepCap(agent.settings.max_steps + 1)


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
    """``subset = "stratified-200"`` runs our 4 x 50 sample (not the paper's ids).

    ``categories`` limits to some categories.
    """

    def __init__(
        self,
        *,
        dataset: str = "bfcl",
        categories: tuple[str, ...] = CATEGORIES,
        subset: str | None = None,
        state_chars: int = 2000,
    ) -> None:
        if subset is not None:
            from prefix_exec.envs.bfcl.sample import sample_name

            subset = sample_name(subset)
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
        if self.subset is not None:
            from prefix_exec.envs.bfcl.sample import stratified_200

            return [t for t in stratified_200() if any(t.startswith(f"multi_turn_{c}_") for c in self.categories)]
        return [task for c in self.categories for task in load_category(c)]

    def environment(self) -> BfclEnvironment:
        return self._env

    def env_for(self, rollout: Rollout) -> Environment:
        return self._env

    def play(self, agent: Agent, task_id: str, trial: int = 0) -> Outcome:
        task = self._env.task(task_id)
        turns, held = questions(task.category)[task_id]
        held_names = {name for names in held.values() for name in names}
        docs = [doc for c in task.involved_classes for doc in function_docs(c).values()]
        guarded = agent.variant.guarded  # keeps the strict session live: its guard is the point
        session = self._env.start(task_id, strict=guarded)
        limit = bfcl_steps(agent)
        episode = agent.start("", [tool_schema(d) for d in docs if d["name"] not in held_names])
        played = 0
        quit_turn: int | None = None
        for index, content in enumerate(turns):
            if str(index) in held:
                episode.tools.extend(tool_schema(d, hint=False) for d in docs if d["name"] in held[str(index)])
                content = reveal_message()
            state = describe_state(session.instances, task.involved_classes, self.state_chars)
            result = agent.user_turn(episode, session, content, index, state=state, limit=limit)
            played = index + 1
            if result.capped:
                quit_turn = index  # BFCL's force quit: the whole entry stops here
                break
        check = self._success.check(task, episode.actions, played, whole_steps=False)
        notes: JsonObject = {
            "turns": played,
            "category": task.category,
            "loop": OWN_LOOP,
            "live_session": "strict" if guarded else "bfcl",
        }
        if quit_turn is not None:
            notes["force_quit_turn"] = quit_turn
            notes["force_terminated"] = played < len(turns)
        if not check.success:
            notes["success_reason"] = check.reason
        return Outcome(episode, check.success, notes)
