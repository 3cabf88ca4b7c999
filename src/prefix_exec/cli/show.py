"""``prefix-exec show RUN_DIR [--unit ID]``: each request of a run, its answer, what was read and the verdict."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError

EPILOG = """\
For each request of each unit, in the order asked: the role (executor, planner, verifier), how its answer is
read (mode native, auto or text; the tools declared), the messages sent (the last one, which this request
added; --full: all, as the cache kept them: each message cut at 8,000 characters, native tools as their names
and digest, credentials in URLs removed), the raw answer with its finish_reason, the calls read from it (the
format that read them, their arguments, parse errors) and each executor call's verdict from records.jsonl.

Works during a run: a request with no answer yet is shown as in flight. A run made before the cache kept
requests has nothing to show (its answers are in cache.sqlite by key, its transcripts in rollouts.jsonl).
"""


def register(commands: Any, name: str) -> None:
    parser = commands.add_parser(
        name,
        help="each request of a run: what was sent, the raw answer, the calls read and their verdicts",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run folder ('prefix-exec run --out')")
    parser.add_argument(
        "--unit",
        metavar="ID",
        help="only the units whose dataset/task/model/method/trial is ID or contains it (a task id will do)",
    )
    parser.add_argument("--full", action="store_true", help="every message sent, and no text cut")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from prefix_exec.runner.exchanges import CACHE, render, unit_views

    run_dir = Path(args.run_dir)
    if not (run_dir / CACHE).is_file():
        raise InputError(
            f"no {CACHE} in this folder", path=str(run_dir), hint="give the folder 'prefix-exec run --out' wrote"
        )
    views = unit_views(run_dir, args.unit)
    if not views:
        what = f"no unit matching {args.unit!r}" if args.unit else "no request kept"
        print(f"prefix-exec show: {what} in {run_dir / CACHE} (a run made before requests were kept shows none)")
        return 1 if args.unit else 0
    print(render(views, full=args.full))
    sys.stdout.flush()
    return 0
