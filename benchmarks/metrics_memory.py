"""Peak memory of ``prefix-exec metrics`` on 100,000 tasks at 10,000 resamples (the chunked bootstrap).

Writes a records file of one condition over 100,000 tasks (plus a second method, so paired draws are shared),
runs ``prefix-exec metrics`` on it in a child process, and prints the child's peak RSS (``ru_maxrss``) and
wall time. Without chunking, the resample-count matrix alone is 10,000 x 100,000 int64 = 8 GB (and about
three copies of it were alive at once); the bound to hold is 2 GB.

Run: .venv/bin/python benchmarks/metrics_memory.py [--tasks 100000] [--resamples 10000]
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

import numpy as np

LIMIT_MB = 2048


def write_records(path: Path, tasks: int, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    rows = 0
    with path.open("w", encoding="utf-8") as out:
        for method in ("react", "dual-loop"):
            T = rng.integers(1, 30, tasks)
            fail = rng.random(tasks) < 0.4
            fed = np.where(fail, rng.integers(1, T + 1), T + 1)
            y = (rng.random(tasks) < 0.6).astype(int)
            for i in range(tasks):
                out.write(
                    json.dumps(
                        {
                            "dataset": "bench",
                            "task_id": f"t{i}",
                            "model": "m",
                            "method": method,
                            "trial": 0,
                            "T": int(T[i]),
                            "fed": int(fed[i]),
                            "success": int(y[i]),
                        }
                    )
                    + "\n"
                )
                rows += 1
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "records.jsonl"
        rows = write_records(records, args.tasks)
        start = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "prefix_exec.cli",
                "metrics",
                str(records),
                "--resamples",
                str(args.resamples),
                "--format",
                "json",
                "--out",
                str(Path(tmp) / "metrics.json"),
                "--compare",
                "dual-loop:react",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"metrics failed ({done.returncode}): {done.stderr[-2000:]}")
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    print(
        f"prefix-exec metrics: {args.tasks:,} tasks x 2 methods ({rows:,} records), {args.resamples:,} "
        f"resamples: {seconds:.1f} s"
    )
    print(
        f"peak RSS {peak_mb:,.0f} MiB (bound {LIMIT_MB:,} MiB; the unchunked count matrix alone: "
        f"{args.resamples * args.tasks * 8 / 2**20:,.0f} MiB)"
    )
    if peak_mb > LIMIT_MB:
        sys.exit("over the bound")


if __name__ == "__main__":
    main()
