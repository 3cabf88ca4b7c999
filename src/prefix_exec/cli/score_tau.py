"""``prefix-exec score tau``: replay tau2-bench (tau3-bench airline/retail) results files on the tau2 environment.

Writes one record per simulation to ``--out``, the consistency report (calls where our replay and the recorded
run disagree) to ``--consistency`` (default ``<out>.consistency.json``), and prints the task-set check against
the paper's selection, the disagreements, and with ``--regrade`` the recomputed DB checks that differ.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prefix_exec.cli.common import (
    add_scoring_options,
    consistency_path,
    finish,
    freeze_loaded,
    numbering,
    output_options,
    trial_rule,
)
from prefix_exec.cli.spec_options import add_tau2_data_option
from prefix_exec.envs.tau.consistency import compare_tau
from prefix_exec.envs.tau.pooled import TAU_DOMAINS
from prefix_exec.envs.tau.regrade import regrade_files
from prefix_exec.envs.tau.results import LoadedResults, check_override, load_results
from prefix_exec.errors import InputError
from prefix_exec.extras import require
from prefix_exec.importers.tau import TauResults, read_results
from prefix_exec.records.codec import RECORD_KIND, first_unpooled, read_records
from prefix_exec.records.consistency import Consistency, Disagreement
from prefix_exec.records.jsonl import completed_keys
from prefix_exec.scoring.run import score_to_file
from prefix_exec.scoring.units import Scorable
from prefix_exec.sources.tau import tau_units
from prefix_exec.trajectory import Skipped


def register(benchmarks: Any, name: str) -> None:
    parser: argparse.ArgumentParser = benchmarks.add_parser(
        name,
        help="tau2-bench / tau3-bench airline and retail results files, replayed on the tau2 environment",
        description=(
            "Replay every simulation of tau2 results files (airline, retail) prefix by prefix on the installed "
            "tau2 package's environment, and write one scored record per simulation. Y is the recorded reward. "
            "See docs/tau.md."
        ),
    )
    parser.add_argument("results", nargs="+", metavar="RESULTS.json", help="tau2 results files")
    add_scoring_options(parser)
    parser.add_argument(
        "--regrade",
        action="store_true",
        help="recompute the DB part of each reward with the installed tau2 and report disagreements",
    )
    parser.add_argument(
        "--consistency",
        metavar="PATH.json",
        help="where to write the consistency report (default: <out>.consistency.json)",
    )
    parser.add_argument(
        "--domain",
        choices=TAU_DOMAINS,
        help="the domain of the files, over the one a file names (info.environment_info.domain_name: a policy "
        "variant such as airline_tighter_policy); a file whose tool names are mostly not the domain's is refused "
        "(docs/tau.md)",
    )
    parser.add_argument(
        "--parallel-calls",
        choices=("parallel", "sequential"),
        default="parallel",
        help="calls logged in one assistant message: parallel (default; a call cannot use a sibling's result) "
        "or sequential (each sees the results of the calls before it; for harnesses that log steps that way)",
    )
    add_tau2_data_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    require("tau2", "loguru", why="tau2's domains replay the calls")
    if args.resume:
        _check_resumable_layout(args.out)
    files: list[LoadedResults[TauResults]] = []
    units: list[Scorable | Skipped] = []
    mismatched: list[Disagreement] = []
    trials, rule = numbering(args), trial_rule(args)
    for path in args.results:
        # An unreadable file, one of a domain replay does not model (telecom, say) or one whose tools are another
        # domain's is one file's error.
        try:
            results = read_results(path, model=args.model, method=args.method, domain=args.domain, trials=rule)
            check_override(results, results.named_domain, args.tau2_data)
            loaded = load_results(results, args.tau2_data, sequential=args.parallel_calls == "sequential")
        except InputError as exc:
            if not args.keep_going:
                raise
            units.append(Skipped(path, exc.describe()))  # reported by score_to_file, never dropped
            continue
        loaded, scorable = tau_units(loaded, trials, args.tau2_data, name=loaded.results.path, notes=sys.stderr)
        files.append(loaded)
        units += scorable
        mismatched += loaded.mismatches()
    target = consistency_path(args, args.results)
    consistency = Consistency(compare_tau)
    # tau2's modules, the domains and every file's tasks and rollouts live to the end: on the shared data each full
    # collection walked them all (0.2-0.4 s apiece); frozen, the run's collections take 0.35 s in all, not 0.7 s.
    freeze_loaded()
    report = score_to_file(
        units,
        args.out,
        total=len(units),
        desc="scoring tau",
        on_record=consistency,
        inputs=args.results,
        options=output_options(args),
    )
    if args.resume:  # the kept records were scored by an earlier run: compare every record of the output again
        consistency.compare_again(read_records(args.out))
    if files or args.resume:  # a run whose every file was refused has no consistency to report (no empty file)
        consistency.write(target, sys.stderr, first=mismatched)
    unregraded = 0
    if args.regrade:
        unregraded = regrade_files(files, consistency.scored, keep_going=args.keep_going, log=sys.stderr)
    status = finish(report, args.out, trials)
    return 2 if unregraded else status


def _check_resumable_layout(out: str) -> None:
    """An output written before tau3 was pooled (``tau3-airline``, task ``18``) cannot be resumed: every
    simulation would be scored again under its new id (``airline/18``) beside the old record."""
    old = first_unpooled(completed_keys(out, kind=RECORD_KIND))
    if old is not None:
        raise InputError(
            f"this output holds records made before tau3 was pooled (dataset {old[0]}, task {old[1]}); task ids are "
            "now domain-qualified (airline/18), so --resume cannot continue it",
            path=out,
            hint="pass --overwrite to score the files again in the new layout, or choose another --out",
        )
