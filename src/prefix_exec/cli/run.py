"""``prefix-exec run GRID.toml --out RUN_DIR``: produce and score rollouts for every unit of a grid."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prefix_exec.runner.executors import EXECUTORS


def register(subparsers: Any, name: str) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help="run agents on a grid of datasets x models x methods x trials and score the rollouts",
        description=(
            "Run every work unit (dataset, task, model, method, trial) of a grid file against its LLM endpoint "
            "and benchmark environment; write canonical rollouts and their scored records to RUN_DIR. "
            "See docs/runner.md for the grid format."
        ),
    )
    parser.add_argument("grid", metavar="GRID.toml", help="the grid file")
    parser.add_argument("--out", required=True, metavar="RUN_DIR", help="run directory (created if missing)")
    parser.add_argument("--resume", action="store_true",
                        help="continue RUN_DIR: skip finished units, retry failed ones, score orphan rollouts")
    parser.add_argument("--executor", choices=EXECUTORS, default="local",
                        help="local threads (default) or Ray actors (pip install 'prefix-exec[ray]')")
    parser.add_argument("--max-concurrency", type=int, default=4, metavar="N",
                        help="units in flight at once (default 4)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from prefix_exec.errors import InputError
    from prefix_exec.runner.run import run_grid

    if args.max_concurrency < 1:
        raise InputError("--max-concurrency must be >= 1")
    report = run_grid(args.grid, args.out, resume=args.resume, executor=args.executor,
                      max_concurrency=args.max_concurrency)
    print(f"prefix-exec: {report.summary()} -> {args.out}", file=sys.stderr)
    return 1 if report.failed else 0
