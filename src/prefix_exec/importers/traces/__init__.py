"""Traces as agent frameworks write them, as rollouts: one rollout per trace.

Each format has one reader that maps what it reads onto one span model (:mod:`.spans`): OTLP/JSON spans with their
attribute dialects (:mod:`.otlp`, :mod:`.dialects`: the GenAI conventions, OpenInference, MLflow), the OpenAI
Agents SDK's export (:mod:`.agents_sdk`) and LangSmith runs (:mod:`.langsmith`). Spans are grouped per trace in
bounded memory (:mod:`.grouping`), each trace becomes one conversation in OpenAI Chat form (:mod:`.conversation`),
and the transcripts decoder (:mod:`prefix_exec.importers.transcripts.decoder`) builds its rollout, as for any
transcript. A file's format is detected from its first record (see :func:`reader_of`).

A span, run or line that cannot be read is an :class:`~prefix_exec.errors.InputError` naming the file, line and
field; it loses that span only (its trace is read without it). A trace that cannot be made a rollout loses that
trace only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.importers.traces import agents_sdk, langsmith, otlp, protobuf
from prefix_exec.importers.traces.conversation import (
    MODEL_ATTRIBUTES,
    TASK_ATTRIBUTES,
    attribute,
    conversation,
    conversations,
    read,
    success_value,
)
from prefix_exec.importers.traces.grouping import Trace, traces
from prefix_exec.importers.traces.spans import Span
from prefix_exec.importers.transcripts import Identity, Transcript, transcript_of
from prefix_exec.importers.transcripts.formats import Reader
from prefix_exec.json_types import JsonObject, loads
from prefix_exec.records.jsonl import MAX_LINE_CHARS, check_regular_file, iter_json_lines

__all__ = ["FORMATS", "READER", "TraceFile", "TraceIdentity"]

#: The transcripts reader every trace's conversation is decoded by (Chat messages, replies flagged by tool spans).
READER = Reader("traces", "traces", read)
#: The trace formats read, by name: their labels.
FORMATS = {
    otlp.NAME: otlp.LABEL,
    "otlp-protobuf": "OTLP protobuf (the otlp extra)",
    agents_sdk.NAME: agents_sdk.LABEL,
    langsmith.NAME: langsmith.LABEL,
}


@dataclass(frozen=True)
class TraceIdentity:
    """Where a trace's identity comes from: ``task_field`` / ``success_field`` name span attributes
    (``--task-id-field``, ``--success-field``), ``identity`` the fixed values and defaults (model, method, trial,
    dataset) as for transcripts. Without ``success_field`` Y is not read from the trace: with a ``None`` default
    for ``success`` in ``identity``, the rollouts' Y is absent
    (:attr:`~prefix_exec.trajectory.Rollout.success_absent`)."""

    identity: Identity
    task_field: str | None = None
    success_field: str | None = None


class TraceFile:
    """The traces of one file, read lazily: iterate for :class:`Transcript` (or, with ``tolerant``, the InputError
    of a span or trace that cannot be read, in its place; without it, that error is raised). After iterating,
    :attr:`format` is the format read and :attr:`read` the number of traces read."""

    def __init__(self, path: str | Path, identity: TraceIdentity, *, tolerant: bool) -> None:
        self.path = Path(path)
        self.identity = identity
        self.tolerant = tolerant
        self.format: str | None = None
        self.read = 0
        self.logs = 0
        self._full: set[str] = set()  # traces past the per-trace limit: their further spans are counted, not read

    def __iter__(self) -> Iterator[Transcript | InputError]:
        for item in traces(self._spans(), str(self.path), full=self._full):
            parts = [(None, item)] if isinstance(item, InputError) else self._split(item)
            for conversation_id, part in parts:
                try:
                    if isinstance(part, InputError):
                        raise part
                    transcript = self.transcript(part, conversation_id)
                except InputError as exc:
                    if not self.tolerant:
                        raise
                    yield exc
                    continue
                self.read += 1
                yield transcript

    @staticmethod
    def _split(trace: Trace) -> list[tuple[str | None, Trace | InputError]]:
        groups = conversations(trace.spans)
        if len(groups) == 1:
            return [(None, trace)]
        return [(name, Trace(trace.trace_id, spans)) for name, spans in groups]

    def transcript(self, trace: Trace, conversation_id: str | None = None) -> Transcript:
        """One trace's rollout (:mod:`.conversation`), or one conversation's when the trace holds several (its task id
        that conversation's id, unless --task-id-field names one); an InputError naming the trace's first span
        otherwise."""
        first = min(trace.spans, key=lambda s: s.line or 0)
        record = conversation(trace.spans)
        record.update(self._identity(trace.spans, trace.trace_id, first))
        if conversation_id is not None and not self.identity.task_field:
            record["task_id"] = conversation_id
        record["trace_id"] = trace.trace_id
        prefix = f"trace {trace.trace_id[:40]}: "
        found = transcript_of(
            record, self.identity.identity, reader=READER, path=str(self.path), line=first.line, prefix=prefix
        )
        metadata = {**found.rollout.metadata, "trace_id": trace.trace_id}
        if conversation_id is not None:
            metadata["conversation_id"] = conversation_id
        return replace(found, rollout=replace(found.rollout, metadata=metadata))

    def _identity(self, spans: list[Span], trace_id: str, first: Span) -> JsonObject:
        found: JsonObject = {}
        named = self.identity.task_field
        task = attribute(spans, (named,) if named else TASK_ATTRIBUTES)
        if named and task is None:
            raise self._fail(first, trace_id, f"no span carries the attribute {named!r} (--task-id-field)")
        found["task_id"] = str(task)[:200] if isinstance(task, (str, int)) and not isinstance(task, bool) else trace_id
        model = next((s.model for s in spans if s.model), None) or attribute(spans, MODEL_ATTRIBUTES)
        if isinstance(model, str) and model:
            found["model"] = model
        if self.identity.success_field:
            value = attribute(spans, (self.identity.success_field,))
            success = success_value(value)
            if success is None:
                what = "no span carries it" if value is None else f"got {str(value)[:40]!r}"
                raise self._fail(
                    first,
                    trace_id,
                    f"success attribute {self.identity.success_field!r}: {what}",
                    hint="--success-field names a span attribute holding true/false or 0/1",
                )
            found["success"] = success
        return found

    def _fail(self, first: Span, trace_id: str, message: str, hint: str | None = None) -> InputError:
        return InputError(message, path=self.path, line=first.line, field=f"trace {trace_id[:40]}", hint=hint)

    def _spans(self) -> Iterator[Span | InputError | str]:
        for line, prefix, data in self._records():
            if isinstance(data, InputError):
                yield data
                continue
            yield from self._spans_of(data, line, prefix)

    def _spans_of(self, data: Any, line: int | None, prefix: str) -> Iterator[Span | InputError | str]:
        if otlp.shows(data):
            self.format = self.format or otlp.NAME
            yield from otlp.spans(data, str(self.path), line, self._full)
            for found in otlp.log_spans(data, str(self.path), line):
                if found is None:
                    self.logs += 1
                else:
                    yield found
        elif agents_sdk.shows(data):
            self.format = self.format or agents_sdk.NAME
            payload = isinstance(data.get("data"), list)
            items = data["data"] if payload else [data]
            for index, item in enumerate(items):
                where = f"{prefix}data[{index}]" if payload else prefix.rstrip(".")
                try:
                    yield (
                        agents_sdk.span(item, where, str(self.path), line)
                        if isinstance(item, Mapping)
                        else (
                            InputError(
                                "expected an exported trace or span object", path=self.path, line=line, field=where
                            )
                        )
                    )
                except InputError as exc:
                    yield exc
        elif langsmith.shows(data):
            self.format = self.format or langsmith.NAME
            yield from langsmith.spans(data, str(self.path), line, prefix)
        else:
            yield InputError(
                f"not a trace record: {_described(data)}",
                path=self.path,
                line=line,
                field=prefix.rstrip(".") or None,
                hint='accepted: OTLP/JSON lines ({"resourceSpans": [...]}), the Agents SDK\'s exported items '
                '({"object": "trace.span"}) or ingest payload ({"data": [...]}), LangSmith runs '
                '({"run_type", "inputs", "outputs"}); see docs/traces.md',
            )

    def _records(self) -> Iterator[tuple[int | None, str, Any]]:
        if self.path.suffix in protobuf.SUFFIXES:
            check_regular_file(self.path)
            self.format = "otlp-protobuf"
            for number, document in protobuf.frames(self.path):
                yield number, "", document
            return
        if self.path.suffix != ".json":
            for number, data in iter_json_lines(self.path, tolerant=True):
                yield number, "", data
            return
        check_regular_file(self.path)
        if self.path.stat().st_size > MAX_LINE_CHARS:
            raise InputError(
                f"a .json file larger than {MAX_LINE_CHARS:,} bytes",
                path=self.path,
                hint="write it as JSON lines, one export or span per line",
            )
        try:
            data = loads(self.path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            if isinstance(exc, json.JSONDecodeError) and exc.msg == "Extra data":
                for number, item in iter_json_lines(self.path, tolerant=True):
                    yield number, "", item
                return
            raise InputError(f"not JSON ({str(exc)[:80]})", path=self.path) from None
        if isinstance(data, list):
            for index, item in enumerate(data):
                yield None, f"[{index}].", item
        else:
            yield None, "", data

    def note(self) -> str:
        """What was read, for the log."""
        logs = f"; {self.logs} log records of other kinds not read" if self.logs else ""
        if not self.read:
            return f"prefix-exec: note: {self.path}: no trace read{logs}"
        label = FORMATS.get(self.format or "", "traces")
        return f"prefix-exec: note: {self.path}: {self.read} trace{'s' if self.read != 1 else ''} read as {label}{logs}"


def _described(data: Any) -> str:
    if isinstance(data, Mapping):
        return "an object with keys " + ", ".join(str(k)[:30] for k in list(data)[:6])
    return type(data).__name__
