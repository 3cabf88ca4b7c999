"""The transcript formats, and which one a record is, told by its shape (never by a name inside it).

:data:`READERS` maps each format's name to its reader. :func:`detect` looks at one record:

- ``traj`` (a list): tau-bench results;
- ``messages`` (a list): LangChain when its messages are ``{type, data}`` objects; Anthropic when a message
  holds ``tool_use``/``tool_result``/``thinking`` blocks, or the record has a top-level ``system`` or tools
  with an ``input_schema``; OpenAI Chat when a message has ``tool_calls``, ``function_call`` or a
  ``tool_call_id``, or a ``tool``/``function``/``system``/``developer`` role, or the tools are ``function``
  tools. Messages with none of these (plain text) read the same as Chat or Anthropic: the record is Chat,
  but not decisively, so a later record may still show the file is Anthropic;
- an ``output`` list, or an ``input`` list of items: OpenAI Responses items.

A record of none of these shapes gets :func:`unknown_shape`: what was found, the forms accepted, and a hint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefix_exec.importers.transcripts import anthropic, langchain, openai_chat, openai_responses, tau_bench
from prefix_exec.importers.transcripts.decoder import Fail, Message
from prefix_exec.json_types import JsonMapping, JsonObject


@dataclass(frozen=True)
class Reader:
    """One format: its name (``--format``), its label in messages, the function that reads a record's
    messages into the common form, whether Y is a reward (the tau rule), and the record's own fields kept in
    a rollout's metadata."""

    name: str
    label: str
    read: Callable[[JsonMapping, Fail], list[Message]]
    reward: bool = False
    kept: tuple[str, ...] = ()

    def metadata(self, record: JsonMapping) -> JsonObject:
        return {key: record[key] for key in self.kept if key in record}


READERS: Mapping[str, Reader] = {
    r.name: r
    for r in (
        Reader(openai_chat.NAME, openai_chat.LABEL, openai_chat.read),
        Reader(openai_responses.NAME, openai_responses.LABEL, openai_responses.read),
        Reader(anthropic.NAME, anthropic.LABEL, anthropic.read),
        Reader(langchain.NAME, langchain.LABEL, langchain.read),
        Reader(tau_bench.NAME, tau_bench.LABEL, tau_bench.read, reward=True, kept=("reward",)),
    )
}
#: Each format's shape in one line, for the error about a record of none of them.
SHAPES: Mapping[str, str] = {
    openai_chat.NAME: '{"messages": [{"role", "content", "tool_calls"}, {"role": "tool", "tool_call_id"}]}',
    openai_responses.NAME: '{"input"/"output": [{"type": "function_call"}, {"type": "function_call_output"}]}',
    anthropic.NAME: '{"messages": [{"role", "content": [{"type": "tool_use"}, {"type": "tool_result"}]}]}',
    langchain.NAME: '{"messages": [{"type": "ai", "data": {"tool_calls"}}, {"type": "tool", "data"}]}',
    tau_bench.NAME: '{"task_id", "reward", "trial", "traj": [chat messages]}',
}
_ANTHROPIC_BLOCKS = ("tool_use", "tool_result", "thinking", "redacted_thinking")  # tuples: values may be unhashable
_CHAT_ROLES = ("tool", "function", "system", "developer")
_CHAT_KEYS = ("tool_calls", "function_call", "tool_call_id")


def detect(record: Any) -> tuple[str | None, bool]:
    """``(format, decisive)`` of one record; ``(None, False)`` for none of the shapes (module docstring)."""
    if not isinstance(record, Mapping):
        return None, False
    if isinstance(record.get("traj"), list):
        return tau_bench.NAME, True
    messages = record.get("messages")
    if isinstance(messages, list):
        items = [m for m in messages if isinstance(m, Mapping)]
        if any(langchain.shows(m) for m in items):
            return langchain.NAME, True
        return _messages_format(record, items)
    if openai_responses.shows(record):
        return openai_responses.NAME, True
    return None, False


def _messages_format(record: JsonMapping, items: Sequence[JsonMapping]) -> tuple[str, bool]:
    if any(any(key in m for key in _CHAT_KEYS) or m.get("role") in ("tool", "function") for m in items):
        return openai_chat.NAME, True
    blocks = (b for m in items if isinstance(m.get("content"), list) for b in m["content"] if isinstance(b, Mapping))
    if any(b.get("type") in _ANTHROPIC_BLOCKS for b in blocks):
        return anthropic.NAME, True
    tools = (
        [t for t in record.get("tools") or () if isinstance(t, Mapping)]
        if isinstance(record.get("tools"), list)
        else []
    )
    if "system" in record or any("input_schema" in t for t in tools):
        return anthropic.NAME, True
    if any(m.get("role") in _CHAT_ROLES for m in items) or any(t.get("type") == "function" for t in tools):
        return openai_chat.NAME, True
    return openai_chat.NAME, False


def foreign(data: Any) -> bool:
    """Whether a document is another tool's file that wraps conversations of its own kind (a tau2 results
    file's ``simulations``, an inspect log's ``samples``): refused whole, with the command that reads it."""
    return isinstance(data, Mapping) and ("simulations" in data or ("eval" in data and "samples" in data))


def unknown_shape(data: Any) -> tuple[str, str]:
    """``(message, hint)`` for a document or record of none of the formats: what was found, what is
    accepted, and what to do."""
    accepted = "; ".join(f"{READERS[name].label} {shape}" for name, shape in SHAPES.items())
    message = f"not a transcript in any form read here: found {describe(data)}. Accepted: {accepted}"
    return message, _hint(data)


def describe(data: Any) -> str:
    """What a JSON value is, in a few words: ``an object with keys a, b, c``, ``a list of 3 numbers``."""
    if isinstance(data, Mapping):
        keys = [str(k)[:30] for k in list(data)[:8]]
        more = ", ..." if len(data) > 8 else ""
        return f"an object with keys {', '.join(keys)}{more}" if keys else "an empty object"
    if isinstance(data, list):
        kinds = sorted({_kind(item) for item in data[:100]})
        return f"a list of {len(data)} items ({', '.join(kinds)})" if data else "an empty list"
    return _kind(data)


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "objects with a role (chat messages)" if "role" in value else "objects"
    if isinstance(value, list):
        return "lists"
    if value is None:
        return "null"
    return {bool: "a boolean", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def _hint(data: Any) -> str:
    generic = (
        "each record is one conversation (a line of a JSONL file, an item of a JSON list, or the lists of a "
        'JSON object such as {"data": [...]}); force a form with --format'
    )
    if isinstance(data, list) and data and all(isinstance(m, Mapping) and "role" in m for m in data):
        return 'a bare list of messages: write each conversation as {"messages": [...], "task_id": ..., "success": ...}'
    if not isinstance(data, Mapping):
        return generic
    if "simulations" in data:
        return "this looks like a tau2 results file: prefix-exec score tau FILE"
    if "eval" in data and "samples" in data:
        return "this looks like an inspect log: prefix-exec score inspect FILE"
    if "actions" in data:
        return "this looks like a canonical rollout: prefix-exec score custom --tools SPEC FILE"
    if "result" in data and "id" in data:
        return "this looks like a BFCL result: prefix-exec score bfcl FOLDER"
    if "role" in data:
        return 'one message, not a conversation: a record holds a whole conversation as {"messages": [...]}'
    if "messages" in data:
        return f"'messages' must be a list, got {_kind(data['messages'])}"
    if "payload" in data or "message" in data:
        return 'an event log (one message per line): collect each conversation into one {"messages": [...]}'
    return generic
