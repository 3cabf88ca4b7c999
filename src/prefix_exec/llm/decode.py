"""Checking and decoding one chat-completions response body (the JSON the server sent, as plain data).

:func:`response_problem` says why a body cannot be used (no choices, not an object, a message that is not an
object...), so the backend can retry it as a server fault before anything is cached. :func:`decode_answer`
turns a checked body into a :class:`~prefix_exec.llm.types.Completion`: the answer's text, tool calls,
assistant message and token counts. What the *model* got wrong (arguments that are not JSON, a tool call
without a function, a text call that does not parse) is not a body problem: it becomes a call with
``parse_error``, which replay scores as a schema failure.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection
from dataclasses import replace
from typing import Any

from prefix_exec.json_types import JsonObject
from prefix_exec.llm.cut_calls import LENGTH
from prefix_exec.llm.text_reading import MAX_ANSWER_CHARS
from prefix_exec.llm.textcalls import decode_arguments, read_text_calls
from prefix_exec.llm.types import Completion, Message
from prefix_exec.records.values import MAX_TOKENS
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
    body: JsonObject,
    *,
    mode: str,
    text_format: str,
    role: str,
    model: str,
    latency_s: float,
    tools: Collection[str] = (),
) -> Completion:
    """The answer in a checked body: its text, tool calls, the assistant message to append and its cost.

    ``mode`` is how the request offered the tools: ``text`` (in the prompt: calls are read from the text in
    ``text_format``), ``native`` (``tools``: calls are the message's ``tool_calls``) or ``auto`` (``tools``;
    an answer without ``tool_calls`` whose text holds calls in ``text_format`` is read from its text, as a
    server's tool parser would have read it). Native calls, and calls read in ``auto``, are written in the
    appended message as ``tool_calls`` with their arguments as a JSON string, the form every server accepts
    back, even when this server sent them as an object; the appended message's content is then the prose left.
    ``tools`` (the declared tools' names) lets a JSON call after prose be read (:mod:`prefix_exec.llm.trailing_call`);
    an answer that stopped at ``max_tokens`` has the call it cut as a parse failure (:mod:`prefix_exec.llm.cut_calls`).
    """
    message = body["choices"][0]["message"]
    cut = body["choices"][0].get("finish_reason") == LENGTH
    content: str | None = _kept(message.get("content"))
    cost, zeroed = _cost(body, role=role, model=model, latency_s=latency_s)
    return replace(_answer(message, content, cost, mode, text_format, tools, cut), usage_read_as_0=zeroed)


def _answer(
    message: JsonObject,
    content: str | None,
    cost: CallCost,
    mode: str,
    text_format: str,
    tools: Collection[str],
    cut: bool,
) -> Completion:
    """The :class:`Completion` of ``message`` (:func:`decode_answer`'s reading by ``mode``)."""
    if mode == "text":
        read = read_text_calls(content, text_format, tools=tools, cut=cut)
        out: Message = {"role": "assistant", "content": content or ""}
        return Completion(content, read.calls, out, cost, text_format=read.format)
    calls = tuple(_native_call(tc) for tc in message.get("tool_calls") or [])
    if not calls and mode == "auto" and content:
        read = read_text_calls(content, text_format, tools=tools, cut=cut)
        if read.calls:
            # Ids from the text, so a re-asked request (the cache, a resume) writes the same conversation;
            # 9 letters and digits, the only form Mistral's templates take.
            digest = hashlib.sha256(content.encode("utf-8", "replace")).hexdigest()[:6]
            calls = tuple(replace(call, call_id=f"{digest}{i:03d}") for i, call in enumerate(read.calls))
            out = {"role": "assistant", "content": read.prose, "tool_calls": _wire(calls, from_text=True)}
            return Completion(content, calls, out, cost, text_format=read.format, in_content=True)
    out = {"role": "assistant", "content": content}
    if calls:
        out["tool_calls"] = _wire(calls)
    return Completion(content, calls, out, cost)


#: The function name a call read from text goes back to the server under when its text showed no name (it did
#: not parse): OpenAI-style servers refuse an empty name in the conversation they are sent (names must match
#: ``^[a-zA-Z0-9_-]{1,64}$``). Only the wire has it: the recorded call keeps its empty name and parse error.
UNPARSED_CALL = "unparsed_tool_call"


#: What :func:`_kept` appends to a text it cut.
_CUT = re.compile(r"\.\.\. \[[0-9,]+ more characters cut by prefix-exec\]")


def _kept(content: str | None) -> str | None:
    """The answer's text as kept and sent back: cut at :data:`MAX_ANSWER_CHARS`, saying how much was cut; a text
    already cut so (a cached body, :func:`kept_body`) is kept as it is."""
    if content is None or len(content) <= MAX_ANSWER_CHARS or _CUT.fullmatch(content, MAX_ANSWER_CHARS):
        return content
    return cut_text(content[:MAX_ANSWER_CHARS], len(content))


def cut_text(head: str, total: int) -> str:
    """A text of ``total`` characters kept as its first :data:`MAX_ANSWER_CHARS` (``head``), saying how much was
    cut: what :func:`_kept` makes of it (a streamed answer is cut so as it arrives: :mod:`prefix_exec.llm.stream`)."""
    return f"{head}... [{total - MAX_ANSWER_CHARS:,} more characters cut by prefix-exec]"


def kept_body(body: JsonObject) -> JsonObject:
    """``body`` (a checked chat completion: :func:`response_problem`) with each text of its message (the answer,
    a reasoning text) as :func:`_kept` keeps it, changed in place: the cache stores no more of an answer than the
    rollout keeps (a 70 MB answer cached whole doubled the memory of its request), and the full text can be
    freed at once. The answer read from it is the same (:func:`_kept` leaves a cut text as it is)."""
    message = body["choices"][0]["message"]
    for key, value in message.items():
        if isinstance(value, str) and len(value) > MAX_ANSWER_CHARS:
            message[key] = _kept(value)
    return body


def _wire(calls: tuple[ToolCall, ...], *, from_text: bool = False) -> list[JsonObject]:
    """``calls`` as a message's ``tool_calls``: native arguments as the server sent them (``raw``), calls read
    from text with their arguments as JSON (``{}`` for one that did not parse: servers that parse the arguments
    of the conversation they are sent would fail on the model's broken text) and a nameless one named
    :data:`UNPARSED_CALL`."""
    return [
        {
            "id": call.call_id,
            "type": "function",
            "function": {
                "name": (call.name or UNPARSED_CALL) if from_text else call.name,
                "arguments": json.dumps(call.arguments, ensure_ascii=False) if from_text else call.raw,
            },
        }
        for call in calls
    ]


def _cost(body: JsonObject, *, role: str, model: str, latency_s: float) -> tuple[CallCost, tuple[str, ...]]:
    """The call's cost from the body's ``usage`` (counts a server leaves out are 0), and the names of the counts
    no call can have, read as 0 (:func:`_count`)."""
    usage = body.get("usage") or {}
    details = usage.get("completion_tokens_details")
    counts = {
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "reasoning_tokens": details.get("reasoning_tokens") if isinstance(details, dict) else None,
    }
    kept = {name: _count(value) for name, value in counts.items()}
    zeroed = tuple(name for name, value in counts.items() if kept[name] == 0 and _is_number(value) and value != 0)
    return CallCost(role=role, **kept, latency_s=latency_s, model=model), zeroed


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


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
    """A token count; a missing or non-numeric one (servers differ) counts as 0, and so does one no answer can
    have (negative, past :data:`MAX_TOKENS`, infinite or NaN: ``int()`` of these raises or poisons the totals)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not 0 <= value <= MAX_TOKENS:  # False for NaN too (records.values.MAX_TOKENS: the bound files are read with)
        return 0
    return int(value)
