"""``prefix-exec demo``: synthetic agents on BFCL ground truth, scored by the real BFCL environment, with a
calibration matrix and the full report. No key, no network."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from prefix_exec.cli.common import non_negative_int, positive_int, resample_count
from prefix_exec.extras import require


def register(commands: Any, name: str) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help="no-key demo: fault-injected BFCL ground truth, scored for real, with calibration and the report",
        description=(
            "Derive seeded, fault-injected rollouts from BFCL's multi-turn ground truth (one or more mutation "
            "operators per failure label), let three SYNTHETIC agents with different fault mixes stand in for "
            "methods, score them with the real BFCL environment, print the calibration matrix (injected "
            "against detected label and depth) and write the full report. Exits 1 if the scorer misses or "
            "mislabels a fault it should catch. Needs bfcl-eval's packaged data; no API key, no network."
        ),
    )
    parser.add_argument("--out", default="out/demo", metavar="DIR", help="output folder (default: %(default)s)")
    parser.add_argument(
        "--tasks", type=positive_int, default=200, help="first N of BFCL's 200 base tasks (default: %(default)s)"
    )
    parser.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="seed of the agents and the bootstrap, >= 0 (default: %(default)s)",
    )
    parser.add_argument(
        "--resamples", type=resample_count, default=10_000, help="bootstrap resamples (default: %(default)s)"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a non-empty folder an earlier demo or report did not write (files an "
        "earlier run listed in its files.json are replaced, others kept)",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    require("bfcl_eval", "mpmath", "matplotlib", why="the demo scores BFCL tasks and writes the full report")
    from prefix_exec.demo.pipeline import write_demo

    result = write_demo(args.out, tasks=args.tasks, seed=args.seed, resamples=args.resamples, overwrite=args.overwrite)
    n = len(result.records)
    print(
        f"prefix-exec demo: {n} SYNTHETIC rollouts scored in {result.seconds:.0f} s -> "
        f"{Path(args.out) / 'report.html'}",
        file=sys.stderr,
    )
    if not result.calibration.ok:
        print(
            f"prefix-exec demo: CALIBRATION FAILED: {len(result.calibration.misses)} faults missed or mislabelled:",
            file=sys.stderr,
        )
        for miss in result.calibration.misses[:50]:
            print(f"  {miss.describe()}", file=sys.stderr)
        return 1
    return 0
