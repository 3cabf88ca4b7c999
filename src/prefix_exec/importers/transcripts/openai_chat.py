"""OpenAI Chat Completions messages, read into the common form (:mod:`.decoder`).

A record is ``{"messages": [...], "tools": [...]?, identity...}``. Each assistant ``tool_calls`` item
``{id, type: "function", function: {name, arguments}}`` is one call, in order (``arguments`` the model's JSON
text, or an object); a ``tool`` message answers the call its ``tool_call_id`` names. The legacy assistant
``function_call`` and ``function`` replies are read the same way (a reply without an id). Chat has no error
flag of its own; the ``error``, ``is_error`` and ``status`` harnesses put on a tool message are read
(:mod:`.tool_replies`), else a reply's error is ``None``. Calls and replies without ids (``null`` or ``""``)
are paired in order (:mod:`.decoder`). AgentDojo's own call form ``{function: NAME, args, id}`` is read too.
Calls of other types (hosted tools) are refused with the field named.

tau-bench's results (:mod:`.tau_bench`) hold the same messages under ``traj``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefix_exec.importers.transcripts.decoder import Call, Fail, Message, Reply
from prefix_exec.importers.transcripts.tool_replies import call_id, echoed_call, recorded_error
from prefix_exec.json_types import JsonMapping

NAME = "openai-chat"
LABEL = "OpenAI Chat"


def read(record: JsonMapping, fail: Fail) -> list[Message]:
    """The record's ``messages`` in the common form."""
    return read_messages(record, fail, key="messages")


def read_messages(record: JsonMapping, fail: Fail, *, key: str) -> list[Message]:
    """The Chat messages found under ``key`` of the record, in the common form."""
    raw = record.get(key)
    if not isinstance(raw, list):
        raise fail(key, "missing" if raw is None else f"expected a list, got {type(raw).__name__}")
    messages: list[Message] = []
    for index, message in enumerate(raw):
        at = f"{key}[{index}]"
        if not isinstance(message, Mapping):
            raise fail(at, f"expected a message object, got {type(message).__name__}")
        role = message.get("role")
        if role == "assistant":
            messages.append(Message("assistant", message.get("content"), tuple(_calls(message, at, fail)), where=at))
        elif role == "tool":
            messages.append(Message("tool", replies=(_reply(message, at, fail),), where=at))
        elif role == "function":
            name = message.get("name")
            echo = (name, None) if isinstance(name, str) and name else None
            content, error, _ = recorded_error(message, at, fail)
            messages.append(Message("tool", replies=(Reply(None, content, at, error, echo=echo),), where=at))
        elif isinstance(role, str):
            messages.append(Message(role, message.get("content"), where=at))
        else:
            raise fail(f"{at}.role", f"expected a string, got {type(role).__name__}")
    return messages


def _reply(message: JsonMapping, at: str, fail: Fail) -> Reply:
    """A ``tool`` message: the call it answers (``tool_call_id``; absent, ``null`` or ``""``: by position), its
    content and the error beside it (:mod:`.tool_replies`), and the call it echoes (``tool_call``)."""
    where = f"{at}.tool_call_id"
    answered = call_id(message.get("tool_call_id"), where, fail, what="a tool_call_id")
    content, error, _ = recorded_error(message, at, fail)
    return Reply(answered, content, where if answered else at, error, echo=echoed_call(message.get("tool_call")))


def _calls(message: JsonMapping, at: str, fail: Fail) -> list[Call]:
    tool_calls = message.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise fail(f"{at}.tool_calls", f"expected a list, got {type(tool_calls).__name__}")
    calls = [tool_call(call, f"{at}.tool_calls[{k}]", fail) for k, call in enumerate(tool_calls)]
    legacy = message.get("function_call")
    if legacy is not None:
        calls.append(function_call(legacy, None, f"{at}.function_call", fail))
    return calls


def tool_call(call: Any, where: str, fail: Fail) -> Call:
    """One ``tool_calls`` item ``{id, type: "function", function: {name, arguments}}``."""
    if not isinstance(call, Mapping):
        raise fail(where, f"expected a tool call object, got {type(call).__name__}")
    if call.get("type", "function") != "function":
        raise fail(f"{where}.type", f"only function calls are read, got {call.get('type')!r:.40}")
    named = call_id(call.get("id"), f"{where}.id", fail, what="a call id")
    function = call.get("function")
    if isinstance(function, str) and function:  # AgentDojo's own form: {function: name, args, id}
        return Call(function, call.get("args"), named, f"{where}.function")
    return function_call(function, named, f"{where}.function", fail)


def function_call(function: Any, call_id: str | None, where: str, fail: Fail) -> Call:
    """``{name, arguments}``, the function of a tool call (or a legacy ``function_call``)."""
    if not isinstance(function, Mapping):
        raise fail(where, f"expected an object with name and arguments, got {type(function).__name__}")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise fail(f"{where}.name", f"a tool call needs a name, got {name!r:.60}")
    return Call(name, function.get("arguments"), call_id, where)
