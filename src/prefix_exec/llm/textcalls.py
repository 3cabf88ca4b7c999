"""Tool calls written in text: the prompt that asks for a format, and the reading of calls from an answer.

For servers without native tool calling the tools are described in the system prompt, in the words of the
format the model is asked to write (:func:`tools_prompt`), and tool results come back as user messages. A
grid's ``text_format`` picks the format (:data:`TEXT_FORMATS`); each format's reader is in
:mod:`prefix_exec.llm.text_formats`. ``auto`` sends the ``hermes`` prompt and reads any format, trying them in
:data:`AUTO_ORDER`: the formats that mark calls with a tag first (``hermes``, ``mistral``), then an answer
that is JSON (``json``, then ``llama``'s ``"parameters"`` objects, which also owns ``<|python_tag|>``), then
JSON in Markdown fences (``fenced``), then a Python list of calls (``pythonic``). The first reader that
recognises the text decides, and :class:`TextCalls` names it. Text no reader recognises is an answer without
a call. Decoding never evaluates model text: it is parsed as JSON or read as Python literals, or recorded as
a parse error (a schema failure at replay).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from prefix_exec.llm.cut_calls import cut_off
from prefix_exec.llm.text_formats import READERS
from prefix_exec.llm.text_reading import MAX_ANSWER_CHARS, MAX_TEXT_CHARS, checked, json_reason, quoted
from prefix_exec.llm.trailing_call import read_trailing_call
from prefix_exec.llm.types import Message, ToolSchema
from prefix_exec.trajectory import ToolCall

#: The order ``auto`` tries the formats in (see the module docstring).
AUTO_ORDER = ("hermes", "mistral", "json", "llama", "fenced", "pythonic")
#: A grid's choices of ``text_format``.
TEXT_FORMATS = ("auto", *AUTO_ORDER)

_NO_TOOL = "Answer in plain text, with no such {what}, when you answer without a tool."
#: How each format asks for calls, with its example; ``auto`` asks for ``hermes``.
_ASK = {
    "hermes": (
        'To call a tool, write exactly <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>; '
        "write several blocks to call several tools. Write no block when you answer without a tool."
    ),
    "json": (
        'To call a tool, answer with only a JSON object, for example {"name": "TOOL", "arguments": {"ARG": "VALUE"}}; '
        "to call several tools, answer with a JSON list of such objects. " + _NO_TOOL.format(what="object")
    ),
    "fenced": (
        'To call a tool, write a Markdown code block holding a JSON object {"name": "TOOL", "arguments": {...}} '
        "(a JSON list of such objects to call several tools), for example:\n"
        '```json\n{"name": "TOOL", "arguments": {"ARG": "VALUE"}}\n```\n' + _NO_TOOL.format(what="block")
    ),
    "llama": (
        'To call a tool, answer with only a JSON object, for example {"name": "TOOL", "parameters": {"ARG": "VALUE"}}; '
        'to call several tools, write such objects separated by ";". ' + _NO_TOOL.format(what="object")
    ),
    "mistral": (
        "To call tools, answer with [TOOL_CALLS] followed by a JSON list of calls, for example "
        '[TOOL_CALLS] [{"name": "TOOL", "arguments": {"ARG": "VALUE"}}]. Write no [TOOL_CALLS] when you answer '
        "without a tool."
    ),
    "pythonic": (
        "To call tools, answer with only a Python list of calls with keyword arguments and literal values, for "
        'example [TOOL(ARG="VALUE"), OTHER_TOOL(ARG=1)]. ' + _NO_TOOL.format(what="list")
    ),
}


@dataclass(frozen=True)
class TextCalls:
    """An answer read for calls: ``prose`` (the text without them, ``None`` when empty), ``calls`` (ids
    ``text-0``, ``text-1``... in order) and ``format``, the format that read them (``None`` without calls)."""

    prose: str | None
    calls: tuple[ToolCall, ...]
    format: str | None


def tools_prompt(tools: Sequence[ToolSchema], text_format: str = "auto") -> str:
    """A system-prompt section that lists the tools and asks for calls in ``text_format``."""
    listing = "\n".join(
        json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}, sort_keys=True)
        for t in tools
    )
    ask = _ASK["hermes" if text_format == "auto" else text_format]
    return f"You can call these tools (one JSON object per tool):\n{listing}\n{ask}"


def with_tools_prompt(
    messages: Sequence[Message], tools: Sequence[ToolSchema], text_format: str = "auto"
) -> list[Message]:
    """``messages`` with the tools section added to the first system message (or a new one)."""
    section = tools_prompt(tools, text_format)
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content') or ''}\n\n{section}"
    else:
        out.insert(0, {"role": "system", "content": section})
    return out


def read_text_calls(
    text: str | None, text_format: str = "auto", *, tools: Collection[str] = (), cut: bool = False
) -> TextCalls:
    """The calls ``text`` makes in ``text_format`` (``auto``: the first format of :data:`AUTO_ORDER` that
    recognises it). Only the first :data:`~prefix_exec.llm.text_reading.MAX_TEXT_CHARS` characters are read.

    ``tools``: the declared tools' names; with ``auto`` or ``json``, an answer no reader took whose last block
    is JSON calls of these tools is read as ``json`` (:mod:`prefix_exec.llm.trailing_call`). ``cut``: the
    answer stopped at ``max_tokens``; a call it cut is a parse failure (:mod:`prefix_exec.llm.cut_calls`)."""
    if not text:
        return TextCalls(None, (), None)
    window = text[:MAX_TEXT_CHARS]
    read = TextCalls(text.strip() or None, (), None)
    for name in AUTO_ORDER if text_format == "auto" else (text_format,):
        found = READERS[name](window)
        if found is not None and found.calls:
            read = TextCalls(found.prose, found.calls, name)
            break
    else:
        trailing = read_trailing_call(window, tools) if text_format in ("auto", "json") else None
        if trailing is not None:
            read = TextCalls(trailing.prose, trailing.calls, "json")
    calls = cut_off(window, read.prose, read.calls) if cut else read.calls
    if not calls:
        return TextCalls(read.prose, (), None)
    numbered = tuple(replace(checked(call), call_id=f"text-{i}") for i, call in enumerate(calls))
    # A cut call no reader took (a tag, a fence or JSON opened at the end) is named by the format asked for.
    return TextCalls(read.prose, numbered, read.format or text_format)


def decode_arguments(name: str, call_id: str | None, raw: Any) -> ToolCall:
    """A native tool call from its ``arguments``: a JSON string, or an object some servers send already parsed.

    Malformed JSON, or JSON that is not an object, becomes a call with ``parse_error``; ``raw`` is always the
    arguments as text (an object is serialised). ``None`` or an empty string means no arguments.
    """
    if isinstance(raw, dict):
        return checked(ToolCall(name=name, arguments=raw, call_id=call_id, raw=json.dumps(raw, ensure_ascii=False)))
    if raw is None:
        raw = ""
    if isinstance(raw, str) and len(raw) > MAX_ANSWER_CHARS:
        reason = f"arguments longer than {MAX_ANSWER_CHARS:,} characters"
        return ToolCall(name=name, call_id=call_id, raw=quoted(raw), parse_error=reason)
    if not isinstance(raw, str):
        return ToolCall(
            name=name,
            call_id=call_id,
            raw=json.dumps(raw, ensure_ascii=False),
            parse_error="arguments must be a JSON object",
        )
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError) as exc:  # also digits past Python's int limit, absurd nesting
        return ToolCall(
            name=name, call_id=call_id, raw=raw, parse_error=f"arguments are not valid JSON ({json_reason(exc)})"
        )
    if not isinstance(arguments, dict):
        return ToolCall(name=name, call_id=call_id, raw=raw, parse_error="arguments must be a JSON object")
    return checked(ToolCall(name=name, arguments=arguments, call_id=call_id, raw=raw))
