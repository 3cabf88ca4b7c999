"""OTLP/JSON as the OpenTelemetry Collector's file exporter writes it, read into spans (:mod:`.spans`).

Each line is one ``ExportTraceServiceRequest``: ``{"resourceSpans": [{"resource", "scopeSpans": [{"scope", "spans":
[...]}]}]}``, with ids in hex (``traceId`` 32 digits, ``spanId`` / ``parentSpanId`` 16, ``""`` for no parent), int64
values as decimal strings (``startTimeUnixNano``, ``intValue``) and enums as numbers (``status.code`` 2 = ERROR; the
names ``STATUS_CODE_ERROR`` are read too). A span's attributes go through its dialect's table (:mod:`.dialects`);
its error evidence is read here, the same for every dialect: status ERROR (its ``message``), an ``exception``
event (``exception.message``, ``exception.type``), or an ``error.type`` attribute: a tool span's recorded failure,
or a model span's (:attr:`~.spans.Span.model_error`, ``<type>: <text>``).

A line of logs (``{"resourceLogs": [...]}``) is read for its GenAI details events
(``gen_ai.client.inference.operation.details``, content captured as events rather than on spans: the model call's
``gen_ai.input.messages`` / ``gen_ai.output.messages``; a failed call's event has ``error.type``), each a model span
of its trace, the child of the span it was logged in; other log records (the v1.30
per-message events ``gen_ai.user.message``, ``gen_ai.choice``...) are counted, not read. A span of the wrong shape (no
trace id, a field of the wrong type) is an :class:`~prefix_exec.errors.InputError` naming the line and field
(``resourceSpans[0].scopeSpans[1].spans[3].traceId``); it loses that span only.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Mapping
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.importers.traces.attributes import AttributeProblem, json_text, key_values
from prefix_exec.importers.traces.dialects import GENAI, dialect_of
from prefix_exec.importers.traces.spans import MAX_ATTRIBUTE_CHARS, Span, ToolUse, kept_attributes
from prefix_exec.json_types import JsonMapping, JsonObject

NAME = "otlp"
LABEL = "OTLP/JSON spans"
#: Status codes that mean ERROR (OTLP/JSON writes the number; some writers the enum's name).
ERROR_CODES = (2, "2", "STATUS_CODE_ERROR", "ERROR")
#: Most spans read from one line (one export request).
MAX_SPANS_PER_LINE = 1_000_000
_HEX = frozenset("0123456789abcdefABCDEF")


def shows(data: Any) -> bool:
    """Whether a parsed line is an OTLP export (traces or logs)."""
    return isinstance(data, Mapping) and ("resourceSpans" in data or "resourceLogs" in data)


def spans(
    data: JsonMapping, path: str, line: int | None, full: Container[str] = ()
) -> Iterator[Span | InputError | str]:
    """Every span of one OTLP/JSON document, or the InputError of one that cannot be read; a span of a trace in
    ``full`` (past the per-trace limit, :mod:`.grouping`) is only counted: its trace id is yielded, unread."""
    count = 0
    for where, raw in _raw_spans(data, path, line):
        if isinstance(raw, InputError):
            yield raw
            continue
        count += 1
        if count > MAX_SPANS_PER_LINE:
            yield InputError(f"more than {MAX_SPANS_PER_LINE:,} spans in one line", path=path, line=line)
            return
        trace_id = raw.get("traceId") if isinstance(raw, Mapping) else None
        if isinstance(trace_id, str) and trace_id.lower() in full:
            yield trace_id.lower()
            continue
        try:
            yield span(raw, where, line)
        except AttributeProblem as exc:
            yield InputError(exc.message, path=path, line=line, field=f"{where}.{exc.field}", hint=_HINT)


_HINT = "OTLP/JSON as the Collector's file exporter writes it (docs/traces.md)"


def _raw_spans(data: JsonMapping, path: str, line: int | None) -> Iterator[tuple[str, Any]]:
    resources = data.get("resourceSpans", [])
    if not isinstance(resources, list):
        yield "", InputError("expected a list", path=path, line=line, field="resourceSpans", hint=_HINT)
        return
    for r, resource in enumerate(resources):
        scopes = resource.get("scopeSpans", []) if isinstance(resource, Mapping) else None
        if not isinstance(scopes, list):
            field = f"resourceSpans[{r}].scopeSpans"
            yield "", InputError("expected a list of scopes", path=path, line=line, field=field, hint=_HINT)
            continue
        for s, scope in enumerate(scopes):
            items = scope.get("spans", []) if isinstance(scope, Mapping) else None
            where = f"resourceSpans[{r}].scopeSpans[{s}]"
            if not isinstance(items, list):
                yield "", InputError("expected a list of spans", path=path, line=line, field=where, hint=_HINT)
                continue
            for k, item in enumerate(items):
                yield f"{where}.spans[{k}]", item


def span(raw: Any, where: str, line: int | None) -> Span:
    """One OTLP span; an :class:`AttributeProblem` for a field of the wrong shape."""
    if not isinstance(raw, Mapping):
        raise AttributeProblem("", "expected a span object")
    trace_id = _hex_id(raw.get("traceId"), "traceId", required=True)
    span_id = _hex_id(raw.get("spanId"), "spanId", required=False)
    parent_id = _hex_id(raw.get("parentSpanId"), "parentSpanId", required=False)
    start = _nanos(raw.get("startTimeUnixNano"), "startTimeUnixNano")
    end = _nanos(raw.get("endTimeUnixNano"), "endTimeUnixNano")
    name = raw.get("name", "")
    if not isinstance(name, str):
        raise AttributeProblem("name", "expected a string")
    attributes = key_values(raw.get("attributes"), "attributes")
    metadata = json_text(attributes.get("metadata"))  # OpenInference's metadata: one JSON object as text
    if isinstance(metadata, Mapping):
        attributes.update(
            {f"metadata.{k}": v for k, v in list(metadata.items())[:64] if f"metadata.{k}" not in attributes}
        )
    dialect = dialect_of(attributes)
    mapped = dialect.map(attributes, name) if dialect is not None else None
    common: dict[str, Any] = {
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_id": parent_id,
        "start": start,
        "end": end,
        "where": where,
        "line": line,
        "name": name[:200],
        "attributes": kept_attributes(attributes),
    }
    if mapped is None or mapped.kind == "other":
        return Span(kind="other", **common)
    error, text, kind = evidence(raw, attributes)
    if mapped.kind == "llm":
        failure = (f"{kind}: {text}" if kind and text and kind not in text else text) if error else None
        return Span(
            kind="llm",
            inputs=mapped.inputs,
            outputs=mapped.outputs,
            tools=mapped.tools,
            model=mapped.model,
            model_error=failure[:MAX_ATTRIBUTE_CHARS] if failure else None,
            **common,
        )
    tool = ToolUse(
        mapped.tool_name or "",
        mapped.arguments,
        mapped.call_id,
        mapped.result,
        error,
        text,
        kind,
    )
    return Span(kind="tool", tool=tool, **common)


def evidence(raw: JsonMapping, attributes: JsonObject) -> tuple[bool | None, str | None, str | None]:
    """``(error, text, type)`` a span records: status ERROR, an exception event, or ``error.type``."""
    status = raw.get("status")
    code = status.get("code") if isinstance(status, Mapping) else None
    message = status.get("message") if isinstance(status, Mapping) else None
    text = message if isinstance(message, str) and message else None
    kind = attributes.get("error.type") if isinstance(attributes.get("error.type"), str) else None
    failed = code in ERROR_CODES or kind is not None
    events = raw.get("events")
    for index, event in enumerate(events if isinstance(events, list) else ()):
        if isinstance(event, Mapping) and event.get("name") == "exception":
            found = key_values(event.get("attributes"), f"events[{index}].attributes")
            failed = True
            text = text or _str(found.get("exception.message"))
            kind = kind or _str(found.get("exception.type"))
    if not failed:
        return (False if code in (1, "1", "STATUS_CODE_OK", "OK") else None), None, None
    return True, text or kind or "the tool span recorded an error", kind


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _hex_id(value: Any, field: str, *, required: bool) -> str | None:
    if value in (None, "") and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > 64 or not set(value) <= _HEX:
        what = "missing" if value in (None, "") else f"got {str(value)[:40]!r}"
        raise AttributeProblem(field, f"expected a hex id, {what}")
    return value.lower()


def _nanos(value: Any, field: str) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and 0 < len(value) <= 20 and value.isdecimal():
        return int(value)
    raise AttributeProblem(field, f"expected nanoseconds as an integer or its decimal text, got {str(value)[:40]!r}")


#: The log event that carries a model call's messages (GenAI conventions): read as that call's model span.
DETAILS_EVENT = "gen_ai.client.inference.operation.details"


def log_spans(data: JsonMapping, path: str, line: int | None) -> Iterator[Span | InputError | None]:
    """Each GenAI details event of a ``resourceLogs`` document as a model span (its trace id and time, its attributes
    through the GenAI table); ``None`` for a log record of another kind (counted, not read)."""
    resources = data.get("resourceLogs")
    for r, resource in enumerate(resources if isinstance(resources, list) else ()):
        scopes = resource.get("scopeLogs") if isinstance(resource, Mapping) else None
        for s, scope in enumerate(scopes if isinstance(scopes, list) else ()):
            records = scope.get("logRecords") if isinstance(scope, Mapping) else None
            for k, record in enumerate(records if isinstance(records, list) else ()):
                where = f"resourceLogs[{r}].scopeLogs[{s}].logRecords[{k}]"
                try:
                    yield _log_span(record, where, line)
                except AttributeProblem as exc:
                    yield InputError(exc.message, path=path, line=line, field=f"{where}.{exc.field}", hint=_HINT)


def _log_span(record: Any, where: str, line: int | None) -> Span | None:
    if not isinstance(record, Mapping):
        raise AttributeProblem("", "expected a log record object")
    attributes = key_values(record.get("attributes"), "attributes")
    if record.get("eventName") != DETAILS_EVENT and "gen_ai.input.messages" not in attributes:
        return None
    trace_id = _hex_id(record.get("traceId"), "traceId", required=True)
    assert trace_id is not None
    start = _nanos(record.get("timeUnixNano") or record.get("observedTimeUnixNano"), "timeUnixNano")
    mapped = GENAI.map(attributes, "")
    failure = _str(attributes.get("error.type"))  # the event of a failed call names the error's type
    return Span(
        trace_id,
        None,
        _hex_id(record.get("spanId"), "spanId", required=False),
        start,
        "llm",
        where,
        line,
        name=DETAILS_EVENT,
        inputs=mapped.inputs,
        outputs=mapped.outputs,
        tools=mapped.tools,
        model=mapped.model,
        model_error=failure[:MAX_ATTRIBUTE_CHARS] if failure else None,
        attributes=kept_attributes(attributes),
    )
