"""Peak memory of ``prefix-exec score traces`` on a collector file of about 1 GB.

Writes an OTLP/JSON file as the Collector's file exporter would after a long day: the seven traces of
tests/data/traces/otel-genai.jsonl (the openai client with opentelemetry-instrumentation-openai-v2) copied with new
trace ids until the file holds ``--megabytes``, each copy's spans interleaved with the next copy's (so that no trace
is complete before the file's end), then scores it in a child process and prints the child's peak RSS
(``ru_maxrss``), wall time and how many traces were scored. The bound to hold: :data:`LIMIT_MB`.

Run: .venv/bin/python benchmarks/traces_memory.py [--megabytes 1024] [--workers 1]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "traces" / "otel-genai.jsonl"
TOOLS = ROOT / "examples" / "transcripts" / "tools.json"
LIMIT_MB = 1024


def write_file(path: Path, megabytes: int) -> int:
    """The collector file; returns the number of traces in it."""
    lines = SOURCE.read_text().splitlines()
    ids = sorted(
        {
            s["traceId"]
            for line in lines
            for r in json.loads(line)["resourceSpans"]
            for sc in r["scopeSpans"]
            for s in sc["spans"]
        }
    )
    copies = 0
    with path.open("w") as out:
        pending: list[str] | None = None
        while out.tell() < megabytes << 20:
            current = []
            for line in lines:
                for k, trace in enumerate(ids):
                    line = line.replace(trace, f"{copies:024x}{k:08x}")
                current.append(line)
            copies += 1
            if pending is None:
                pending = current
                continue
            for mine, theirs in zip(pending, current, strict=True):  # two copies' spans interleaved
                out.write(mine + "\n" + theirs + "\n")
            pending = None
        for line in pending or ():
            out.write(line + "\n")
    return copies * len(ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=1024)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "collector.jsonl"
        traces = write_file(path, args.megabytes)
        size = path.stat().st_size
        out = Path(folder) / "out.jsonl"
        command = [
            sys.executable,
            "-m",
            "prefix_exec",
            "score",
            "traces",
            str(path),
            "--tools",
            str(TOOLS),
            "--success-field",
            "shop.success",
            "--workers",
            str(args.workers),
            "--out",
            str(out),
        ]
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - started
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        scored = sum(1 for _ in out.open()) if out.exists() else 0
        print(
            f"file {size / (1 << 20):.0f} MiB, {traces} traces; exit {done.returncode}; {scored} records; "
            f"{seconds:.0f} s; peak RSS of the scoring process {peak:.0f} MiB (bound {LIMIT_MB} MiB)"
        )
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
        if peak > LIMIT_MB or done.returncode != 0:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
