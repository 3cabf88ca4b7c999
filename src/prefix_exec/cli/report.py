"""``prefix-exec report``: Table 2, Figure 1, PEC@k checkpoints, labels, decomposition, ranking divergence,
paired differences, cost tables and a self-contained report.html."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from prefix_exec.analysis import tasksets
from prefix_exec.analysis.absence import absent_note
from prefix_exec.analysis.coverage import coverage_warnings
from prefix_exec.cli.common import add_summary_options, checkpoint_depths, condition_pair, warn_zeroed
from prefix_exec.extras import require
from prefix_exec.records.infrastructure import Exclusion
from prefix_exec.records.values import noting_zeroed
from prefix_exec.report import Options, load, write_report
from prefix_exec.report.build import FORMATS, counted_records
from prefix_exec.report.inputs import expand
from prefix_exec.report.metric_tables import DEFAULT_CHECKPOINTS


def register(commands: Any, name: str) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help="write the paper's tables and figure, cost tables and a self-contained report.html",
        description=(
            "Summarize scored records and write the report into --out: Table 2 (Markdown, CSV, LaTeX; block "
            "maxima in bold, ties included), Figure 1 PEC curves and their eligible-depth view (PNG, SVG), "
            "PEC@k checkpoints, first-failure label counts, the q/s/r decomposition, ranking divergence, paired "
            "differences, cost tables when records carry telemetry, and report.html (offline, sortable, every "
            "cell links to its rollouts). Inputs are records files or run directories (folders holding "
            "records*.jsonl files at any depth)."
        ),
    )
    parser.add_argument("inputs", nargs="+", metavar="RECORDS_OR_RUN_DIR", help="records JSONL files or run dirs")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder to write the report into")
    add_summary_options(parser)
    parser.add_argument(
        "--format",
        default=",".join(FORMATS),
        type=_formats,
        help="table formats, comma-separated from md, csv, tex (default: %(default)s)",
    )
    parser.add_argument(
        "--pair",
        action="append",
        type=condition_pair,
        metavar="A:B",
        help="paired difference A - B; each side a model, a method or model/method (repeatable; "
        "default: every pair of methods within each model)",
    )
    parser.add_argument(
        "--reference",
        metavar="NAME",
        help="the leaderboard's reference condition: a model, a method or model/method (default: "
        "the best by final success)",
    )
    parser.add_argument(
        "--checkpoints",
        type=checkpoint_depths,
        default=DEFAULT_CHECKPOINTS,
        metavar="K,K,...",
        help=f"PEC@k checkpoint depths (default: {','.join(map(str, DEFAULT_CHECKPOINTS))})",
    )
    parser.add_argument("--title", default="prefix-exec report", help="title of report.html")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a non-empty folder an earlier report did not write (files an earlier "
        "report listed in its files.json are replaced, others kept)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG/SVG plots (no matplotlib needed)")
    parser.set_defaults(handler=handle)


def _formats(text: str) -> tuple[str, ...]:
    chosen = tuple(f.strip() for f in text.split(",") if f.strip())
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(FORMATS)}; got {text!r}")
    return chosen


def handle(args: argparse.Namespace) -> int:
    if not args.no_plots:
        require("matplotlib", why="the report's figures", alternative="pass --no-plots for a report without figures")
    with noting_zeroed() as zeroed:
        records = load(args.inputs)
    warn_zeroed(zeroed)
    # the warnings look at the rollouts the report counts (write_report leaves the same ones out: one rule)
    counted = counted_records(records, Exclusion(keep=args.keep_infrastructure_failures))
    for warning in tasksets.check_pooling(
        ((r.dataset, tasksets.task_set_of(r.metadata)) for r in counted), allow=args.mix_task_sets
    ):
        print(f"prefix-exec: warning: {warning}", file=sys.stderr)
    files = expand(args.inputs)
    for warning in coverage_warnings(files, counted):
        print(f"prefix-exec: warning: {warning}", file=sys.stderr)
    if absent := absent_note(r.success for r in counted):
        print(f"prefix-exec: note: {absent}", file=sys.stderr)
    options = Options(
        resamples=args.resamples,
        seed=args.seed,
        formats=args.format,
        pairs=tuple(args.pair) if args.pair else None,
        reference=args.reference,
        checkpoints=args.checkpoints,
        title=args.title,
        plots=not args.no_plots,
        overwrite=args.overwrite,
        keep_infrastructure=args.keep_infrastructure_failures,
    )
    report = write_report(records, args.out, options, inputs=files)
    if note := report.infrastructure.note(report.counted):
        print(f"prefix-exec: infrastructure: {note}", file=sys.stderr)
    print(
        f"prefix-exec: report on {report.counted} rollouts in {len(report.summary.conditions)} conditions -> "
        f"{Path(args.out) / 'report.html'} ({len(report.files)} files)",
        file=sys.stderr,
    )
    return 0
