"""``prefix-exec run GRID.toml --out RUN_DIR``: produce and score rollouts for every unit of a grid."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from prefix_exec.cli.common import non_negative_int, positive_int
from prefix_exec.cluster import LAUNCHERS
from prefix_exec.extras import require

EPILOG = """\
RUN_DIR gets:
  rollouts.jsonl   canonical rollouts: actions, Y, full transcript, per-call cost, decoding settings
  records.jsonl    the same rollouts scored by prefix replay (input of 'metrics' and 'report')
  failures.jsonl   units that raised, with the error; --resume retries them
  cache.sqlite     LLM answers by request (reruns and resumes send nothing twice)
  grid.toml        a copy of the grid (its URLs without credentials); settings.json: what
                   --resume checks the grid against

exit status: 0 every unit written; 1 some units failed or the run stopped early (see failures.jsonl,
then --resume); 2 bad input (grid, missing API key, busy or unusable RUN_DIR); 130 interrupted (Ctrl-C:
finished units are kept, --resume continues).

The grid format is documented in docs/runner.md of the source repository; examples/paper-grid.toml is the
paper's grid.
"""


def register(subparsers: Any, name: str) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help="run agents on a grid of datasets x models x methods x trials and score the rollouts",
        description=(
            "Run every work unit (dataset, task, model, method, trial) of a grid file against its LLM\n"
            "endpoint and benchmark environment; write canonical rollouts and their scored records to\n"
            "RUN_DIR. Safe to kill at any time: --resume continues where it stopped."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("grid", metavar="GRID.toml", help="the grid file")
    parser.add_argument("--out", required=True, metavar="RUN_DIR", help="run directory (created if missing)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue RUN_DIR: skip finished units, retry failed ones, score orphan rollouts",
    )
    parser.add_argument(
        "--launcher",
        choices=LAUNCHERS,
        default="local",
        help="where units run: local threads (default) or Ray actors (pip install 'prefix-exec[ray]')",
    )
    parser.add_argument(
        "--max-concurrency",
        type=positive_int,
        default=4,
        metavar="N",
        help="units in flight at once (default 4); each model's max_concurrency still caps the "
        "requests to its endpoint",
    )
    parser.add_argument(
        "--max-consecutive-failures",
        type=non_negative_int,
        default=20,
        metavar="N",
        help="stop after N failed units in a row, e.g. a dead endpoint (default 20; 0 = never)",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    require("openai", why="the agents call their endpoints with it")
    from prefix_exec.runner.run_dir import run_grid

    try:
        report = run_grid(
            args.grid,
            args.out,
            resume=args.resume,
            launcher=args.launcher,
            max_concurrency=args.max_concurrency,
            max_consecutive_failures=args.max_consecutive_failures,
        )
    except KeyboardInterrupt:
        # Every finished unit is already fsynced; units in flight are lost as with a kill, which --resume
        # handles. Their requests' connections are closed (a server computing an answer sees the client go),
        # and exiting at once spares the wait for them (threads cannot be stopped).
        interrupted(args)
        _exit_now(130)
    print(f"prefix-exec: {report.describe()} -> {args.out}", file=sys.stderr, flush=True)
    for line in plan_lines(Path(args.out)):
        print(line, file=sys.stderr, flush=True)
    if report.aborted:
        # Units still in flight would go on calling a failing endpoint until they finish, and their results
        # are not written any more; everything written is already on disk.
        _exit_now(1)
    return 1 if report.failed else 0


def interrupted(args: argparse.Namespace) -> None:
    """Close the requests in flight and say what was kept and how to resume; a second Ctrl-C from here on ends
    the process at once."""
    from prefix_exec.llm.inflight import IN_FLIGHT, describe

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    cancelled = IN_FLIGHT.cancel_all()
    resume = f"prefix-exec run {shlex.quote(str(args.grid))} --out {shlex.quote(str(args.out))} --resume"
    print(
        f"\nprefix-exec: interrupted; requests in flight cancelled: {describe(cancelled)}; finished units are kept "
        f"in {args.out}; to finish the run: {resume}",
        file=sys.stderr,
        flush=True,
    )


def plan_lines(out: Path) -> list[str]:
    """Where the planning methods' plans went before the executor, per task (:mod:`prefix_exec.analysis.plan_funnel`),
    from the run's records; nothing for a run without planning methods or records."""
    from prefix_exec.analysis.plan_funnel import funnel_lines, funnel_rows
    from prefix_exec.records.codec import read_records

    records = out / "records.jsonl"
    if not records.is_file():
        return []
    rows = ((r.method, r.task_id, r.metadata) for r in read_records(records))
    found = funnel_rows(rows)
    return ["prefix-exec: plans before the executor:", *funnel_lines(found)] if found else []


def _exit_now(code: int) -> None:
    """Exit without waiting for worker threads (they cannot be stopped); a local Ray instance started by this
    run is shut down first, so none of its processes outlive the command."""
    sys.stdout.flush()
    sys.stderr.flush()
    ray = sys.modules.get("ray")
    if ray is not None:
        with contextlib.suppress(Exception):
            if ray.is_initialized():
                ray.shutdown()
    os._exit(code)
