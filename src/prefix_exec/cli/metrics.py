"""``prefix-exec metrics``: intervals for every condition in one or more records files."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from prefix_exec.analysis import tasksets
from prefix_exec.analysis.absence import absent_note
from prefix_exec.analysis.coverage import coverage_warnings
from prefix_exec.analysis.rows import METRIC_FIELDS, read_metric_rows
from prefix_exec.analysis.summary import DEFAULT_CI_DEPTH, PairedComparison, Summary, summarize, to_json
from prefix_exec.cli.common import add_summary_options, checkpoint_depths, ci_depth, condition_pair, warn_zeroed
from prefix_exec.errors import InputError
from prefix_exec.records import outputs
from prefix_exec.records.infrastructure import Exclusion
from prefix_exec.records.values import noting_zeroed
from prefix_exec.report.cost import row_costs
from prefix_exec.report.formats import to_csv, to_markdown
from prefix_exec.report.layout import Anchors
from prefix_exec.report.metric_tables import DEFAULT_CHECKPOINTS, checkpoints, reach, table2, table2_domains
from prefix_exec.report.paired import (
    SensitivityRow,
    comparison_table,
    comparisons,
    resolve_pairs,
    sensitivity_rows,
    sensitivity_table,
)

FORMATS = ("csv", "json", "md")


def render(
    summary: Summary,
    found: list[PairedComparison] | None,
    fmt: str,
    sensitivity: Sequence[SensitivityRow] = (),
    ks: Sequence[int] = DEFAULT_CHECKPOINTS,
    infrastructure: Exclusion | None = None,
) -> str:
    """The summary in ``fmt``: JSON (:func:`~prefix_exec.analysis.summary.to_json`, plus ``sensitivity`` when there are
    F.3 rows and ``infrastructure`` when ``infrastructure`` met a failure: :meth:`Exclusion.as_json`), or as
    Markdown or CSV the report's tables without links: Table 2 (its note saying what ``infrastructure`` did), the
    per-domain rows, Table G.1 (PEC@k at the checkpoint depths ``ks``), n_k and PEC_elig at those depths, the paired
    differences and the sensitivity table."""
    counted = sum(c.N for c in summary.conditions)
    met = infrastructure.as_json(counted) if infrastructure is not None else None
    if fmt == "json":
        text = to_json(summary, found)
        if not sensitivity and met is None:
            return text
        doc = json.loads(text)
        if sensitivity:
            doc["sensitivity"] = [row.as_dict() for row in sensitivity]
        if met is not None:
            doc["infrastructure"] = met
        return json.dumps(doc, indent=2)
    tables = [table2(summary, note=infrastructure.sentence(counted) if infrastructure is not None else None)]
    if summary.domains is not None:  # the per-domain rows of a pooled dataset (tau3): an extra view
        tables.append(table2_domains(summary.domains))
    tables += [checkpoints(summary, Anchors.of(summary), ks), reach(summary, ks)]
    tables += [comparison_table(found)] if found else []
    tables += [sensitivity_table(sensitivity)] if sensitivity else []
    if fmt == "csv":
        return "\n".join(to_csv(t) for t in tables)
    return "\n".join(to_markdown(t) for t in tables)


def register(commands: Any, name: str) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help="TER, mean FED, AUC-PEC, RR and success with 95%% CIs, plus PEC curves, per condition",
        description=(
            "Summarize scored records per (dataset, model, method): TER, mean FED, AUC-PEC and final success "
            "with task-level percentile-bootstrap CIs (one draw of task ids per dataset, shared by every "
            "condition), RR with a Wilson CI on RR-Eligible (undefined when nothing failed), and PEC, "
            "PEC_elig and n_k curves. --format md or csv prints Table 2, Table G.1 (PEC@k with CIs at "
            "--checkpoints) and n_k with PEC_elig at the same depths; --format json has the whole curves "
            "(PEC, PEC_CI, PEC_elig, n_k per condition). A dataset of several domains (tau3 = airline + "
            "retail) is one pooled condition, followed by its per-domain rows as an extra table. A record whose "
            "success is null has no Y (traces scored without --success-field): success, RR and the decomposition "
            "are over the records with Y, n/a where none has it, never 0. Any JSONL "
            f"whose rows carry {', '.join(METRIC_FIELDS)} is accepted."
        ),
    )
    parser.add_argument("records", nargs="+", metavar="RECORDS.jsonl", help="scored records (JSONL)")
    add_summary_options(parser)
    parser.add_argument(
        "--ci-depth",
        type=ci_depth,
        default=DEFAULT_CI_DEPTH,
        help="bootstrap PEC(k) for k = 1..N (default: %(default)s)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="md",
        help="md or csv: the tables (Table 2, G.1 checkpoints, n_k); json: everything, whole curves included "
        "(default: md)",
    )
    parser.add_argument(
        "--checkpoints",
        type=checkpoint_depths,
        default=DEFAULT_CHECKPOINTS,
        metavar="K,K,...",
        help=f"depths of the PEC@k and n_k tables in md and csv (default: {','.join(map(str, DEFAULT_CHECKPOINTS))})",
    )
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        type=condition_pair,
        metavar="A:B",
        help="paired differences A - B over the tasks both ran, with CIs from the shared task draws; each side "
        "is a model, a method or model/method (two methods are compared within each model; repeatable)",
    )
    parser.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.out:  # refused before any work: an input, a folder, a FIFO or a device as --out
        outputs.check_file(args.out, args.records)
    with noting_zeroed() as zeroed:
        rows = read_metric_rows(args.records, redact=True)
    warn_zeroed(zeroed)
    if not rows:
        raise InputError("no records found", path=", ".join(args.records), hint="score some rollouts first")
    exclusion = Exclusion(keep=args.keep_infrastructure_failures)
    rows = list(exclusion.filter(rows, lambda r: r.key, lambda r: r.infrastructure))
    if note := exclusion.note(len(rows)):
        print(f"prefix-exec: infrastructure: {note}", file=sys.stderr)
    if not rows:
        raise InputError("every record is an infrastructure failure", hint="--keep-infrastructure-failures counts them")
    for warning in tasksets.check_pooling(((r.dataset, r.task_set) for r in rows), allow=args.mix_task_sets):
        print(f"prefix-exec: warning: {warning}", file=sys.stderr)
    for warning in coverage_warnings(args.records, rows):
        print(f"prefix-exec: warning: {warning}", file=sys.stderr)
    if absent := absent_note(r.success for r in rows):
        print(f"prefix-exec: note: {absent}", file=sys.stderr)
    summary = summarize(rows, resamples=args.resamples, seed=args.seed, ci_depth=args.ci_depth)
    found = None
    if args.compare:
        found = comparisons(summary, resolve_pairs(summary, args.compare, option="--compare"))
    sensitivity = sensitivity_rows(summary, row_costs(rows))
    text = render(summary, found, args.format, sensitivity, args.checkpoints, exclusion)
    if args.out:
        outputs.write_text(args.out, text, args.records)
        print(f"prefix-exec: wrote metrics for {len(summary.conditions)} conditions to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
