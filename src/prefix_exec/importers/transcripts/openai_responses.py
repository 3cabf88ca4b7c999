"""OpenAI Responses items (as the Agents SDK's ``RunResult.to_input_list()`` gives them), read into the
common form (:mod:`.decoder`).

A record is ``{"input": [...] or "text", "output": [...]?, "tools": [...]?, identity...}``: the items given to
the model and/or the items it produced, read in that order (``to_input_list()`` is both in one ``input``):

- ``message`` items (``{"type": "message", "role", "content"}``, or ``{"role", "content"}`` with no type):
  what was said; a text ``input`` is one user message;
- ``function_call`` ``{call_id, name, arguments}``: one call, ``arguments`` the model's JSON text;
- ``function_call_output`` ``{call_id, output}``: the reply to that call (the format has no error flag);
- ``mcp_call`` ``{id, name, arguments, output, error}``: a call and, when it has run, its reply, with
  ``error`` set as its error flag;
- ``reasoning``, ``item_reference`` and MCP listing or approval items: no call, skipped.

Items of hosted tools (``web_search_call``, ``file_search_call``, ``computer_call``, ``custom_tool_call``...)
are refused with the field named: they are not function calls a tool list declares.
"""

from __future__ import annotations

from collections.abc import Mapping

from prefix_exec.importers.transcripts.decoder import Call, Fail, Message, Reply, text_field
from prefix_exec.json_types import JsonMapping

NAME = "openai-responses"
LABEL = "OpenAI Responses items"
#: Item types that carry no call.
SKIPPED = ("reasoning", "item_reference", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response")
#: The record's item lists, in the order they are read.
KEYS = ("input", "output")


def shows(record: JsonMapping) -> bool:
    """Whether a record holds Responses items: an ``output`` list, or an ``input`` list of items."""
    if isinstance(record.get("output"), list):
        return True
    items = record.get("input")
    return isinstance(items, list) and all(isinstance(i, Mapping) and ("type" in i or "role" in i) for i in items)


def read(record: JsonMapping, fail: Fail) -> list[Message]:
    """The record's ``input`` and ``output`` items in the common form."""
    if all(record.get(key) is None for key in KEYS):
        raise fail("input", "missing: a Responses record holds an 'input' and/or an 'output' list of items")
    messages: list[Message] = []
    for key in KEYS:
        items = record.get(key)
        if items is None:
            continue
        if key == "input" and isinstance(items, str):
            messages.append(Message("user", items, where=key))
            continue
        if not isinstance(items, list):
            raise fail(key, f"expected a list of items, got {type(items).__name__}")
        for index, item in enumerate(items):
            messages.extend(_item(item, f"{key}[{index}]", fail))
    return messages


def _item(item: object, at: str, fail: Fail) -> list[Message]:
    if not isinstance(item, Mapping):
        raise fail(at, f"expected an item object, got {type(item).__name__}")
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        role = text_field(item.get("role"), f"{at}.role", fail, what="a message's role")
        return [Message(role, item.get("content"), where=at)]
    if kind == "function_call":
        call_id = text_field(item.get("call_id"), f"{at}.call_id", fail, what="a call_id")
        name = text_field(item.get("name"), f"{at}.name", fail, what="a tool name")
        return [Message("assistant", calls=(Call(name, item.get("arguments"), call_id, at),), where=at)]
    if kind == "function_call_output":
        call_id = text_field(item.get("call_id"), f"{at}.call_id", fail, what="a call_id")
        return [Message("tool", replies=(Reply(call_id, item.get("output"), f"{at}.call_id"),), where=at)]
    if kind == "mcp_call":
        return _mcp_call(item, at, fail)
    if kind in SKIPPED:
        return []
    if not isinstance(kind, str):
        raise fail(f"{at}.type", f"expected a string, got {type(kind).__name__}")
    raise fail(
        f"{at}.type",
        f"a {kind!r:.40} item: only function calls (and MCP calls) are read",
        hint="hosted tools run on OpenAI's side, outside the tool list we check; drop those items first",
    )


def _mcp_call(item: JsonMapping, at: str, fail: Fail) -> list[Message]:
    call_id = text_field(item.get("id"), f"{at}.id", fail, what="an MCP call's id")
    name = text_field(item.get("name"), f"{at}.name", fail, what="a tool name")
    messages = [Message("assistant", calls=(Call(name, item.get("arguments"), call_id, at),), where=at)]
    error, output = item.get("error"), item.get("output")
    if error is not None or output is not None:
        reply = Reply(call_id, error if error is not None else output, f"{at}.id", error=error is not None)
        messages.append(Message("tool", replies=(reply,), where=at))
    return messages
