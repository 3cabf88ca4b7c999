"""LangChain message dicts (``langchain_core.messages.messages_to_dict``), read into the common form.

A record is ``{"messages": [{"type", "data"}, ...], "tools": [...]?, identity...}``, each message as
``messages_to_dict`` writes it:

- ``ai``: ``data.tool_calls`` ``[{name, args, id}]`` are the calls (``args`` an object), and
  ``data.invalid_tool_calls`` ``[{name, args, id, error}]`` the calls LangChain could not parse (``args``
  the model's text): calls with a ``parse_error``, a ``schema`` failure in replay. Both lists are put in the
  order of ``additional_kwargs.tool_calls`` when that names every call (LangChain splits them by validity).
  A message written before LangChain had ``tool_calls`` is read from ``additional_kwargs.tool_calls``
  (OpenAI form);
- ``tool``: the reply to ``data.tool_call_id``; ``data.status`` (``success`` or ``error``) is its error flag
  (``None`` when absent);
- ``function``: a legacy function reply (no id); ``human``, ``system``, ``chat`` (``data.role``): what was said.

The ``...MessageChunk`` types read as their message types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefix_exec.importers.transcripts.decoder import (
    Call,
    Fail,
    Message,
    Reply,
    message_objects,
    optional_text_field,
    text_field,
)
from prefix_exec.importers.transcripts.openai_chat import tool_call
from prefix_exec.json_types import JsonMapping

NAME = "langchain"
LABEL = "LangChain message dicts"
#: LangChain's message types and the role each reads as (``None``: the message's own ``data.role``).
ROLES: Mapping[str, str | None] = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "developer": "developer",
    "tool": "tool",
    "function": "tool",
    "chat": None,
}
#: Chunk types as ``messages_to_dict`` writes them, and the message type each is.
CHUNKS: Mapping[str, str] = {
    "HumanMessageChunk": "human",
    "AIMessageChunk": "ai",
    "SystemMessageChunk": "system",
    "ToolMessageChunk": "tool",
    "FunctionMessageChunk": "function",
    "ChatMessageChunk": "chat",
}
#: Name of a call LangChain could not parse when it kept no name either.
UNNAMED = "<unparsed>"


def shows(message: Any) -> bool:
    """Whether one message is LangChain's dict form (``type`` and a ``data`` object, no ``role``)."""
    return isinstance(message, Mapping) and "role" not in message and isinstance(message.get("data"), Mapping)


def read(record: JsonMapping, fail: Fail) -> list[Message]:
    """The record's ``messages`` in the common form."""
    messages: list[Message] = []
    for at, item in message_objects(record, fail):
        data = item.get("data")
        if not isinstance(data, Mapping):
            raise fail(f"{at}.data", f"expected an object, got {type(data).__name__}")
        kind = item.get("type")
        if not isinstance(kind, str) or CHUNKS.get(kind, kind) not in ROLES:
            raise fail(
                f"{at}.type",
                f"not a LangChain message type: {kind!r:.40}",
                hint=f"expected one of {', '.join(ROLES)} (as messages_to_dict writes them)",
            )
        kind = CHUNKS.get(kind, kind)
        content = data.get("content")
        if kind == "ai":
            messages.append(Message("assistant", content, tuple(_calls(data, f"{at}.data", fail)), where=at))
        elif kind == "tool":
            where = f"{at}.data.tool_call_id"
            call_id = text_field(data.get("tool_call_id"), where, fail, what="a tool_call_id")
            reply = Reply(call_id, content, where, error=_status(data.get("status"), f"{at}.data.status", fail))
            messages.append(Message("tool", replies=(reply,), where=at))
        elif kind == "function":
            messages.append(Message("tool", replies=(Reply(None, content, at),), where=at))
        else:
            role = ROLES[kind] or text_field(data.get("role"), f"{at}.data.role", fail, what="a chat message's role")
            messages.append(Message(role, content, where=at))
    return messages


def _status(value: Any, where: str, fail: Fail) -> bool | None:
    if value is None:
        return None
    if value not in ("success", "error"):
        raise fail(where, f"expected 'success' or 'error', got {value!r:.40}")
    return bool(value == "error")


def _calls(data: JsonMapping, at: str, fail: Fail) -> list[Call]:
    valid, invalid = data.get("tool_calls"), data.get("invalid_tool_calls")
    extra = data.get("additional_kwargs")
    openai_calls = extra.get("tool_calls") if isinstance(extra, Mapping) else None
    if valid is None and invalid is None:
        if not openai_calls:
            return []
        where = f"{at}.additional_kwargs.tool_calls"
        if not isinstance(openai_calls, list):
            raise fail(where, f"expected a list, got {type(openai_calls).__name__}")
        return [tool_call(call, f"{where}[{k}]", fail) for k, call in enumerate(openai_calls)]
    calls: list[Call] = []
    for key, items in (("tool_calls", valid), ("invalid_tool_calls", invalid)):
        if items is None:
            continue
        if not isinstance(items, list):
            raise fail(f"{at}.{key}", f"expected a list, got {type(items).__name__}")
        calls.extend(_call(call, f"{at}.{key}[{k}]", fail, invalid=key != "tool_calls") for k, call in enumerate(items))
    return _in_model_order(calls, openai_calls)


def _call(call: Any, where: str, fail: Fail, *, invalid: bool) -> Call:
    if not isinstance(call, Mapping):
        raise fail(where, f"expected a tool call object, got {type(call).__name__}")
    call_id = optional_text_field(call.get("id"), f"{where}.id", fail, what="a call id")
    if not invalid:
        name = text_field(call.get("name"), f"{where}.name", fail, what="a tool name")
        return Call(name, call.get("args"), call_id, where)
    name = optional_text_field(call.get("name"), f"{where}.name", fail, what="a tool name") or UNNAMED
    error = call.get("error")
    reason = f"LangChain could not parse the call: {error}" if isinstance(error, str) and error else None
    return Call(name, call.get("args"), call_id, where, parse_error=reason or "LangChain could not parse the call")


def _in_model_order(calls: list[Call], openai_calls: Any) -> list[Call]:
    """``calls`` in the order the model made them, when ``additional_kwargs.tool_calls`` names them all."""
    if not isinstance(openai_calls, list) or len(calls) < 2:
        return calls
    order = {c["id"]: k for k, c in enumerate(openai_calls) if isinstance(c, Mapping) and isinstance(c.get("id"), str)}
    if not all(c.call_id is not None and c.call_id in order for c in calls):
        return calls
    return sorted(calls, key=lambda c: order[c.call_id or ""])
