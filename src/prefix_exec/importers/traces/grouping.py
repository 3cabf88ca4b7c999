"""Spans grouped per trace, in bounded memory.

A trace's spans may be spread over a whole collector file (the file exporter writes batches as they come), so a
trace is complete only at the file's end. :func:`traces` keeps spans in memory, per trace in order of first
appearance, until they number :data:`MAX_HELD_SPANS`; past that it spills every span to :data:`BUCKETS` temporary
files by trace id (``pickle``, in a private temporary folder removed at the end) and then reads one bucket at a
time, so memory holds about a bucket's spans: a 1 GB file in ~1/64 of it. Then traces come bucket by bucket (in
order of first appearance within a bucket).

One trace keeps at most :data:`MAX_SPANS_PER_TRACE` spans; a trace with more is reported as one InputError (its
first line named) and not scored (a million spans in one trace cost a counter, not memory).
"""

from __future__ import annotations

import pickle
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from prefix_exec.errors import InputError
from prefix_exec.importers.traces.spans import Span

#: Spans held in memory before the grouping spills to disk.
MAX_HELD_SPANS = 20_000
#: Temporary files a spilled file's spans are spread over, by trace id.
BUCKETS = 64
#: Most spans one trace may have; one with more is reported and not scored.
MAX_SPANS_PER_TRACE = 50_000


@dataclass
class Trace:
    """The spans of one trace, as read (``dropped``: spans past :data:`MAX_SPANS_PER_TRACE`, not kept)."""

    trace_id: str
    spans: list[Span] = field(default_factory=list)
    dropped: int = 0


def traces(
    items: Iterable[Span | InputError | str],
    path: str,
    *,
    held: int = MAX_HELD_SPANS,
    per_trace: int = MAX_SPANS_PER_TRACE,
    full: set[str] | None = None,
) -> Iterator[Trace | InputError]:
    """Each trace of ``items`` whole (module docstring); an InputError in ``items`` is passed on at once, and a trace
    over ``per_trace`` spans becomes an InputError in its place. The ids of traces past the limit are added to
    ``full``, so that a reader may pass the trace id alone (a ``str``) for their further spans, unread."""
    groups: dict[str, Trace] = {}
    counts: dict[str, int] = {}
    spill: _Spill | None = None
    total = 0
    for item in items:
        if isinstance(item, InputError):
            yield item
            continue
        trace_id = item if isinstance(item, str) else item.trace_id
        counts[trace_id] = counts.get(trace_id, 0) + 1
        if counts[trace_id] > per_trace or isinstance(item, str):
            if full is not None:
                full.add(trace_id)
            continue
        if spill is not None:
            spill.add(item)
            continue
        groups.setdefault(item.trace_id, Trace(item.trace_id)).spans.append(item)
        total += 1
        if total > held:
            spill = _Spill()
            for trace in groups.values():
                for span in trace.spans:
                    spill.add(span)
            groups.clear()
    try:
        found = groups.values() if spill is None else spill.read()
        for trace in found:
            trace.dropped = max(0, counts[trace.trace_id] - per_trace)
            yield _checked(trace, path, per_trace)
    finally:
        if spill is not None:
            spill.close()


def _checked(trace: Trace, path: str, per_trace: int) -> Trace | InputError:
    if not trace.dropped:
        return trace
    first = trace.spans[0]
    return InputError(
        f"trace {trace.trace_id[:40]} has {len(trace.spans) + trace.dropped:,} spans, more than {per_trace:,}",
        path=path,
        line=first.line,
        field=first.where or None,
        hint="a trace this large is not one agent run; split it, or score its conversations as transcripts",
    )


class _Spill:
    """Spans spread over bucket files by trace id, read back one bucket at a time."""

    def __init__(self) -> None:
        self.folder = tempfile.TemporaryDirectory(prefix="prefix-exec-traces-")
        self.files: list[BinaryIO] = [(Path(self.folder.name) / f"{k}.pickle").open("w+b") for k in range(BUCKETS)]

    def add(self, span: Span) -> None:
        bucket = zlib.crc32(span.trace_id.encode("utf-8", "replace")) % BUCKETS
        pickle.dump(span, self.files[bucket], protocol=pickle.HIGHEST_PROTOCOL)

    def read(self) -> Iterator[Trace]:
        for handle in self.files:
            handle.flush()
            handle.seek(0)
            groups: dict[str, Trace] = {}
            while True:
                try:
                    span = pickle.load(handle)  # our own file, written above
                except EOFError:
                    break
                groups.setdefault(span.trace_id, Trace(span.trace_id)).spans.append(span)
            handle.truncate(0)
            yield from groups.values()

    def close(self) -> None:
        for handle in self.files:
            handle.close()
        self.folder.cleanup()
