"""tau2-bench results files (tau3-bench airline/retail) -> rollouts.

A results file is one JSON object ``{timestamp, info, tasks[...], simulations[...]}``. Each simulation becomes
exactly one :class:`~prefix_exec.trajectory.Rollout`:

- ``actions``: the assistant's tool calls in message order (calls of one message in their listed order),
  each with the recorded tool message (matched by id) as its observation: ``content`` and the ``error`` flag;
- ``success``: 1 when ``reward_info.reward`` is 1.0 (within 1e-9), else 0;
- ``model``: ``info.agent_info.llm`` unless overridden; ``method``: ``info.agent_info.implementation``
  (``llm_agent``) unless overridden;
- ``dataset``: ``tau3``, one dataset for both domains, and ``task_id`` qualified with the domain
  (``airline/18``; :mod:`prefix_exec.envs.tau.pooled`): the domains number their tasks independently. The domain,
  from ``info.environment_info.domain_name`` (or ``--domain``), is also ``metadata.domain``;
- ``trial``: the simulation's ``trial`` (or where ``--trial`` / ``--trial-field`` say); a simulation without one
  is trial 0 with ``trial_given`` False. Trials are made distinct across files by :mod:`prefix_exec.scoring.numbering`
  (:meth:`TauResults.numbered`);
- ``transcript``: the messages (role, content, tool calls, ids, error flags), which the environment uses
  for the information-availability check;
- ``metadata``: the simulation id, termination reason, recorded reward and the 1-based depth of the first
  recorded ``error=True`` call (``None`` when there is none); once the file is matched with the installed tau2
  (:func:`prefix_exec.envs.tau.results.load_results`), also ``tau2`` (provider, version, task set, task digest)
  and ``task_definition`` (``installed``, or ``embedded (differs from installed)`` for a task whose embedded
  definition differs).

User-side tool calls (``requestor: user``, telecom only) are not agent actions and are not imported. The file's
embedded ``tasks`` are returned alongside, so no tasks.json is needed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prefix_exec.envs.tau.dispatch import depth_error
from prefix_exec.envs.tau.domain import Provenance
from prefix_exec.envs.tau.pooled import TAU3, qualify, variant_note, variant_of
from prefix_exec.errors import InputError
from prefix_exec.importers.arguments import decode_arguments
from prefix_exec.importers.trials import FROM_INPUT, TrialError, TrialRule, trial_fields
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.records.infrastructure import mark
from prefix_exec.records.jsonl import check_regular_file
from prefix_exec.records.values import finite, shown
from prefix_exec.trajectory import Observation, Rollout, Skipped, ToolCall

REWARD_TOLERANCE = 1e-9
#: tau2's termination reason for a simulation the system ended (an API disconnect), not the agent.
INFRASTRUCTURE_ERROR = "infrastructure_error"


@dataclass(frozen=True)
class TauResults:
    """One parsed results file: its domain, embedded tasks, rollouts, and simulations it could not read."""

    path: str
    domain: str
    info: JsonMapping
    tasks: Mapping[str, JsonMapping]
    rollouts: tuple[Rollout, ...]
    skipped: tuple[Skipped, ...] = ()
    simulations: tuple[JsonMapping, ...] = field(default=(), repr=False)
    #: The simulation each rollout was read from (same order as ``rollouts``).
    raw_simulations: tuple[JsonMapping, ...] = field(default=(), repr=False)
    #: What the reading decided that the user should hear (a policy variant read as its domain, --domain over
    #: the file's own), for stderr.
    notes: tuple[str, ...] = ()
    #: The domain the file names (``info.environment_info.domain_name``), ``""`` when it names none.
    named_domain: str = ""

    @property
    def offered_tools(self) -> tuple[str, ...]:
        """The tool names the file lists as offered (tau2's ``info.environment_info.tool_defs``, an object by
        name or a list of objects with a ``name``); empty when it lists none."""
        environment = self.info.get("environment_info")
        defs = environment.get("tool_defs") if isinstance(environment, Mapping) else None
        if isinstance(defs, Mapping):
            return tuple(str(name) for name in defs)
        if isinstance(defs, list):
            return tuple(str(d["name"]) for d in defs if isinstance(d, Mapping) and isinstance(d.get("name"), str))
        return ()

    def numbered(self, number: Callable[[Rollout], Rollout]) -> TauResults:
        """This file with every rollout's trial from ``number`` (a numbering's: distinct from the earlier files'
        rollouts of the same task; :class:`prefix_exec.scoring.numbering.Numbering`), before anything keys on them."""
        return replace(self, rollouts=tuple(number(rollout) for rollout in self.rollouts))

    def with_provenance(self, provenance: Provenance, differing: tuple[str, ...] = ()) -> TauResults:
        """This file with every rollout's metadata naming the installed tau2 and task set; ``differing`` lists
        the task ids whose embedded definition differs from the installed one."""
        changed = {qualify(self.domain, task_id) for task_id in differing}
        rollouts = tuple(
            replace(
                rollout,
                metadata={
                    **rollout.metadata,
                    "tau2": provenance.to_json(),
                    "task_definition": "embedded (differs from installed)"
                    if rollout.task_id in changed
                    else "installed",
                },
            )
            for rollout in self.rollouts
        )
        return replace(self, rollouts=rollouts)


def read_results(
    path: str | Path,
    *,
    model: str | None = None,
    method: str | None = None,
    domain: str | None = None,
    trials: TrialRule = FROM_INPUT,
) -> TauResults:
    """Parse a tau2 results file. Broken structure raises :class:`InputError`; a broken simulation is skipped.

    Besides tau2's own layout, a bare JSON list of simulations is read (no ``info``, no ``tasks``: the model
    then comes from ``model`` and the tasks from the installed tau2). ``domain`` is for files that do not name
    theirs; one that names another domain is an error. A simulation without ``task_id`` is an input error, and
    one without a reward (``reward_info: null``, an infrastructure error) is unscorable; both are skipped with
    the reason, the others are read. ``trials``: where each simulation's trial is (its ``trial`` by default);
    a simulation whose trial cannot be read is skipped too.
    """
    text_path = str(path)
    data = _load_json(path)
    if isinstance(data, list):  # a bare list of simulations, as some harnesses write
        data = {"simulations": data}
    if not isinstance(data, Mapping) or not isinstance(data.get("simulations"), list):
        raise InputError(
            "not a tau2 results file: expected an object with 'info', 'tasks' and 'simulations', or a list of "
            "simulations",
            path=text_path,
            hint="pass the JSON file tau2 writes with --save-to (data/simulations/<name>.json)",
        )
    raw_info = data.get("info")
    info: JsonMapping = raw_info if isinstance(raw_info, Mapping) else {}
    domain, domain_note = _domain(info, domain, text_path)
    raw_agent = info.get("agent_info")
    agent: JsonMapping = raw_agent if isinstance(raw_agent, Mapping) else {}
    model = model or agent.get("llm")
    if not model:
        raise InputError(
            "the file does not name the agent model",
            path=text_path,
            field="info.agent_info.llm",
            hint="pass --model NAME",
        )
    method = method or str(agent.get("implementation") or "llm_agent")
    tasks = {str(t["id"]): t for t in data.get("tasks") or [] if isinstance(t, Mapping) and "id" in t}
    rollouts, skipped, raw = _read_simulations(
        data["simulations"], text_path, domain=domain, model=str(model), method=method, trials=trials
    )
    return TauResults(
        path=text_path,
        domain=domain,
        info=info,
        tasks=tasks,
        rollouts=rollouts,
        skipped=skipped,
        simulations=tuple(data["simulations"]),
        raw_simulations=raw,
        notes=(domain_note,) if domain_note else (),
        named_domain=_named_domain(info),
    )


def _load_json(path: str | Path) -> Any:
    """The parsed JSON of the file at ``path``; one that cannot be read or parsed raises :class:`InputError`."""
    text_path = str(path)
    if Path(path).exists():
        check_regular_file(Path(path))  # a FIFO or /dev/zero would block or fill memory
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read the results file: {exc.strerror or exc}", path=text_path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path=text_path, line=exc.lineno) from None
    except RecursionError:
        raise InputError("JSON nested too deep to read", path=text_path) from None
    except ValueError as exc:  # an integer past Python's 4,300-digit limit
        raise InputError(f"not usable JSON ({str(exc).split(';')[0]})", path=text_path) from None


def _domain(info: JsonMapping, given: str | None, text_path: str) -> tuple[str, str | None]:
    """The file's domain and what to say of it: ``given`` (``--domain``) when there is one, over the file's own
    ``info.environment_info.domain_name`` (the file's tool names then decide whether it is: :func:`prefix_exec.
    envs.tau.results.check_tools`); else the file's, a policy variant of a known domain
    (``airline_tighter_policy``, ``airline-relaxed``: the same tools and database) read as that domain. Naming
    neither raises :class:`InputError`."""
    named = _named_domain(info)
    if given:
        if named and named != given:
            return given, f"read as --domain {given} (the file says {named}); its tool names must be {given}'s"
        return given, None
    if not named:
        raise InputError(
            "the file does not say its domain",
            path=text_path,
            field="info.environment_info.domain_name",
            hint="pass --domain airline or --domain retail",
        )
    base = variant_of(named)
    return (named, None) if base is None else (base, variant_note(named))


def _named_domain(info: JsonMapping) -> str:
    environment = info.get("environment_info")
    return str((environment.get("domain_name") if isinstance(environment, Mapping) else None) or "")


def _read_simulations(
    simulations: Sequence[Any], text_path: str, *, domain: str, model: str, method: str, trials: TrialRule
) -> tuple[tuple[Rollout, ...], tuple[Skipped, ...], tuple[JsonMapping, ...]]:
    """The rollouts of the readable simulations, the others skipped with the reason, and the readable ones'
    simulation objects (``raw_simulations``, aligned with the rollouts)."""
    rollouts: list[Rollout] = []
    raw: list[JsonMapping] = []
    skipped: list[Skipped] = []
    for index, simulation in enumerate(simulations):
        where = f"{text_path}: simulations[{index}]"
        problem = _unscorable(simulation)
        if problem is not None:
            skipped.append(Skipped(where, problem))
            continue
        try:
            rollouts.append(
                rollout_of(simulation, domain=domain, model=model, method=method, read_from=text_path, trials=trials)
            )
        except TrialError as exc:
            skipped.append(Skipped(where, f"input error: {exc}"))
            continue
        except (KeyError, TypeError, ValueError) as exc:
            skipped.append(Skipped(where, f"unreadable simulation: {exc!r}"))
            continue
        raw.append(simulation)
    return tuple(rollouts), tuple(skipped), tuple(raw)


def _unscorable(simulation: Any) -> str | None:
    """Why a simulation cannot be scored at all, in words, or ``None``."""
    if not isinstance(simulation, Mapping):
        return f"input error: the simulation is not an object ({type(simulation).__name__})"
    if simulation.get("task_id") is None:
        return (
            "input error: field 'task_id' is missing, so the simulation cannot be matched to its task "
            "(some harnesses drop it; add the ids to the file)"
        )
    if simulation.get("reward_info") is None or not isinstance(simulation["reward_info"], Mapping):
        return "unscorable: reward_info is null (no reward recorded; tau2 writes this after an infrastructure error)"
    if simulation["reward_info"].get("reward") is None:
        return "unscorable: reward_info.reward is missing (no reward was recorded)"
    reward = simulation["reward_info"]["reward"]
    if isinstance(reward, bool) or not isinstance(reward, int | float) or not finite(reward):
        return f"input error: reward_info.reward must be a finite number, got {shown(reward)}"
    return None


def rollout_of(
    simulation: JsonMapping,
    *,
    domain: str,
    model: str,
    method: str,
    read_from: str = "",
    trials: TrialRule = FROM_INPUT,
) -> Rollout:
    """One simulation as a rollout (see the module docstring), its trial where ``trials`` says (the
    simulation's ``trial`` by default; none given: 0, ``trial_given`` False).

    Raises ``KeyError``, ``TypeError`` or ``ValueError`` when broken (a message or tool call that is not an
    object included; :class:`~prefix_exec.importers.trials.TrialError` for a trial that cannot be read).
    """
    actions, transcript = conversation_of(simulation)
    first_error = next((i for i, a in enumerate(actions, 1) if a.observation is not None and a.observation.error), None)
    reward = float((simulation.get("reward_info") or {})["reward"])
    rollout = Rollout(
        dataset=TAU3,
        task_id=qualify(domain, str(simulation["task_id"])),
        model=model,
        method=method,
        actions=actions,
        success=int(abs(reward - 1.0) <= REWARD_TOLERANCE),
        **trial_fields(trials.read(simulation)),
        transcript=transcript,
        metadata={
            "domain": domain,
            "simulation_id": simulation.get("id"),
            "termination_reason": simulation.get("termination_reason"),
            "reward": reward,
            "first_recorded_error": first_error,
            "source": Path(read_from).name if read_from else None,
        },
    )
    if simulation.get("termination_reason") == INFRASTRUCTURE_ERROR:  # tau2's own word for the system failing
        return mark(rollout, f"tau2 ended the simulation with termination_reason {INFRASTRUCTURE_ERROR}")
    return rollout


def conversation_of(simulation: JsonMapping) -> tuple[tuple[ToolCall, ...], tuple[JsonObject, ...]]:
    """The agent's calls (each with its recorded tool message as the observation) and the transcript of one
    simulation, whatever its identity and reward: what :func:`rollout_of` builds a rollout from, and what spec
    inference reads (:mod:`prefix_exec.inference`), which needs no task id. Raises as :func:`rollout_of` does."""
    messages = _messages(simulation)
    results = _replies(messages)
    actions: list[ToolCall] = []
    transcript: list[JsonObject] = []
    users = 0
    for index, message in enumerate(messages):
        role = message.get("role")
        transcript.append(_transcript_entry(message))
        if role == "user":
            users += 1
        if role != "assistant":
            continue
        for place, call in enumerate(message.get("tool_calls") or ()):
            if call.get("requestor", "assistant") != "assistant":
                continue
            actions.append(_action(call, results.get((index, place)), turn=max(users - 1, 0)))
    return tuple(actions), tuple(transcript)


def _replies(messages: Sequence[JsonMapping]) -> dict[tuple[int, int], JsonMapping]:
    """The tool message that answers each call, by ``(message index, place in its tool_calls)``: a tool message
    answers the oldest call with its id still waiting, as harnesses that reuse ids write them (whissle's runs
    name every call of a tool ``gem_<tool>_0``); a tool message no waiting call has the id of answers nothing."""
    waiting: dict[Any, list[tuple[int, int]]] = {}
    found: dict[tuple[int, int], JsonMapping] = {}
    for index, message in enumerate(messages):
        for place, call in enumerate(message.get("tool_calls") or ()):
            waiting.setdefault(_hashable(call.get("id")), []).append((index, place))
        if message.get("role") == "tool":
            calls = waiting.get(_hashable(message.get("id")))
            if calls:
                found[calls.pop(0)] = message
    return found


def _hashable(value: Any) -> Any:
    """An id as a dict key (an id that is a list or an object, in a malformed file, by its text)."""
    return value if isinstance(value, str | int | float | bool) or value is None else json.dumps(value, default=str)


def _messages(simulation: JsonMapping) -> list[JsonMapping]:
    """The simulation's messages; ``ValueError`` unless they are objects whose ``tool_calls`` are lists of objects."""
    messages = simulation["messages"]
    if not isinstance(messages, list):
        raise ValueError("'messages' is not a list")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ValueError(f"messages[{index}] is not an object: {message!r}")
        calls = message.get("tool_calls")
        if calls is not None and not (isinstance(calls, list) and all(isinstance(c, Mapping) for c in calls)):
            raise ValueError(f"messages[{index}].tool_calls is not a list of objects: {calls!r}")
    return messages


def _action(call: JsonMapping, recorded: JsonMapping | None, *, turn: int) -> ToolCall:
    """One assistant tool call with its ``recorded`` tool message (if any) as the observation. Arguments are read
    by :func:`importers.arguments.decode_arguments`: ones that are not a JSON object are kept as a parse error
    (an empty object replayed); ones nested too deep to check raise
    ``ValueError``, a call without a name ``KeyError``."""
    observation = None
    if recorded is not None:
        observation = Observation(content=recorded.get("content"), error=recorded.get("error"))
    arguments, parse_error = decode_arguments(call.get("arguments"))  # some writers keep JSON text
    deep = depth_error(arguments)
    if deep is not None:  # copying or checking it would exhaust the stack: the simulation is unreadable
        raise ValueError(f"tool call {call.get('id')!r} ({call.get('name')}): {deep}")
    return ToolCall(
        name=str(call["name"]),
        arguments=dict(arguments),
        call_id=call.get("id"),
        turn=turn,
        observation=observation,
        parse_error=parse_error,
    )


def _transcript_entry(message: JsonMapping) -> JsonObject:
    entry: JsonObject = {"role": message.get("role"), "content": message.get("content")}
    if message.get("tool_calls"):
        entry["tool_calls"] = [
            {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments")} for c in message["tool_calls"]
        ]
    if message.get("role") == "tool":
        entry["id"] = message.get("id")
        entry["error"] = message.get("error")
    return entry
