"""Anthropic Messages, read into the common form (:mod:`.decoder`).

A record is ``{"system": ...?, "messages": [...], "tools": [...]?, identity...}``, as the Messages API takes
it. A message's ``content`` is a string or a list of blocks:

- ``tool_use`` ``{id, name, input}`` in an assistant message: one call, ``input`` its arguments;
- ``tool_result`` ``{tool_use_id, content, is_error?}`` in a user message: the reply to that call, with
  ``is_error`` as its error flag (``None`` when the block has none). A user message that only carries
  results is no new user turn;
- text, images, thinking and other blocks: what was said. Blocks of server-side tools (``server_tool_use``,
  ``web_search_tool_result``, ``mcp_tool_use``...) are refused with the field named: they ran on Anthropic's
  side, outside any tool list we can check.

The top-level ``system`` becomes the first message. The ``tools`` list (``{name, description,
input_schema}``) is read as the spec when no ``--tools`` is given.
"""

from __future__ import annotations

from collections.abc import Mapping

from prefix_exec.importers.transcripts.decoder import (
    Call,
    Fail,
    Message,
    Reply,
    flag_field,
    message_objects,
    text_field,
)
from prefix_exec.json_types import JsonMapping, JsonValue

NAME = "anthropic"
LABEL = "Anthropic Messages"
#: Block types that carry a call or a reply.
CALL, RESULT = "tool_use", "tool_result"


def read(record: JsonMapping, fail: Fail) -> list[Message]:
    """The record's ``system`` and ``messages`` in the common form."""
    messages: list[Message] = []
    if record.get("system") is not None:
        messages.append(Message("system", record["system"], where="system"))
    for at, message in message_objects(record, fail):
        role = message.get("role")
        if not isinstance(role, str):
            raise fail(f"{at}.role", f"expected a string, got {type(role).__name__}")
        content = message.get("content")
        if content is None or isinstance(content, str):
            messages.append(Message(role, content, where=at))
        elif isinstance(content, list):
            messages.append(_blocks(role, content, at, fail))
        else:
            raise fail(f"{at}.content", f"expected a string or a list of blocks, got {type(content).__name__}")
    return messages


def _blocks(role: str, blocks: list[JsonValue], at: str, fail: Fail) -> Message:
    said: list[JsonValue] = []
    calls: list[Call] = []
    replies: list[Reply] = []
    for k, block in enumerate(blocks):
        where = f"{at}.content[{k}]"
        if not isinstance(block, Mapping):
            raise fail(where, f"expected a content block object, got {type(block).__name__}")
        kind = block.get("type")
        if kind == CALL:
            if role != "assistant":
                raise fail(f"{where}.type", f"a tool_use block in a {role!r:.40} message (only the assistant calls)")
            call_id = text_field(block.get("id"), f"{where}.id", fail, what="a tool_use id")
            name = text_field(block.get("name"), f"{where}.name", fail, what="a tool name")
            calls.append(Call(name, block.get("input"), call_id, where))
        elif kind == RESULT:
            if role != "user":
                raise fail(f"{where}.type", f"a tool_result block in a {role!r:.40} message (results come as user)")
            call_id = text_field(block.get("tool_use_id"), f"{where}.tool_use_id", fail, what="a tool_use_id")
            error = flag_field(block.get("is_error"), f"{where}.is_error", fail)
            replies.append(Reply(call_id, block.get("content"), f"{where}.tool_use_id", error=error))
        elif isinstance(kind, str) and "tool" in kind:
            raise fail(
                f"{where}.type",
                f"a {kind!r:.40} block: a server-side tool, outside the tools we check",
                hint="only tool_use and tool_result blocks are read as calls; drop server tool blocks first",
            )
        else:
            said.append(block)
    return Message(role, said or None, tuple(calls), tuple(replies), where=at)
