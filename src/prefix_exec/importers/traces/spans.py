"""The one span model every trace reader maps its format onto.

A reader (one module per format: :mod:`.otlp`, :mod:`.agents_sdk`, :mod:`.langsmith`) turns each span, run or
log event it reads into a :class:`Span`: its place in its trace (trace id, span id, parent id, start time), what
kind of step it is (:data:`KINDS`) and what it carries, already in OpenAI Chat form, the form the transcripts
decoder reads (:mod:`prefix_exec.importers.transcripts.openai_chat`):

- a model call (``llm``): the chat messages sent (``inputs``) and answered (``outputs``), each
  ``{"role", "content", "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}]}`` or
  ``{"role": "tool", "tool_call_id", "content"}``; the tools offered (``tools``, an OpenAI tools array), the model,
  and ``model_error``: the text of the failure the call recorded (the server's 500, a timeout), ``None`` when it
  recorded none;
- a tool execution (``tool``): a :class:`ToolUse`, with the call id when the format has one, the arguments, the
  result, and the error the span recorded (status ERROR, an exception event, ``error.type``, an ``error`` field);
- anything else (``other``): an agent, chain or workflow span, kept for its identity attributes and its place.

``attributes`` holds the span's scalar attributes that identity may name (:mod:`.conversation`), at most
:data:`MAX_ATTRIBUTES` of them, each string at most :data:`MAX_ATTRIBUTE_CHARS` characters. ``where`` says where
the span was read (``line 3, resourceSpans[0].scopeSpans[0].spans[2]``), for messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prefix_exec.json_types import JsonObject, JsonValue

#: The kinds of step a span may be.
KINDS = ("llm", "tool", "other")
#: Most identity attributes kept per span, and the longest string kept among them.
MAX_ATTRIBUTES = 64
MAX_ATTRIBUTE_CHARS = 1_000


@dataclass(frozen=True)
class ToolUse:
    """One tool execution as a span records it. ``call_id`` is ``None`` when the format has none (CrewAI,
    OpenInference's tool spans, the Agents SDK's function spans); ``arguments`` are the log's (JSON text or an
    object); ``error`` is ``True`` when the span recorded a failure (``error_text`` then says what, and
    ``error_type`` its kind when named), ``None`` when nothing says either way."""

    name: str
    arguments: JsonValue
    call_id: str | None = None
    result: JsonValue = None
    error: bool | None = None
    error_text: str | None = None
    error_type: str | None = None


@dataclass(frozen=True)
class Span:
    """One step of a trace in the common form (module docstring). ``start`` orders spans (nanoseconds since the
    epoch; ties keep the order read); ``line`` is the file line the span came from (``None`` in a JSON document);
    ``model_error`` is set on ``llm`` spans only, at most :data:`MAX_ATTRIBUTE_CHARS` characters."""

    trace_id: str
    span_id: str | None
    parent_id: str | None
    start: int
    kind: str
    where: str
    line: int | None = None
    end: int | None = None
    name: str = ""
    inputs: tuple[JsonObject, ...] | None = None
    outputs: tuple[JsonObject, ...] | None = None
    tools: tuple[JsonObject, ...] | None = None
    model: str | None = None
    tool: ToolUse | None = None
    model_error: str | None = None
    attributes: dict[str, JsonValue] = field(default_factory=dict)


def kept_attributes(attributes: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """The scalar attributes a span keeps for identity (module docstring), strings cut to the bound."""
    kept: dict[str, JsonValue] = {}
    for key, value in attributes.items():
        if len(kept) >= MAX_ATTRIBUTES:
            break
        if isinstance(value, str):
            kept[key] = value[:MAX_ATTRIBUTE_CHARS]
        elif value is None or isinstance(value, (bool, int, float)):
            kept[key] = value
    return kept
