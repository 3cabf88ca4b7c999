"""The OpenAI Agents SDK's own trace export, read into spans (:mod:`.spans`).

What a ``TracingProcessor`` gets: each ``Trace.export()`` and ``Span.export()``, written one per line, or the SDK's
ingest payload ``{"data": [...]}`` of the same items. The table:

- ``{"object": "trace", "id", "workflow_name", "group_id", "metadata"}``: the trace's root (``other``), its
  attributes ``workflow_name``, ``group_id`` and ``metadata.<key>`` for identity;
- ``{"object": "trace.span", "id", "trace_id", "parent_id", "started_at", "ended_at", "span_data", "error"}`` with
  ``span_data.type``:

  - ``generation``: a model call (``llm``): ``input`` and ``output`` are Chat messages, ``model`` the model; the
    span's ``error`` is the call's failure (:attr:`~.spans.Span.model_error`: ``message: data.error``, as
    ``Error getting response: Error code: 500 - ...``);
  - ``function``: a tool execution (``tool``): ``name``, ``input`` (the arguments' JSON text), ``output``; the
    span's ``error`` (``{"message", "data"}``) is the recorded failure. The SDK keeps no call id on it: the call
    is matched to the model's by name and order (:mod:`.conversation`);
  - any other type (``agent``, ``response``, ``handoff``, ``guardrail``, ``custom``): ``other``. ``response`` spans
    (the Responses API) hold only a response id, no messages: a run on the Responses API has its calls only in
    its ``function`` spans.

Times are ISO 8601 (``2026-12-07T14:03:06.553283+00:00``); a span without one sorts by the order read.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.importers.traces import messages
from prefix_exec.importers.traces.spans import MAX_ATTRIBUTE_CHARS, Span, ToolUse, kept_attributes
from prefix_exec.json_types import JsonMapping, JsonObject

NAME = "agents-sdk"
LABEL = "OpenAI Agents SDK trace export"
_HINT = 'the Agents SDK\'s Trace.export() / Span.export() items, one per line, or {"data": [...]} (docs/traces.md)'
_EPOCH = datetime.fromisoformat("1970-01-01T00:00:00+00:00")


def shows(data: Any) -> bool:
    """Whether a parsed item (or an ingest payload) is the Agents SDK's export."""
    if isinstance(data, Mapping) and isinstance(data.get("data"), list):
        return any(shows(item) for item in data["data"][:10])
    return isinstance(data, Mapping) and data.get("object") in ("trace", "trace.span")


def span(item: JsonMapping, where: str, path: str, line: int | None) -> Span:
    """One exported trace or span; an InputError for one of the wrong shape."""

    def fail(field: str, message: str) -> InputError:
        return InputError(message, path=path, line=line, field=f"{where}{field}".lstrip(".") or None, hint=_HINT)

    if item.get("object") == "trace":
        trace_id = _id(item.get("id"), ".id", fail)
        attributes: JsonObject = {k: item.get(k) for k in ("workflow_name", "group_id") if k in item}
        metadata = item.get("metadata")
        if isinstance(metadata, Mapping):
            attributes.update({f"metadata.{k}": v for k, v in list(metadata.items())[:64]})
        return Span(trace_id, None, None, 0, "other", where, line, attributes=kept_attributes(attributes))
    trace_id = _id(item.get("trace_id"), ".trace_id", fail)
    span_id = _id(item.get("id"), ".id", fail)
    parent = item.get("parent_id")
    parent_id = _id(parent, ".parent_id", fail) if parent is not None else None
    start, end = _time(item.get("started_at"), ".started_at", fail), _time(item.get("ended_at"), ".ended_at", fail)
    data = item.get("span_data")
    if not isinstance(data, Mapping):
        raise fail(".span_data", "expected an object with a type")
    kind = data.get("type")
    common: dict[str, Any] = {"where": where, "line": line, "end": end, "name": str(kind)[:60]}
    if kind == "generation":
        model = data.get("model") if isinstance(data.get("model"), str) else None
        inputs, outputs = messages.chat_list(data.get("input")), messages.chat_list(data.get("output"))
        failure = _error_text(item.get("error"), "the generation span recorded an error", fail)
        return Span(
            trace_id,
            span_id,
            parent_id,
            start,
            "llm",
            inputs=inputs,
            outputs=outputs,
            model=model,
            model_error=failure[:MAX_ATTRIBUTE_CHARS] if failure else None,
            **common,
        )
    if kind == "function":
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise fail(".span_data.name", f"a function span needs the tool's name, got {str(name)[:40]!r}")
        text = _error_text(item.get("error"), "the function span recorded an error", fail)
        tool = ToolUse(name, data.get("input"), None, data.get("output"), text is not None, text)
        return Span(trace_id, span_id, parent_id, start, "tool", tool=tool, **common)
    return Span(trace_id, span_id, parent_id, start, "other", **common)


def _error_text(error: Any, default: str, fail: Any) -> str | None:
    """The text of a span's ``error`` (``{"message", "data"}``, ``data.error`` appended), ``None`` for ``null``."""
    if error is None:
        return None
    if not isinstance(error, Mapping):
        raise fail(".error", "expected null or {message, data}")
    text = str(error.get("message") or default)
    detail = error.get("data")
    if isinstance(detail, Mapping) and isinstance(detail.get("error"), str):
        text = f"{text}: {detail['error']}"
    return text


def _id(value: Any, field: str, fail: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > 200:
        raise fail(field, f"expected an id, {'missing' if value is None else f'got {str(value)[:40]!r}'}")
    return value


def _time(value: Any, field: str, fail: Any) -> int:
    if value is None:
        return 0
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) and len(value) <= 40 else None
    except ValueError:
        moment = None
    if moment is None:
        raise fail(field, f"expected an ISO 8601 time, got {str(value)[:40]!r}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_EPOCH.tzinfo)
    return max(0, (moment - _EPOCH).days * 86_400_000_000_000 + (moment - _EPOCH).seconds * 10**9) + (
        moment.microsecond * 1000
    )
