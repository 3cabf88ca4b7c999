"""``prefix-exec score toolsandbox``: score ToolSandbox run folders from their recorded execution."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from prefix_exec.cli.common import (
    add_scoring_options,
    finish,
    float_between,
    numbering,
    output_options,
    trial_rule,
)
from prefix_exec.envs.toolsandbox import recorded_environment
from prefix_exec.importers.toolsandbox.importer import ImportOptions, read_toolsandbox
from prefix_exec.sampling import read_names
from prefix_exec.scoring.run import score_to_file
from prefix_exec.scoring.units import with_environment
from prefix_exec.trajectory import PrefixRecord, Rollout, Skipped


def register(benchmarks: Any, name: str) -> None:
    parser: argparse.ArgumentParser = benchmarks.add_parser(
        name,
        help="ToolSandbox run folders, scored from their recorded execution (see docs/toolsandbox.md)",
        description=(
            "Score the run folders written by ToolSandbox's tool_sandbox CLI (result_summary.json + "
            "trajectories/<scenario>/execution_context.json). Each agent call is judged by the exception the "
            "sandbox recorded for it; minefield hits are information failures; environment faults that are not "
            "the agent's (a missing RAPID_API_KEY, say) are accepted, flagged and counted. See docs/toolsandbox.md."
        ),
    )
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_DIR",
        help="a ToolSandbox run folder, its trajectories/ folder, or one scenario folder",
    )
    parser.add_argument(
        "--success-threshold",
        type=float_between(0.0, 1.0),
        default=1.0,
        metavar="S",
        help="final success Y = 1 when the scenario's similarity >= S (default: %(default)s)",
    )
    parser.add_argument(
        "--success-if-unknown",
        type=int,
        choices=(0, 1),
        help="Y for scenarios without a result_summary.json (default: skip them and say so)",
    )
    parser.add_argument(
        "--scenarios", metavar="LIST", help="score only the scenarios named in LIST (e.g. from 'prefix-exec sample')"
    )
    parser.add_argument(
        "--environment-faults",
        choices=("flag", "skip"),
        default="flag",
        help="rollouts that hit an environment fault: score and flag them (default), or skip and list them",
    )
    add_scoring_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    options = ImportOptions(
        model=args.model,
        method=args.method,
        success_threshold=args.success_threshold,
        success_if_unknown=args.success_if_unknown,
        scenarios=frozenset(read_names(args.scenarios)) if args.scenarios else None,
        trials=trial_rule(args),
    )
    units = read_toolsandbox(args.runs, options)
    if args.environment_faults == "skip":
        units = _skip_faulty(units)
    faulty: list[str] = []

    def note_faults(record: PrefixRecord) -> None:
        if record.metadata.get("environment_faults"):
            faulty.append(record.task_id)

    trials = numbering(args)
    report = score_to_file(
        with_environment(trials.rollouts(units), recorded_environment),
        args.out,
        desc="scoring toolsandbox",
        on_record=note_faults,
        inputs=args.runs,
        options=output_options(args),
    )
    if faulty:
        print(
            f"prefix-exec: {len(faulty)} scored rollouts hit an environment fault that is not the agent's "
            f"(calls accepted and flagged in metadata.environment_faults): {', '.join(sorted(faulty))}",
            file=sys.stderr,
        )
    return finish(report, args.out, trials)


def _skip_faulty(units: Iterable[Rollout | Skipped]) -> Iterator[Rollout | Skipped]:
    for unit in units:
        if isinstance(unit, Rollout) and unit.metadata.get("environment_faults"):
            errors = "; ".join(str(fault["error"]) for fault in unit.metadata["environment_faults"])
            yield Skipped(f"scenario {unit.task_id}", f"environment fault, not the agent's: {errors}")
        else:
            yield unit
