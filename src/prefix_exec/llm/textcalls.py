"""Tool calling for servers without native support: tools described in the prompt, calls parsed from text.

The model writes each call as ``<tool_call>{"name": "...", "arguments": {...}}</tool_call>``; tool results
come back as user messages. Decoding never evaluates model text: it is parsed as JSON or recorded as a
parse error (a schema failure at replay).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from typing import Any

from prefix_exec.llm.types import Message, ToolSchema
from prefix_exec.trajectory import ToolCall

_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"\A```[\w-]*\s*\n(.*?)\n?```\Z", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')


def tools_prompt(tools: Sequence[ToolSchema]) -> str:
    """A system-prompt section that lists the tools and the call format."""
    listing = "\n".join(
        json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}, sort_keys=True)
        for t in tools
    )
    return (
        "You can call these tools (one JSON object per tool):\n"
        f"{listing}\n"
        'To call a tool, write exactly <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>; '
        "write several blocks to call several tools. Write no block when you answer without a tool."
    )


def with_tools_prompt(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> list[Message]:
    """``messages`` with the tools section added to the first system message (or a new one)."""
    section = tools_prompt(tools)
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content') or ''}\n\n{section}"
    else:
        out.insert(0, {"role": "system", "content": section})
    return out


def parse_text_calls(text: str | None) -> tuple[str | None, tuple[ToolCall, ...]]:
    """Split an answer into its prose (blocks removed, ``None`` when empty) and the calls it makes.

    A block's JSON may sit in a Markdown code fence. A block cut off by the end of the answer (a length
    limit) still counts when its body starts like a call (``{``); an unclosed ``<tool_call>`` followed by
    prose is the tag being mentioned, not a call.
    """
    if not text:
        return text, ()
    calls: list[ToolCall] = []
    blocks = [m for m in _BLOCK.finditer(text) if m.group(2) or _unfenced(m.group(1).strip()).startswith("{")]
    for index, match in enumerate(blocks):
        body = _unfenced(match.group(1).strip())
        call_id = f"text-{index}"
        try:
            data: Any = json.loads(body)
        except (ValueError, RecursionError) as exc:  # also digits past Python's int limit, absurd nesting
            name = _NAME.search(body)
            calls.append(
                ToolCall(
                    name=name.group(1) if name else "",
                    call_id=call_id,
                    raw=body,
                    parse_error=f"tool call is not valid JSON ({_reason(exc)})",
                )
            )
            continue
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            calls.append(
                ToolCall(
                    name="", call_id=call_id, raw=body, parse_error="tool call must be an object with a string 'name'"
                )
            )
            continue
        arguments = data.get("arguments", {})
        if isinstance(arguments, str):
            # Some models double-encode the arguments object.
            with contextlib.suppress(json.JSONDecodeError):
                arguments = json.loads(arguments)
        if not isinstance(arguments, dict):
            calls.append(
                ToolCall(
                    name=data["name"],
                    call_id=call_id,
                    raw=body,
                    parse_error="tool call 'arguments' must be a JSON object",
                )
            )
            continue
        calls.append(ToolCall(name=data["name"], arguments=arguments, call_id=call_id, raw=body))
    for match in reversed(blocks):
        text = text[: match.start()] + text[match.end() :]
    return text.strip() or None, tuple(calls)


def _unfenced(body: str) -> str:
    """``body`` without a Markdown code fence around it (```` ```json ... ``` ````)."""
    fenced = _FENCE.match(body)
    return fenced.group(1).strip() if fenced else body


def decode_arguments(name: str, call_id: str | None, raw: Any) -> ToolCall:
    """A native tool call from its ``arguments``: a JSON string, or an object some servers send already parsed.

    Malformed JSON, or JSON that is not an object, becomes a call with ``parse_error``; ``raw`` is always the
    arguments as text (an object is serialised). ``None`` or an empty string means no arguments.
    """
    if isinstance(raw, dict):
        return ToolCall(name=name, arguments=raw, call_id=call_id, raw=json.dumps(raw, ensure_ascii=False))
    if raw is None:
        raw = ""
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
            name=name, call_id=call_id, raw=raw, parse_error=f"arguments are not valid JSON ({_reason(exc)})"
        )
    if not isinstance(arguments, dict):
        return ToolCall(name=name, call_id=call_id, raw=raw, parse_error="arguments must be a JSON object")
    return ToolCall(name=name, arguments=arguments, call_id=call_id, raw=raw)


def _reason(exc: BaseException) -> str:
    """A decoding error in a few words: the JSON error's message, or Python's own limit that was hit."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0][:120]
