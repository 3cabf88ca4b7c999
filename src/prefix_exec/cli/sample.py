"""``prefix-exec sample``: the deterministic greedy multi-label stratified task sample (written once, reused)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.records import outputs
from prefix_exec.sampling import DEFAULT_SEED, label_deviation, read_labels, stratified_sample, write_sample


def register(commands: Any, name: str) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help="choose N tasks keeping every label's share of the pool (how we draw our own ToolSandbox 200)",
        description=(
            "Choose N named tasks from a labelled pool so that each label's count is as close as possible to "
            "its proportional share (greedy fill, then swap repair; seeded ties). Labels come from a ToolSandbox "
            "result_summary.json (scenario categories), a JSON list/object, or a CSV with name and labels "
            "columns. The chosen names are written one per line (or as a JSON list for *.json)."
        ),
    )
    parser.add_argument("labels", metavar="LABELS", help="result_summary.json, a JSON list/object, or a .csv")
    parser.add_argument("-n", "--n", type=int, default=200, help="how many tasks to choose (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="tie-break seed (default: %(default)s)")
    parser.add_argument("--out", required=True, metavar="FILE", help="where to write the chosen names")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    outputs.check_file(args.out, [args.labels])  # refused before any work: the labels file, a FIFO, a folder
    pool = read_labels(args.labels)
    if not 0 <= args.n <= len(pool):
        raise InputError(f"cannot choose {args.n} of the {len(pool)} tasks in the pool", path=args.labels)
    chosen = stratified_sample(pool, args.n, seed=args.seed)
    write_sample(chosen, args.out, inputs=[args.labels])
    deviation = label_deviation(pool, chosen)
    worst = max((abs(v) for v in deviation.values()), default=0.0)
    print(
        f"prefix-exec: chose {len(chosen)} of {len(pool)} tasks (seed {args.seed}); largest label deviation "
        f"from proportional: {worst:.2f} tasks -> {args.out}",
        file=sys.stderr,
    )
    return 0
