"""What ``prefix-exec infer-spec`` costs against ``prefix-exec score transcripts`` on the same input (issue 41).

The corpus is tau-bench's 200 published gpt-4o airline conversations (tests/data/tau-bench), ``--conversations /
200`` times over, written as one JSONL file into a temporary folder: copy k renumbers its trials (trial + 4k) and
makes its ids its own (every run of three or more digits after a letter or ``_`` gets ``xK``: ``mia_li_3668`` ->
``mia_li_3668x7``, ``HAT069`` -> ``HAT069x7``, in the messages and the results alike), so the distinct values grow
with the corpus as a real one's do. About 20 KB of disk per conversation.

Each repeat runs, as a user would (a fresh process each), ``infer-spec CORPUS --tools TOOLS --out SIDE.yaml`` and
``score transcripts CORPUS --tools TOOLS --model gpt-4o --workers 1 --out RECORDS.jsonl`` (the baseline: it reads
the same conversations and replays them on the tools list alone), in turn; prints each one's median wall time and
peak memory (the child's own ``ru_maxrss``) and the ratio of the medians. ``--bound N`` then runs infer-spec once on
N conversations (100,000 for the issue's bound) and prints its time and peak memory: the memory does not grow with
the corpus (the evidence is capped; docs/custom.md). The load average is printed first and last: on a busy machine
the ratio, measured in the same run, says more than the times. Run::

    .venv/bin/python benchmarks/infer_spec.py [--conversations 10000] [--repeats 3] [--bound 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TAU_BENCH = REPO / "tests" / "data" / "tau-bench"
_IDS = re.compile(r"(?<=[A-Za-z_])(\d{3,})")


def corpus(folder: Path, conversations: int) -> Path:
    """The corpus file (module docstring) of ``conversations`` conversations, a multiple of 200."""
    base = json.loads((TAU_BENCH / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    path = folder / f"corpus-{conversations}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for copy in range(conversations // len(base)):
            for record in base:
                line = json.dumps({**record, "trial": record["trial"] + 4 * copy})
                out.write(_IDS.sub(lambda m, k=copy: f"{m.group(1)}x{k}", line) + "\n")
    return path


def timed(argv: list[str]) -> tuple[float, float]:
    """``(seconds, peak MiB)`` of one ``prefix-exec`` process (its own peak resident memory)."""
    start = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "prefix_exec", *argv], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"prefix-exec {' '.join(argv[:2])} failed (exit {os.waitstatus_to_exitcode(status)})")
    return seconds, usage.ru_maxrss / 1024


def runs(path: Path, folder: Path) -> dict[str, list[str]]:
    tools = str(TAU_BENCH / "airline-tools.json")
    return {
        "infer-spec": ["infer-spec", str(path), "--tools", tools, "--out", str(folder / "side.yaml"), "--overwrite"],
        "score transcripts": [
            *("score", "transcripts", str(path), "--tools", tools, "--model", "gpt-4o", "--workers", "1"),
            *("--out", str(folder / "records.jsonl"), "--overwrite"),
        ],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=10_000, help="a multiple of 200 (default: 10000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bound", type=int, default=0, help="then infer-spec once on this many conversations")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cpus", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        path = corpus(folder, args.conversations)
        print(f"corpus: {args.conversations:,} conversations, {path.stat().st_size / 2**20:,.0f} MiB", flush=True)
        seen: dict[str, list[tuple[float, float]]] = {name: [] for name in runs(path, folder)}
        for _ in range(args.repeats):
            for name, argv in runs(path, folder).items():
                seen[name].append(timed(argv))
                print(f"  {name}: {seen[name][-1][0]:.1f} s, {seen[name][-1][1]:.0f} MiB", flush=True)
        medians = {name: statistics.median(s for s, _ in times) for name, times in seen.items()}
        for name, times in seen.items():
            print(f"{name}: median {medians[name]:.1f} s, peak {max(m for _, m in times):.0f} MiB")
        print(f"ratio infer-spec / score transcripts: {medians['infer-spec'] / medians['score transcripts']:.2f}")
        if args.bound:
            path.unlink()
            big = corpus(folder, args.bound)
            size = big.stat().st_size / 2**20
            seconds, peak = timed(runs(big, folder)["infer-spec"])
            print(f"infer-spec on {args.bound:,} conversations ({size:,.0f} MiB): {seconds:.0f} s, peak {peak:.0f} MiB")
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
