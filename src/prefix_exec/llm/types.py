"""Records of the LLM backend: tool schemas, one completion, retry events and the backend error.

Messages are plain OpenAI chat-completions dicts (``{"role": ..., "content": ...}``); the backend owns how a
tool call and its result are written into them, because that differs between native and text tool calling.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.trajectory import CallCost, ToolCall

Message = JsonObject


@dataclass(frozen=True)
class ToolSchema:
    """One tool the model may call: its name, description and JSON Schema of the arguments object."""

    name: str
    description: str = ""
    parameters: JsonMapping = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> JsonObject:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }


@dataclass(frozen=True)
class RetryEvent:
    """One failed attempt that was retried.

    ``kind`` is ``rate_limit`` (429), ``server`` (5xx), ``timeout`` (the client's timeout or a 408),
    ``conflict`` (409), ``connection``, or ``bad_response`` (a 200 whose body is not a usable chat completion:
    no choices, invalid or truncated JSON). ``delay_s`` is the backoff slept before the next attempt and
    ``elapsed_s`` the time the failed attempt took, from holding a concurrency slot to its error (seconds).
    """

    attempt: int
    kind: str
    status: int | None
    delay_s: float
    message: str
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class Completion:
    """One model answer.

    ``calls`` are the tool calls it asked for, in order; a call whose arguments were not valid JSON has
    ``parse_error`` set and ``raw`` holding the text (replay scores it as a schema failure). ``message`` is
    the assistant message to append to the conversation. ``cost.latency_s`` is the wall time of the attempt
    that produced the answer, timed while it held its concurrency slot: neither the wait for a slot nor
    failed attempts and backoff count. Those are ``queue_s`` (waiting for a slot, summed over attempts) and
    ``backoff_s`` (sleeping between attempts); failed attempts' own times are in ``retries``. A cache hit
    reports the latency stored with the answer and zero waits, so a resumed run reports the same cost.
    ``retries`` lists every retried failure. ``text_format`` is the format that read ``calls`` from the
    answer's text (``None``: native calls, or none); ``in_content`` is true when the request offered the tools
    natively but the calls were read from the answer's text (``tool_mode = "auto"``'s content fallback).
    ``usage_read_as_0`` names the server's ``usage`` counts no call can have (negative, past 2^31 - 1, not
    finite: ``records.values``), each read as 0.
    """

    content: str | None
    calls: tuple[ToolCall, ...]
    message: Message
    cost: CallCost
    cached: bool = False
    retries: tuple[RetryEvent, ...] = ()
    queue_s: float = 0.0
    backoff_s: float = 0.0
    text_format: str | None = None
    in_content: bool = False
    usage_read_as_0: tuple[str, ...] = ()


class BackendError(Exception):
    """The endpoint could not answer: retries exhausted, or a non-retryable error (bad key, unknown model,
    no quota left, a body that is not the chat-completions API). ``retries`` lists the retried failures."""

    def __init__(self, message: str, retries: tuple[RetryEvent, ...] = ()) -> None:
        super().__init__(message)
        self.retries = retries
