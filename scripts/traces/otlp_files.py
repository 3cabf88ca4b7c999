"""OTLP/JSON files as the Collector's file exporter writes them, made with the OpenTelemetry SDK's own OTLP encoder
(scripts/traces/generate.py): a span exporter and a log exporter that append one export request per line (and, for
spans, the protobuf frames of the same requests)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any


# --- OTLP/JSON as the Collector's file exporter writes it --------------------------------------------------------
def _hex_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else _hex_ids(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def otlp_json(message: Any) -> str:
    from google.protobuf.json_format import MessageToDict

    return json.dumps(_hex_ids(MessageToDict(message, use_integers_for_enums=True)), separators=(",", ":"))


class FileExporters:
    """A span exporter and a log exporter that append OTLP/JSON lines (and protobuf frames) to files."""

    def __init__(self, path: Path, binpb: Path | None = None) -> None:
        self.path, self.binpb = path, binpb
        path.write_text("")
        if binpb is not None:
            binpb.write_bytes(b"")

    def span_exporter(self) -> Any:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

        owner = self

        class Spans(SpanExporter):  # type: ignore[misc]
            def export(self, spans: Any) -> Any:
                request = encode_spans(spans)
                with owner.path.open("a") as fh:
                    fh.write(otlp_json(request) + "\n")
                if owner.binpb is not None:
                    data = request.SerializeToString()
                    with owner.binpb.open("ab") as fh:
                        fh.write(len(data).to_bytes(4, "big") + data)
                return SpanExportResult.SUCCESS

            def shutdown(self) -> None:
                pass

        return Spans()

    def log_exporter(self) -> Any:
        from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
        from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

        owner = self

        class Logs(LogRecordExporter):  # type: ignore[misc]
            def export(self, batch: Any) -> Any:
                with owner.path.open("a") as fh:
                    fh.write(otlp_json(encode_logs(batch)) + "\n")
                return LogRecordExportResult.SUCCESS

            def shutdown(self) -> None:
                pass

            def force_flush(self, timeout_millis: int = 30_000) -> bool:
                return True

        return Logs()


def tracer_provider(exporters: FileExporters, *, logs: bool = False) -> tuple[Any, Any]:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    resource = Resource.create({"service.name": "shop-agent"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(exporters.span_exporter()))
    log_provider = None
    if logs:
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

        log_provider = LoggerProvider(resource=resource)
        log_provider.add_log_record_processor(SimpleLogRecordProcessor(exporters.log_exporter()))
    return provider, log_provider
