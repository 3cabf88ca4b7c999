"""Checking and decoding one chat-completions response body (the JSON the server sent, as plain data).

:func:`response_problem` says why a body cannot be used (no choices, not an object, a message that is not an
object...), so the backend can retry it as a server fault before anything is cached. :func:`decode_answer`
turns a checked body into the answer's text, tool calls, assistant message and token counts. What the
*model* got wrong (arguments that are not JSON, a tool call without a function) is not a body problem: it
becomes a call with ``parse_error``, which replay scores as a schema failure.
"""

from __future__ import annotations

import json
from typing import Any

from prefix_exec.json_types import JsonObject
from prefix_exec.llm.textcalls import decode_arguments, parse_text_calls
from prefix_exec.llm.types import Message
from prefix_exec.trajectory import CallCost, ToolCall


def response_problem(body: object) -> str | None:
    """Why ``body`` is not a usable chat completion, or ``None`` when it is.

    Usable means: a JSON object whose ``choices`` is a non-empty list, whose first choice holds a ``message``
    object with ``content`` a string or null and ``tool_calls`` (when present) a list of objects.
    """
    if not isinstance(body, dict):
        return f"the body is not a JSON object but {type(body).__name__}"
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        return "the response has no choices"
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        return "choices[0] has no message object"
    if message.get("content") is not None and not isinstance(message["content"], str):
        return f"the message content is not a string but {type(message['content']).__name__}"
    tool_calls = message.get("tool_calls")
    if tool_calls is not None and (
        not isinstance(tool_calls, list) or not all(isinstance(tc, dict) for tc in tool_calls)
    ):
        return "the message's tool_calls is not a list of objects"
    usage = body.get("usage")
    if usage is not None and not isinstance(usage, dict):
        return "usage is not an object"
    return None


def decode_answer(
    body: JsonObject, *, text_mode: bool, role: str, model: str, latency_s: float
) -> tuple[str | None, tuple[ToolCall, ...], Message, CallCost]:
    """Content, tool calls, the assistant message to append, and the call's cost, from a checked body.

    Native tool calls are re-written in the appended message with their arguments as a JSON string, the
    form every server accepts back, even when this server sent them as an object.
    """
    message = body["choices"][0]["message"]
    content: str | None = message.get("content")
    if text_mode:
        _, calls = parse_text_calls(content)
        out: Message = {"role": "assistant", "content": content or ""}
    else:
        calls = tuple(_native_call(tc) for tc in message.get("tool_calls") or [])
        out = {"role": "assistant", "content": content}
        if calls:
            out["tool_calls"] = [
                {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.raw}}
                for call in calls
            ]
    usage = body.get("usage") or {}
    details = usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    cost = CallCost(
        role=role,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        reasoning_tokens=_count(reasoning),
        latency_s=latency_s,
        model=model,
    )
    return content, calls, out, cost


def _native_call(tool_call: JsonObject) -> ToolCall:
    call_id = tool_call.get("id")
    call_id = None if call_id is None else str(call_id)
    function = tool_call.get("function")
    if not isinstance(function, dict):
        return ToolCall(
            name="",
            call_id=call_id,
            raw=json.dumps(tool_call, ensure_ascii=False),
            parse_error="the tool call has no function object",
        )
    name = function.get("name")
    return decode_arguments(name if isinstance(name, str) else "", call_id, function.get("arguments"))


def _count(value: Any) -> int:
    """A token count; a missing or non-numeric one (servers differ) counts as 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)
