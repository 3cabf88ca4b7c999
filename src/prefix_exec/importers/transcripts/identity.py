"""A transcript's identity (dataset, task id, model, method, trial) and its final success Y, read from the
record by dotted paths, whatever the transcript format.

The user names paths (``--task-id-field metadata.task``) or fixed values (``--model``); other fields follow
:data:`DEFAULT_PATHS`, the first present wins. A composite identity names several paths, comma-separated, whose
values are joined with ``/`` (``--task-id-field metadata.suite_name,metadata.name`` -> ``slack/user_task_3``:
AgentDojo's task names repeat across its suites, and would otherwise pool different tasks as trials of one).
Y is 0/1 or true/false; a format whose Y is a reward (tau-bench) reads it by the tau rule instead: 1 when the
reward is 1 within :data:`REWARD_TOLERANCE`, else 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prefix_exec.importers.transcripts.decoder import Fail
from prefix_exec.importers.trials import TrialError, lookup, trial_number
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.records.values import finite

#: Where each identity field is looked for when the user names no path: the first present wins.
DEFAULT_PATHS: Mapping[str, tuple[str, ...]] = {
    "task_id": ("task_id", "metadata.task_id", "id"),
    "model": ("model", "metadata.model"),
    "method": ("method", "metadata.method"),
    "success": ("success", "metadata.success", "reward", "metadata.reward"),
    "trial": ("trial", "metadata.trial"),
    "dataset": ("dataset", "metadata.dataset"),
}
#: The option that names each field's path, for hints.
FIELD_OPTIONS: Mapping[str, str] = {
    "task_id": "--task-id-field",
    "model": "--model-field or --model",
    "method": "--method-field or --method",
    "success": "--success-field",
    "trial": "--trial-field",
    "dataset": "--dataset",
}
#: A reward within this of 1 is a success (tau-bench's and tau2's rule).
REWARD_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Identity:
    """How a conversation's dataset, task id, model, method, trial and success are found.

    ``paths`` maps a field to the dotted path the user named (then that path must be present), ``values`` a
    field to a fixed value (``--model``); other fields follow :data:`DEFAULT_PATHS`, with ``defaults`` for the
    ones that may be absent (``method``, ``trial``, ``dataset``; a ``None`` default: absent stays ``None``).
    """

    paths: Mapping[str, str]
    values: JsonMapping
    defaults: JsonMapping


def identity_fields(data: JsonMapping, identity: Identity, fail: Fail, *, reward: bool = False) -> JsonObject:
    """``dataset``, ``task_id``, ``model``, ``method`` (strings), ``trial`` (int >= 0, or ``None`` when the
    record names none: the rollout then says its trial was not given, :mod:`importers.trials`) and ``success``
    (0/1; ``None`` when the record has none and the identity's default for it is ``None``: Y absent, as traces
    without ``--success-field`` have it) of one record. ``reward``: Y is a number read by the tau rule. Raises the
    InputError ``fail`` makes."""
    values = {name: _value(data, identity, name, fail) for name in DEFAULT_PATHS}
    if values["success"] is not None or "success" not in identity.defaults:
        values["success"] = _success(values["success"], fail, identity, reward=reward)
    trial = values["trial"]
    if trial is not None:
        try:
            trial_number(trial, identity.paths.get("trial", "trial"))
        except TrialError as bad:
            raise fail(bad.field, bad.message) from None
    for name in ("task_id", "model", "method", "dataset"):
        if not isinstance(values[name], (str, int)) or isinstance(values[name], bool) or values[name] == "":
            field = identity.paths.get(name, name)
            raise fail(field, f"{name} must be a non-empty string or an integer, got {values[name]!r:.60}")
        values[name] = str(values[name])
    return values


def _value(data: JsonMapping, identity: Identity, name: str, fail: Fail) -> Any:
    if name in identity.values:
        return identity.values[name]
    named = identity.paths.get(name)
    if named and "," in named:
        return _composite(data, named, name, fail)
    for dotted in (named,) if named else DEFAULT_PATHS[name]:
        found, value = lookup(data, dotted)
        if found and value is not None:
            return value
    if named:  # a path the user named must be there, default or not
        raise fail(named, "missing", hint=f"{FIELD_OPTIONS[name]} names where the conversation holds its {name}")
    if name in identity.defaults:
        return identity.defaults[name]
    raise fail(
        DEFAULT_PATHS[name][0],
        f"no {name}: the conversation has none of {', '.join(DEFAULT_PATHS[name])}",
        hint=f"name the field with {FIELD_OPTIONS[name]} PATH (a dotted path such as metadata.{name})"
        if name != "model"
        else "give the model's name with --model NAME, or name the field with --model-field PATH",
    )


def _composite(data: JsonMapping, named: str, name: str, fail: Fail) -> str:
    """The values at each of the comma-separated paths ``named``, joined with ``/``
    (``metadata.suite_name,metadata.name`` -> ``slack/user_task_3``): each must be present, a string or an
    integer."""
    parts: list[str] = []
    for dotted in (part.strip() for part in named.split(",")):
        found, value = lookup(data, dotted) if dotted else (False, None)
        if not found or value is None:
            raise fail(dotted or named, "missing", hint=f"{FIELD_OPTIONS[name]} {named} needs every path present")
        if not isinstance(value, (str, int)) or isinstance(value, bool) or value == "":
            raise fail(dotted, f"a part of the {name} must be a non-empty string or an integer, got {value!r:.60}")
        parts.append(str(value))
    return "/".join(parts)


def _success(value: Any, fail: Fail, identity: Identity, *, reward: bool) -> int:
    if isinstance(value, bool) or (isinstance(value, (int, float)) and value in (0, 1)):
        return int(value)
    if reward and isinstance(value, int | float) and finite(value):  # not nan, ±inf or an int past 1e308
        return int(abs(value - 1.0) <= REWARD_TOLERANCE)
    field = identity.paths.get("success", "success")
    if reward:
        raise fail(
            field, f"a reward must be a finite number, got {value!r:.60}", hint="tau-bench writes 'reward': 0.0 or 1.0"
        )
    raise fail(
        field,
        f"success must be 0, 1, true or false, got {value!r:.60}",
        hint="--success-field names a 0/1 or true/false field of the conversation",
    )
