"""``prefix-exec metrics``: intervals for every condition in one or more records files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from prefix_exec.cli.common import method_pair, non_negative_int, positive_int
from prefix_exec.coverage import coverage_warnings
from prefix_exec.errors import InputError
from prefix_exec.io import METRIC_FIELDS, read_metric_rows
from prefix_exec.stats import DEFAULT_RESAMPLES
from prefix_exec.summary import DEFAULT_CI_DEPTH, summarize
from prefix_exec.tables import RENDERERS


def register(commands: Any, name: str) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help="TER, mean FED, AUC-PEC, RR and success with 95%% CIs, plus PEC curves, per condition",
        description=(
            "Summarize scored records per (dataset, model, method): TER, mean FED, AUC-PEC and final success "
            "with task-level percentile-bootstrap CIs (one draw of task ids per dataset, shared by every "
            "condition), RR with a Wilson CI on RR-Eligible (undefined when nothing failed), and PEC, "
            f"PEC_elig and n_k curves. Any JSONL whose rows carry {', '.join(METRIC_FIELDS)} is accepted."
        ),
    )
    parser.add_argument("records", nargs="+", metavar="RECORDS.jsonl", help="scored records (JSONL)")
    parser.add_argument(
        "--resamples", type=positive_int, default=DEFAULT_RESAMPLES, help="bootstrap resamples (default: %(default)s)"
    )
    parser.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed (default: %(default)s)")
    parser.add_argument(
        "--ci-depth",
        type=positive_int,
        default=DEFAULT_CI_DEPTH,
        help="bootstrap PEC(k) for k = 1..N (default: %(default)s)",
    )
    parser.add_argument("--format", choices=sorted(RENDERERS), default="md", help="output format (default: md)")
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        type=method_pair,
        metavar="A:B",
        help="paired differences A - B of two methods in every (dataset, model) block that has both, with CIs "
        "from the shared task draws (repeatable)",
    )
    parser.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output")
    parser.set_defaults(run=run)



def run(args: argparse.Namespace) -> int:
    rows = read_metric_rows(args.records)
    if not rows:
        raise InputError("no records found", path=", ".join(args.records), hint="score some rollouts first")
    for warning in coverage_warnings(args.records, rows):
        print(f"prefix-exec: warning: {warning}", file=sys.stderr)
    pairs = args.compare
    summary = summarize(rows, resamples=args.resamples, seed=args.seed, ci_depth=args.ci_depth)
    comparisons = None
    if pairs:
        methods = {c.method for c in summary.conditions}
        comparisons = []
        for a, b in pairs:
            missing = sorted({a, b} - methods)
            if missing:
                raise InputError(
                    f"--compare {a}:{b}: no records for method {', '.join(missing)}",
                    hint=f"methods in the records: {', '.join(sorted(methods))}",
                )
            comparisons += summary.compare(a, b)
    text = RENDERERS[args.format](summary, comparisons)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"prefix-exec: wrote metrics for {len(summary.conditions)} conditions to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
