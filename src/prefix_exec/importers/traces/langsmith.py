"""LangSmith runs, read into spans (:mod:`.spans`): one run per line, or a run tree (``child_runs``).

The table, for a run ``{"id", "trace_id", "parent_run_id", "run_type", "name", "start_time", "inputs", "outputs",
"error", "extra": {"metadata"}, "child_runs"}``:

- ``run_type`` ``llm`` / ``chat_model``: a model call; ``inputs.messages`` (a list, or LangChain's list of lists)
  and ``outputs.generations[0][k].message`` (or ``outputs.choices[k].message``) are the messages, each a Chat
  message or a serialized LangChain message (``{"lc": 1, "id": [..., "AIMessage"], "kwargs": {"content",
  "tool_calls": [{"name", "args", "id"}], "tool_call_id"}}``, or ``{"type": "ai", "data": {...}}``); ``error``
  (text) is the call's failure (:attr:`~.spans.Span.model_error`);
- ``tool``: a tool execution: ``name``; the arguments ``inputs`` (``inputs.input`` when that is all it holds);
  the result ``outputs.output`` (a serialized ``ToolMessage`` gives the call id and content); ``error`` (text) the
  recorded failure;
- anything else (``chain``, ``retriever``, ``prompt``, ``parser``): ``other``; ``extra.metadata.<key>`` and
  ``session_id`` are its identity attributes (``metadata.<key>``); its ``error``, of whatever type, is not read.

A run tree is walked with an explicit stack, at most :data:`MAX_RUNS` runs (a cycle of shared objects cannot
occur in parsed JSON). Times are ISO 8601.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.importers.traces.agents_sdk import _time
from prefix_exec.importers.traces.attributes import json_text
from prefix_exec.importers.traces.spans import MAX_ATTRIBUTE_CHARS, Span, ToolUse, kept_attributes
from prefix_exec.json_types import JsonObject, JsonValue

NAME = "langsmith"
LABEL = "LangSmith runs"
#: Most runs read from one run tree.
MAX_RUNS = 100_000
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}
_HINT = "LangSmith runs as the client's list_runs or a run tree write them (docs/traces.md)"


def shows(data: Any) -> bool:
    """Whether a parsed record is a LangSmith run."""
    return isinstance(data, Mapping) and "run_type" in data and ("inputs" in data or "outputs" in data)


def spans(data: Mapping[str, Any], path: str, line: int | None, prefix: str) -> Iterator[Span | InputError]:
    """The run and its child runs, each as a span, or the InputError of one that cannot be read."""
    stack: list[tuple[Any, str, str | None, str | None]] = [(data, prefix.rstrip("."), None, None)]
    seen = 0
    while stack and seen < MAX_RUNS:
        run, where, parent, trace = stack.pop()
        seen += 1
        try:
            span = _span(run, where, path, line, parent, trace)
        except InputError as exc:
            yield exc
            continue
        yield span
        children = run.get("child_runs") if isinstance(run, Mapping) else None
        if isinstance(children, list):
            stack.extend(
                (child, f"{where}.child_runs[{k}]".lstrip("."), span.span_id, span.trace_id)
                for k, child in reversed(list(enumerate(children)))
            )
    if stack:
        yield InputError(f"a run tree of more than {MAX_RUNS:,} runs", path=path, line=line, hint=_HINT)


def _span(run: Any, where: str, path: str, line: int | None, parent: str | None, trace: str | None) -> Span:
    def fail(field: str, message: str) -> InputError:
        return InputError(message, path=path, line=line, field=f"{where}.{field}".strip(".") or None, hint=_HINT)

    if not isinstance(run, Mapping):
        raise fail("", "expected a run object")
    run_id = _id(run.get("id"), "id", fail)
    trace_id = _id(run.get("trace_id") or trace or run_id, "trace_id", fail)
    parent_id = run.get("parent_run_id") or parent
    if parent_id is not None and not isinstance(parent_id, str):
        raise fail("parent_run_id", "expected an id")
    start = _time(run.get("start_time"), "start_time", lambda f, m: fail(f, m))
    end = _time(run.get("end_time"), "end_time", lambda f, m: fail(f, m))
    attributes: JsonObject = {"session_id": run.get("session_id")} if run.get("session_id") else {}
    extra = run.get("extra")
    metadata = extra.get("metadata") if isinstance(extra, Mapping) else None
    if isinstance(metadata, Mapping):
        attributes.update({f"metadata.{k}": v for k, v in list(metadata.items())[:64]})
    given = run.get("name")
    name = given if isinstance(given, str) else ""
    common: dict[str, Any] = {"where": where, "line": line, "end": end, "name": name[:200]}
    common["attributes"] = kept_attributes(attributes)
    kind = run.get("run_type")
    inputs, outputs = run.get("inputs"), run.get("outputs")
    if kind in ("llm", "chat_model"):
        error = _error(run, fail)
        model = metadata.get("ls_model_name") if isinstance(metadata, Mapping) else None
        return Span(
            trace_id,
            run_id,
            parent_id,
            start,
            "llm",
            inputs=_inputs(inputs),
            outputs=_outputs(outputs),
            model=model if isinstance(model, str) else None,
            model_error=error[:MAX_ATTRIBUTE_CHARS] if error else None,
            **common,
        )
    if kind == "tool":
        error = _error(run, fail)
        call_id, result = _tool_output(outputs)
        arguments = inputs.get("input") if isinstance(inputs, Mapping) and list(inputs) == ["input"] else inputs
        tool = ToolUse(
            name or "", json_text(arguments), call_id, result, bool(error) if error is not None else None, error or None
        )
        return Span(trace_id, run_id, parent_id, start, "tool", tool=tool, **common)
    return Span(trace_id, run_id, parent_id, start, "other", **common)


def _error(run: Mapping[str, Any], fail: Any) -> str | None:
    """A model or tool run's ``error``: its text, ``None`` when null; an InputError for another type."""
    error = run.get("error")
    if error is not None and not isinstance(error, str):
        raise fail("error", "expected text or null")
    return error


def _id(value: Any, field: str, fail: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > 200:
        raise fail(field, f"expected an id, {'missing' if value is None else f'got {str(value)[:40]!r}'}")
    return value


def _inputs(inputs: Any) -> tuple[JsonObject, ...] | None:
    found = inputs.get("messages") if isinstance(inputs, Mapping) else None
    if isinstance(found, list) and found and isinstance(found[0], list):
        found = found[0]
    return tuple(_message(m) for m in found) if isinstance(found, list) else None


def _outputs(outputs: Any) -> tuple[JsonObject, ...] | None:
    if not isinstance(outputs, Mapping):
        return None
    generations = outputs.get("generations")
    if isinstance(generations, list) and generations and isinstance(generations[0], list):
        return tuple(_message(g.get("message") if isinstance(g, Mapping) else None) for g in generations[0])
    choices = outputs.get("choices")
    if isinstance(choices, list):
        return tuple(_message(c.get("message") if isinstance(c, Mapping) else None) for c in choices)
    return None


def _message(message: Any) -> JsonObject:
    """A Chat message, a serialized LangChain message, or a ``{type, data}`` message dict, in Chat form."""
    if not isinstance(message, Mapping):
        return {"role": None}
    if "role" in message:
        return dict(message)
    if isinstance(message.get("kwargs"), Mapping):  # {"lc": 1, "id": [..., "AIMessage"], "kwargs": {...}}
        ids = message.get("id")
        last = ids[-1] if isinstance(ids, list) and ids and isinstance(ids[-1], str) else ""
        body, kind = message["kwargs"], last.removesuffix("MessageChunk").removesuffix("Message").lower()
    else:
        data = message.get("data")
        body, kind = (data if isinstance(data, Mapping) else {}), str(message.get("type"))
    said: JsonObject = {"role": _ROLES.get(str(kind), kind), "content": body.get("content")}
    calls = body.get("tool_calls")
    if isinstance(calls, list) and calls:
        said["tool_calls"] = [_call(c) for c in calls]
    if body.get("tool_call_id") is not None:
        said["tool_call_id"] = body.get("tool_call_id")
    return said


def _call(call: Any) -> JsonObject:
    if not isinstance(call, Mapping):
        return {"id": None, "function": None}
    if isinstance(call.get("function"), Mapping):
        return dict(call)
    return {
        "id": call.get("id"),
        "type": "function",
        "function": {"name": call.get("name"), "arguments": call.get("args")},
    }


def _tool_output(outputs: Any) -> tuple[str | None, JsonValue]:
    output = outputs.get("output") if isinstance(outputs, Mapping) and "output" in outputs else outputs
    if isinstance(output, Mapping) and isinstance(output.get("kwargs"), Mapping):
        body = output["kwargs"]
        call_id = body.get("tool_call_id")
        return (call_id if isinstance(call_id, str) and call_id else None), body.get("content")
    return None, output
