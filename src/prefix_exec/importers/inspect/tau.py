"""inspect_evals' tau2 samples (``inspect_evals/tau2_airline``, ``tau2_retail``) as tau2 results-file simulations.

inspect_evals plays tau2 with two conversations. The sample's own ``messages`` are the *user simulator's* (the
simulated customer is inspect's assistant there, and the agent's replies arrive flipped into user messages);
the agent's conversation, with its tool calls and the tools' replies, is kept in the sample's store under
``StoredAgentState:<instance>:messages`` (``instance`` from the sample's metadata, ``AirlineAgent`` or
``RetailAgent``). Each sample also embeds its tau2 task definition (``metadata["task"]``).

:func:`tau_results` turns a log into what :func:`prefix_exec.importers.tau.read_results` gives for a results
file: each sample becomes a tau2 simulation (the agent's messages in tau2's shape: a tool message carries the id
it answers, its text, and ``error`` when inspect recorded a tool error, with inspect's error message as its
content), read by the native importer's :func:`~prefix_exec.importers.tau.rollout_of`, with the embedded tasks
alongside. So replay, labels, the information check and the DB regrade are the native ones. ``reward_info``
holds only the reward: Y is the log's score (airline and retail: inspect_evals' DB match and communicated
info). A tool call id that an earlier message already used gets a ``~<n>`` suffix (some servers reuse ids;
tau2's files never do), so every reply stays with its own call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from prefix_exec.envs.tau.pooled import INSPECT_TASK_PREFIX, inspect_domain, variant_note
from prefix_exec.importers.inspect.log import InspectLog, InspectSample, Message, normalize_messages, provenance
from prefix_exec.importers.tau import TauResults, rollout_of
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.trajectory import Rollout, Skipped

_STORE = "StoredAgentState:{instance}:messages"


def tau_results(log: InspectLog, *, model: str, method: str) -> TauResults:
    """Every sample of a tau2 log as one results file's simulations. ``log.task`` names the domain as
    :func:`prefix_exec.envs.tau.pooled.inspect_domain` reads it (``tau2_airline``; a policy variant's task,
    ``tau2_airline_tighter_policy``, is read as its domain, with a note): a task of no known domain is a
    ``ValueError`` (the caller asks :func:`~prefix_exec.envs.tau.pooled.inspect_domain` first)."""
    domain = inspect_domain(log.task)
    if domain is None:
        raise ValueError(f"inspect task {log.task!r} is not a tau2 task of airline or retail")
    named = log.task.removeprefix(INSPECT_TASK_PREFIX)
    note = variant_note(named)
    tasks: dict[str, JsonMapping] = {}
    rollouts: list[Rollout] = []
    raw: list[JsonMapping] = []
    skipped: list[Skipped] = []
    for sample in log.samples:
        if sample.unscorable:
            skipped.append(Skipped(sample.where, sample.unscorable))
            continue
        built = simulation_of(sample)
        if isinstance(built, Skipped):
            skipped.append(built)
            continue
        simulation, task, parse_errors = built
        tasks.setdefault(str(task["id"]), task)
        try:
            rollout = rollout_of(simulation, domain=domain, model=model, method=method, read_from=log.path)
        except (KeyError, TypeError, ValueError) as exc:
            skipped.append(Skipped(sample.where, f"unreadable sample: {exc!r}"))
            continue
        actions = tuple(
            replace(a, parse_error=parse_errors[a.call_id]) if a.call_id in parse_errors else a for a in rollout.actions
        )
        metadata = {**rollout.metadata, **provenance(log, sample)}
        rollouts.append(replace(rollout, actions=actions, metadata=metadata))
        raw.append(simulation)
    return TauResults(
        path=log.path,
        domain=domain,
        info={
            "agent_info": {"llm": model, "implementation": method},
            "environment_info": {"domain_name": named},
        },
        tasks=tasks,
        rollouts=tuple(rollouts),
        skipped=tuple(skipped),
        simulations=tuple(raw),
        raw_simulations=tuple(raw),
        notes=(note,) if note is not None else (),
        named_domain=named,
    )


def simulation_of(sample: InspectSample) -> tuple[JsonObject, JsonMapping, dict[str, str]] | Skipped:
    """(tau2 simulation, embedded task, inspect's parse errors by call id) of one sample, or why not."""
    task = sample.metadata.get("task")
    instance = sample.metadata.get("instance")
    if not isinstance(task, Mapping) or task.get("id") is None or not isinstance(instance, str):
        return Skipped(
            sample.where,
            "input error: not an inspect_evals tau2 sample (its metadata needs 'task' with an 'id', and 'instance')",
        )
    key = _STORE.format(instance=instance)
    stored = sample.store.get(key)
    if not isinstance(stored, list):
        return Skipped(
            sample.where,
            f"input error: the sample's store has no agent conversation ({key}); the agent's tool calls live "
            "there (was the log written without the store?)",
        )
    try:
        messages = list(normalize_messages(stored))
    except ValueError as exc:  # pydantic's ValidationError: a stored message inspect itself cannot read
        return Skipped(sample.where, f"input error: {key} holds a message inspect cannot read: {exc}")
    converted, parse_errors = _tau2_messages(messages)
    simulation = {
        "id": f"{sample.id}#{sample.epoch}",
        "task_id": str(task["id"]),
        "trial": sample.trial,
        "messages": converted,
        "reward_info": {"reward": float(sample.y or 0)},
        "termination_reason": "inspect",
    }
    return simulation, task, parse_errors


def _tau2_messages(messages: list[Message]) -> tuple[list[JsonObject], dict[str, str]]:
    """The agent's conversation in tau2's message shape (system prompt left out, as tau2's files do)."""
    converted: list[JsonObject] = []
    parse_errors: dict[str, str] = {}
    used: set[str] = set()
    local: dict[str, str] = {}
    for message in messages:
        if message.role == "assistant":
            local = {}
            calls = []
            for call in message.calls:
                original = call.id or f"call{len(used)}"
                unique = original
                while unique in used:
                    unique = f"{original}~{len(used)}"
                used.add(unique)
                local.setdefault(original, unique)
                if call.parse_error:
                    parse_errors[unique] = f"inspect could not parse the arguments: {call.parse_error}"
                calls.append(
                    {"id": unique, "name": call.name, "arguments": dict(call.arguments), "requestor": "assistant"}
                )
            converted.append({"role": "assistant", "content": message.text or None, "tool_calls": calls or None})
        elif message.role == "tool":
            answered = local.get(message.tool_call_id or "", message.tool_call_id)
            failed = message.error is not None
            converted.append(
                {
                    "role": "tool",
                    "id": answered,
                    "content": message.error if failed else message.text,
                    "error": failed,
                    "requestor": "assistant",
                }
            )
        elif message.role == "user":
            converted.append({"role": "user", "content": message.text})
    return converted, parse_errors
