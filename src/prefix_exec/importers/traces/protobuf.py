"""OTLP protobuf files (``.pb``, ``.binpb``), read through the official ``opentelemetry-proto`` classes (the ``otlp``
extra) into the same documents as OTLP/JSON (:mod:`.otlp`).

A file is what the Collector's file exporter writes with ``format: proto``: each export request preceded by its
length as a 4-byte big-endian integer. Each frame is tried as an ``ExportTraceServiceRequest``, then as an
``ExportLogsServiceRequest`` (a frame that parses as both is taken by what it holds), turned into OTLP/JSON's form by
protobuf's JSON mapping (ids in hex, enums as numbers, int64 as strings) and yielded with its frame number as its
"line". A frame longer than :data:`MAX_FRAME_BYTES`, a truncated frame or one that is neither request is an
:class:`~prefix_exec.errors.InputError` naming the file and frame; a truncated length ends the file.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.extras import require

#: The file names read as protobuf.
SUFFIXES = (".pb", ".binpb")
#: Largest frame read, in bytes (the bound of one OTLP/JSON line).
MAX_FRAME_BYTES = 64 * 1024 * 1024
_IDS = ("traceId", "spanId", "parentSpanId")


def frames(path: Path) -> Iterator[tuple[int, Any]]:
    """``(frame number, OTLP/JSON document or InputError)`` of each frame of a protobuf file."""
    require("opentelemetry.proto", why="reading OTLP protobuf trace files")
    traces = importlib.import_module("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    logs = importlib.import_module("opentelemetry.proto.collector.logs.v1.logs_service_pb2")
    json_format = importlib.import_module("google.protobuf.json_format")
    with path.open("rb") as fh:
        number = 0
        while True:
            head = fh.read(4)
            if len(head) < 4:
                return
            number += 1
            size = int.from_bytes(head, "big")
            if size > MAX_FRAME_BYTES:
                yield (
                    number,
                    InputError(
                        f"a frame of {size:,} bytes, more than {MAX_FRAME_BYTES:,}", path=path, line=number, hint=_HINT
                    ),
                )
                return
            data = fh.read(size)
            if len(data) < size:
                yield number, InputError("a truncated frame", path=path, line=number, hint=_HINT)
                return
            yield (
                number,
                _document(
                    data, (traces.ExportTraceServiceRequest, logs.ExportLogsServiceRequest), json_format, path, number
                ),
            )


_HINT = "the Collector's file exporter with format: proto (4-byte big-endian length, then the request)"


def _document(data: bytes, kinds: tuple[Any, ...], json_format: Any, path: Path, number: int) -> Any:
    for kind in kinds:
        try:
            message = kind.FromString(data)
        except Exception:  # protobuf's DecodeError, or a RecursionError for nesting it refuses
            continue
        document = json_format.MessageToDict(message, use_integers_for_enums=True)
        if document:
            return _hex(document)
    return InputError("neither an OTLP trace nor logs export request", path=path, line=number, hint=_HINT)


def _hex(node: Any) -> Any:
    """protobuf's JSON mapping writes bytes as base64; OTLP/JSON writes ids in hex."""
    if isinstance(node, dict):
        return {k: base64.b64decode(v).hex() if k in _IDS and isinstance(v, str) else _hex(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_hex(v) for v in node]
    return node
