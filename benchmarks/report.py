"""Time ``prefix-exec report`` on 10,000 and 50,000 synthetic records, against ``prefix-exec metrics``.

Records: ``tests/report/report_records.synthetic`` (10 models on one dataset, T in 1..12, about half failing,
tool calls with three arguments, an 80-character reason at each first failure), written to a records file.
Both commands read that file and bootstrap with the same resamples; the baseline, ``prefix-exec metrics``
(read, summarize, print Table 2), is what the report must do anyway, so the ratio report / metrics is the
cost of the tables, figures and report.html on top of it. Sizes are per 1,000 rollouts: report.html alone,
and the records file for scale.

Prints one line per size and, as its last line, the ratio at the largest size.
Run: .venv/bin/python benchmarks/report.py [--sizes 10000,50000] [--resamples 10000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "report"))

from report_records import synthetic

from prefix_exec.cli import main as cli
from prefix_exec.records.codec import write_records


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = cli(argv)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,50000", help="record counts, comma-separated")
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    ratio = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            records = Path(tmp) / f"records-{n}.jsonl"
            write_records(records, synthetic(n, conditions=10))
            base = timed(["metrics", str(records), "--resamples", str(args.resamples)])
            out = Path(tmp) / f"report-{n}"
            ours = timed(["report", str(records), "--out", str(out), "--resamples", str(args.resamples)])
            html_mb = (out / "report.html").stat().st_size / 1e6
            records_mb = records.stat().st_size / 1e6
            ratio = ours / base
            print(
                f"{n} records, {args.resamples} resamples: report {ours:.1f} s ({ours / n * 1000:.2f} s per 1,000 "
                f"rollouts), report.html {html_mb:.2f} MB ({html_mb / n * 1000:.3f} MB per 1,000; records file "
                f"{records_mb / n * 1000:.3f} MB per 1,000); baseline prefix-exec metrics {base:.1f} s"
            )
    print(f"report / metrics time ratio at the largest size: {ratio:.2f}")


if __name__ == "__main__":
    main()
