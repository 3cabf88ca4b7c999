"""OpenAI-format transcripts as rollouts: one rollout per conversation.

Input: JSONL with one conversation per line, or a ``.json`` file holding one conversation or a list of them.
A conversation is an object with

- ``messages``: Chat Completions messages. Each assistant ``tool_calls`` item
  ``{id, type: "function", function: {name, arguments}}`` is one action, in order; ``arguments`` is the model's
  JSON string (an object is taken as it is). A ``tool`` message answers the call whose ``id`` its
  ``tool_call_id`` names and becomes that action's observation. The legacy assistant ``function_call`` and
  ``function`` replies are read the same way. The turn of an action is the number of user messages before it,
  less one (0-based, 0 before the first).
- optionally ``tools``: the OpenAI tools list offered, the spec when no ``--tools`` is given.
- the rollout's identity, read by :class:`Identity` from dotted paths (``metadata.task_id``) or fixed values.

Arguments that are not JSON, or not a JSON object, are model output: the action keeps a ``parse_error`` and
replay rejects it as ``schema``. A malformed conversation (no messages, a tool call without a name, a reply to
no call, a missing task id or success) is an :class:`InputError` naming the file, the line (JSONL) or record
(``[3]`` in a JSON list) and the field; it loses that conversation only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_exec.arguments import decode_arguments
from prefix_exec.errors import InputError
from prefix_exec.jsonl import MAX_LINE_CHARS, check_regular_file, iter_json_lines, loads
from prefix_exec.trajectory import Observation, Rollout, ToolCall

#: ``fail(field, message, hint=None)``: an InputError at a field of the conversation being read.
Fail = Callable[..., InputError]
#: Largest ``.json`` transcript file read whole, in characters; JSONL files are read line by line.
MAX_JSON_CHARS = 4 * MAX_LINE_CHARS
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


@dataclass(frozen=True)
class Identity:
    """How a conversation's dataset, task id, model, method, trial and success are found.

    ``paths`` maps a field to the dotted path the user named (then that path must be present), ``values`` a
    field to a fixed value (``--model``); other fields follow :data:`DEFAULT_PATHS`, with ``defaults`` for the
    ones that may be absent (``method``, ``trial``, ``dataset``).
    """

    paths: Mapping[str, str]
    values: Mapping[str, Any]
    defaults: Mapping[str, Any]


@dataclass(frozen=True)
class Conversation:
    """One conversation read: the rollout, the tools list it offered (``None`` when it has none) and
    where it came from (``path``, ``line`` for JSONL, ``prefix`` such as ``[3].`` in a JSON list)."""

    rollout: Rollout
    tools: Any
    path: str
    line: int | None
    prefix: str


def read_conversations(path: str | Path, identity: Identity, *, tolerant: bool) -> Iterator[Conversation | InputError]:
    """Every conversation of one file, in order; with ``tolerant`` a bad one is yielded as its error."""
    p = Path(path)
    for line, prefix, data in _documents(p, tolerant=tolerant):
        try:
            if isinstance(data, InputError):
                raise data
            yield conversation_of(data, identity, path=str(p), line=line, prefix=prefix)
        except InputError as exc:
            if not tolerant:
                raise
            yield exc


def _documents(path: Path, *, tolerant: bool) -> Iterator[tuple[int | None, str, Any]]:
    if path.suffix != ".json":
        for number, data in iter_json_lines(path, tolerant=tolerant):
            yield number, "", data
        return
    check_regular_file(path)
    with path.open(encoding="utf-8") as fh:
        text = fh.read(MAX_JSON_CHARS + 1)
    if len(text) > MAX_JSON_CHARS:
        raise InputError(
            f"larger than {MAX_JSON_CHARS:,} characters",
            path=path,
            hint="write it as JSONL, one conversation per line (jq -c '.[]' in.json > in.jsonl)",
        )
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg} at column {exc.colno})", path=path, line=exc.lineno) from None
    except ValueError as exc:
        raise InputError(f"not usable JSON ({exc})", path=path) from None
    if isinstance(data, list):
        for index, item in enumerate(data):
            yield None, f"[{index}].", item
    else:
        yield None, "", data


def conversation_of(
    data: Any, identity: Identity, *, path: str, line: int | None = None, prefix: str = ""
) -> Conversation:
    """One conversation object as a rollout (see the module docstring). Raises :class:`InputError`."""

    def fail(field: str, message: str, hint: str | None = None) -> InputError:
        return InputError(message, path=path, line=line, field=(prefix + field).rstrip(".") or None, hint=hint)

    if not isinstance(data, Mapping):
        raise fail("", f"expected a conversation object, got {type(data).__name__}")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise fail("messages", "missing" if messages is None else f"expected a list, got {type(messages).__name__}")
    actions = _actions(messages, fail)
    values = {name: _identity(data, identity, name, fail) for name in DEFAULT_PATHS}
    success = _success(values["success"], fail, identity)
    trial = values["trial"]  # None: the conversation names none (Rollout.trial_given)
    if trial is not None and (not isinstance(trial, int) or isinstance(trial, bool) or trial < 0):
        raise fail(identity.paths.get("trial", "trial"), f"a trial must be an integer >= 0, got {trial!r:.60}")
    for name in ("task_id", "model", "method", "dataset"):
        if not isinstance(values[name], (str, int)) or isinstance(values[name], bool) or values[name] == "":
            field = identity.paths.get(name, name)
            raise fail(field, f"{name} must be a non-empty string or an integer, got {values[name]!r:.60}")
    where = f"{Path(path).name}:{line}" if line is not None else f"{Path(path).name}{prefix.rstrip('.')}"
    rollout = Rollout(
        dataset=str(values["dataset"]),
        task_id=str(values["task_id"]),
        model=str(values["model"]),
        method=str(values["method"]),
        actions=tuple(actions),
        success=success,
        trial=trial or 0,
        trial_given=trial is not None,
        metadata={"source": where},
    )
    return Conversation(rollout, data.get("tools"), path, line, prefix)


def _identity(data: Mapping[str, Any], identity: Identity, name: str, fail: Fail) -> Any:
    if name in identity.values:
        return identity.values[name]
    named = identity.paths.get(name)
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
        hint=f"name the field with {FIELD_OPTIONS[name]} PATH (a dotted path such as metadata.{name})",
    )


def lookup(data: Any, dotted: str) -> tuple[bool, Any]:
    """``(found, value)`` at a dotted path; a numeric part indexes a list (``scores.0.value``)."""
    node = data
    for part in dotted.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def _success(value: Any, fail: Fail, identity: Identity) -> int:
    if isinstance(value, bool) or (isinstance(value, (int, float)) and value in (0, 1)):
        return int(value)
    field = identity.paths.get("success", "success")
    raise fail(
        field,
        f"success must be 0, 1, true or false, got {value!r:.60}",
        hint="--success-field names a 0/1 or true/false field of the conversation",
    )


def _actions(messages: Sequence[Any], fail: Fail) -> list[ToolCall]:
    """The assistant's calls in order, each with the tool reply that answers it (see the module docstring)."""
    calls: list[dict[str, Any]] = []  # ToolCall fields, observations filled in as replies come
    by_id: dict[str, int] = {}
    users = 0
    for index, message in enumerate(messages):
        at = f"messages[{index}]"
        if not isinstance(message, Mapping):
            raise fail(at, f"expected a message object, got {type(message).__name__}")
        role = message.get("role")
        if role == "user":
            users += 1
        elif role == "assistant":
            tool_calls = message.get("tool_calls") or []
            if not isinstance(tool_calls, list):
                raise fail(f"{at}.tool_calls", f"expected a list, got {type(tool_calls).__name__}")
            for k, call in enumerate(tool_calls):
                where = f"{at}.tool_calls[{k}]"
                if not isinstance(call, Mapping):
                    raise fail(where, f"expected a tool call object, got {type(call).__name__}")
                if call.get("type", "function") != "function":
                    raise fail(f"{where}.type", f"only function calls are read, got {call.get('type')!r:.40}")
                fields = _call(call.get("function"), f"{where}.function", fail, turn=max(users - 1, 0))
                call_id = call.get("id")
                if call_id is not None:
                    if not isinstance(call_id, str) or call_id in by_id:
                        raise fail(f"{where}.id", f"a call id must be a unique string, got {call_id!r:.60}")
                    by_id[call_id] = len(calls)
                    fields["call_id"] = call_id
                calls.append(fields)
            legacy = message.get("function_call")
            if legacy is not None:
                calls.append(_call(legacy, f"{at}.function_call", fail, turn=max(users - 1, 0)))
                calls[-1]["legacy"] = True
        elif role == "tool":
            target = message.get("tool_call_id")
            if target not in by_id:
                raise fail(f"{at}.tool_call_id", f"no earlier tool call has the id {target!r:.60}")
            calls[by_id[target]]["observation"] = Observation(content=message.get("content"))
        elif role == "function":
            pending = [c for c in calls if c.get("legacy") and "observation" not in c]
            if not pending:
                raise fail(at, "a function reply without an earlier function_call")
            pending[-1]["observation"] = Observation(content=message.get("content"))
        elif not isinstance(role, str):
            raise fail(f"{at}.role", f"expected a string, got {type(role).__name__}")
    for fields in calls:
        fields.pop("legacy", None)
    return [ToolCall(**fields) for fields in calls]


def _call(function: Any, where: str, fail: Fail, *, turn: int) -> dict[str, Any]:
    if not isinstance(function, Mapping):
        raise fail(where, f"expected an object with name and arguments, got {type(function).__name__}")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise fail(f"{where}.name", f"a tool call needs a name, got {name!r:.60}")
    fields: dict[str, Any] = {"name": name, "turn": turn}
    fields["arguments"], problem = decode_arguments(function.get("arguments"))
    if problem is not None:
        raw = function.get("arguments")
        fields.update(raw=raw if isinstance(raw, str) else json.dumps(raw)[:10_000], parse_error=problem)
    return fields


def tools_digest(tools: Any) -> str:
    """16 hex digits naming a tools list by its content (records say which list served as the spec)."""
    return hashlib.sha256(json.dumps(tools, sort_keys=True, default=str).encode()).hexdigest()[:16]
