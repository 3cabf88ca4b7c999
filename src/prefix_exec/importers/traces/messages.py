"""The message and tool-list shapes trace dialects use, put in OpenAI Chat form (:mod:`.spans`).

- :func:`from_parts`: the GenAI conventions' messages, ``{"role", "parts": [{"type": "text", "content"},
  {"type": "tool_call", "id", "name", "arguments"}, {"type": "tool_call_response", "id", "response"|"result"}]}``
  (a tool message becomes one Chat ``tool`` message per response part);
- :func:`instructions`: ``gen_ai.system_instructions``, a list of parts, as one system message;
- :func:`from_openinference`: OpenInference's ``{"message": {"role", "content", "contents", "tool_calls":
  [{"tool_call": {"id", "function": {"name", "arguments"}}}], "tool_call_id"}}`` items;
- :func:`from_legacy`: the older GenAI attributes ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``
  (``role``, ``content``, ``tool_calls.K.{id,name,arguments}``, ``tool_call_id``);
- :func:`chat_list`: Chat messages as a framework logged them (kept as they are; an item that is not an object
  is dropped: the span says what was sent, and the decoder checks each field it reads);
- :func:`tool_list`: a tools list in any of the dialects' forms (OpenAI ``{"type": "function", "function"}``,
  the flat ``{"type": "function", "name", "parameters"}``, ``{"name", "input_schema"}``) as an OpenAI tools array.

Every function takes the parsed attribute value and returns a tuple, or ``None`` when the value is not a list:
a dialect then says the span carries no messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefix_exec.importers.traces.attributes import json_text
from prefix_exec.json_types import JsonObject, JsonValue

#: Most messages read from one span.
MAX_MESSAGES = 10_000


def _items(value: JsonValue) -> list[Any] | None:
    value = json_text(value)
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        value = value["messages"]
    return value[:MAX_MESSAGES] if isinstance(value, list) else None


def chat_list(value: JsonValue) -> tuple[JsonObject, ...] | None:
    """Chat messages as logged (module docstring)."""
    items = _items(value)
    return None if items is None else tuple(dict(m) for m in items if isinstance(m, Mapping))


def _call(call_id: JsonValue, name: JsonValue, arguments: JsonValue) -> JsonObject:
    if not isinstance(arguments, str) and arguments is not None:
        arguments = json_text(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def from_parts(value: JsonValue) -> tuple[JsonObject, ...] | None:
    """GenAI messages with ``parts`` (module docstring); a message without ``parts`` is read as Chat."""
    items = _items(value)
    if items is None:
        return None
    out: list[JsonObject] = []
    for message in items:
        if not isinstance(message, Mapping):
            continue
        parts = message.get("parts")
        if not isinstance(parts, list):
            out.append(dict(message))
            continue
        role = message.get("role")
        texts = [p.get("content") for p in parts if isinstance(p, Mapping) and p.get("type") == "text"]
        content = "\n".join(t for t in texts if isinstance(t, str)) if texts else None
        calls = [
            _call(p.get("id"), p.get("name"), p.get("arguments"))
            for p in parts
            if isinstance(p, Mapping) and p.get("type") == "tool_call"
        ]
        replies = [p for p in parts if isinstance(p, Mapping) and p.get("type") == "tool_call_response"]
        for reply in replies:
            result = reply.get("response", reply.get("result"))
            out.append({"role": "tool", "tool_call_id": reply.get("id"), "content": result})
        if replies and not calls and content is None:
            continue
        said: JsonObject = {"role": role, "content": content}
        if calls:
            said["tool_calls"] = calls
        out.append(said)
    return tuple(out)


def instructions(value: JsonValue) -> JsonObject | None:
    """``gen_ai.system_instructions`` (a list of parts, or text) as one system message; ``None`` when absent."""
    value = json_text(value)
    if isinstance(value, str):
        return {"role": "system", "content": value}
    if not isinstance(value, list):
        return None
    texts = [str(p["content"]) for p in value if isinstance(p, Mapping) and isinstance(p.get("content"), str)]
    return {"role": "system", "content": "\n".join(texts)} if texts else None


def from_openinference(items: list[Any]) -> tuple[JsonObject, ...]:
    """OpenInference message items (module docstring), unflattened (:func:`.attributes.unflatten`)."""
    out: list[JsonObject] = []
    for item in items[:MAX_MESSAGES]:
        message = item.get("message") if isinstance(item, Mapping) else None
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        if content is None and isinstance(message.get("contents"), list):
            texts = [c.get("message_content", {}) for c in message["contents"] if isinstance(c, Mapping)]
            content = "\n".join(str(t.get("text")) for t in texts if isinstance(t, Mapping) and "text" in t) or None
        said: JsonObject = {"role": message.get("role"), "content": content}
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            said["tool_calls"] = [_openinference_call(c) for c in calls]
        if message.get("tool_call_id") is not None:
            said["tool_call_id"] = message.get("tool_call_id")
        out.append(said)
    return tuple(out)


def _openinference_call(item: Any) -> JsonObject:
    call = item.get("tool_call") if isinstance(item, Mapping) else None
    if not isinstance(call, Mapping):
        return {"id": None, "type": "function", "function": None}
    function = call.get("function")
    if not isinstance(function, Mapping):
        return _call(call.get("id"), None, None)
    return _call(call.get("id"), function.get("name"), function.get("arguments"))


def from_legacy(items: list[Any]) -> tuple[JsonObject, ...]:
    """``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` items, unflattened (module docstring)."""
    out: list[JsonObject] = []
    for item in items[:MAX_MESSAGES]:
        if not isinstance(item, Mapping):
            continue
        said: JsonObject = {"role": item.get("role"), "content": item.get("content")}
        calls = item.get("tool_calls")
        if isinstance(calls, list) and calls:
            said["tool_calls"] = [
                _call(c.get("id"), c.get("name"), c.get("arguments"))
                if isinstance(c, Mapping)
                else _call(None, None, None)
                for c in calls
            ]
        if item.get("tool_call_id") is not None:
            said["tool_call_id"] = item.get("tool_call_id")
        out.append(said)
    return tuple(out)


def tool_list(value: JsonValue) -> tuple[JsonObject, ...] | None:
    """A tools list in any dialect's form as an OpenAI tools array (module docstring); ``None`` when there is none."""
    items = json_text(value)
    if not isinstance(items, list):
        return None
    tools: list[JsonObject] = []
    for tool in items[:MAX_MESSAGES]:
        tool = json_text(tool)
        if not isinstance(tool, Mapping):
            continue
        if isinstance(tool.get("function"), Mapping):
            tools.append({"type": "function", "function": dict(tool["function"])})
        elif isinstance(tool.get("name"), str):
            schema = tool.get("parameters", tool.get("input_schema", {"type": "object"}))
            function = {"name": tool["name"], "parameters": schema}
            if isinstance(tool.get("description"), str):
                function["description"] = tool["description"]
            tools.append({"type": "function", "function": function})
    return tuple(tools) or None
