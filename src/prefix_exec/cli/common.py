"""Options shared by the ``score`` subcommands, and how they report a scoring run."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from prefix_exec import budget
from prefix_exec.analysis import tasksets
from prefix_exec.cluster import LAUNCHERS
from prefix_exec.errors import InputError
from prefix_exec.importers.trials import TrialRule
from prefix_exec.records import outputs
from prefix_exec.records.values import Zeroed, zeroed_lines
from prefix_exec.scoring.numbering import Numbering
from prefix_exec.scoring.pool.sizing import WORTH_BYTES
from prefix_exec.scoring.pool.spawn import usable_cores
from prefix_exec.scoring.run import ScoreOptions, ScoreReport


def add_scoring_options(parser: argparse.ArgumentParser) -> None:
    """What every ``score`` command takes: the records' identity (``--model``, ``--method``, ``--trial`` or
    ``--trial-field``, ``--unique-task``; :func:`trial_rule`, :func:`numbering`), then ``--out`` and how it is
    written (resume, overwrite, keep going, budgets, workers; :func:`output_options` reads those)."""
    _add_identity_options(parser)
    _add_output_options(parser)


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", required=True, metavar="RECORDS.jsonl", help="where to write the scored records (JSONL)"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep records already in --out and score only the missing rollouts (after a crash or kill)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing --out file (default: refuse to touch it)"
    )
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="report a rollout that cannot be scored and go on with the rest (exit code 2 at the end)",
    )
    parser.add_argument(
        "--rollout-budget",
        type=float_between(0.0, 86400.0, include_low=False),
        default=budget.DEFAULT_ROLLOUT_SECONDS,
        metavar="SECONDS",
        help="wall-clock budget of one rollout (its checks and replay); past it the rollout is reported "
        "unscorable (default: %(default)s)",
    )
    parser.add_argument(
        "--call-memory",
        type=int_between(0, 1 << 20),
        default=budget.DEFAULT_CALL_MEMORY_MB,
        metavar="MiB",
        help="memory budget of one tool call, MiB above the process's size; 0 for none (default: %(default)s)",
    )
    cores = usable_cores()
    parser.add_argument(
        "--workers",
        type=int_between(1, 1024),
        default=None,
        metavar="N",
        help=f"replay on N processes: this one and N-1 workers it starts; the records file is byte for byte what "
        "--workers 1 (this process alone) writes. Default: what pays for itself, never slower than 1: 1 when the "
        f"inputs are small (under {_mib('bfcl')} MiB for bfcl, {_mib('tau')} MiB for tau, {_mib('transcripts')} MiB "
        "for the others) or less than half a core is idle (the 1-minute load average and the tasks runnable now; "
        "when they disagree, 0.1 s of the machine's CPU time, the busier reading standing), else this process and a "
        f"worker per idle core, at most the usable cores ({cores} here). Each worker holds its own copy of the "
        "environments (about 50 MiB; 300 MiB for tau) (docs/architecture.md, 'Scoring on every core')",
    )
    parser.add_argument(
        "--launcher",
        choices=LAUNCHERS,
        default="local",
        help="where the workers run: local processes (default) or Ray actors on the cluster in RAY_ADDRESS "
        "(else a local Ray instance), --workers of them, as 'run --launcher ray' (needs the ray extra)",
    )
    add_infrastructure_option(parser)


def _mib(command: str) -> int:
    return WORTH_BYTES[command] >> 20


def output_options(args: argparse.Namespace) -> ScoreOptions:
    """score_to_file's options from what :func:`add_scoring_options` parsed, all but ``--out``: resume,
    overwrite, keep_going, the rollout and call budgets, and the pool of the workers and their launcher (none
    for one worker here: :func:`~prefix_exec.scoring.pool.dispatch.pool_for`). One worker here never imports the
    pool (its transport, schedule and worker side): the pool module is imported only when a pool is asked for."""
    dispatch = None
    if args.workers > 1 or args.launcher != "local":
        from prefix_exec.scoring.pool.dispatch import pool_for

        dispatch = pool_for(args.workers, args.launcher)
    return ScoreOptions(
        resume=args.resume,
        overwrite=args.overwrite,
        keep_going=args.keep_going,
        rollout_seconds=args.rollout_budget,
        call_memory_mb=args.call_memory,
        dispatch=dispatch,
        keep_infrastructure=args.keep_infrastructure_failures,
    )


def consistency_path(args: argparse.Namespace, inputs: Iterable[str | Path]) -> str:
    """Where a score command's consistency report goes (``--consistency``, default ``<out>.consistency.json``),
    checked before scoring starts: not one of ``inputs`` nor ``--out``, and a regular file if it exists
    (:func:`prefix_exec.records.outputs.check_file`)."""
    path: str = args.consistency or f"{args.out}.consistency.json"
    outputs.check_file(path, [*inputs, args.out], option="--consistency")
    return path


def add_summary_options(parser: argparse.ArgumentParser) -> None:
    """How ``metrics`` and ``report`` summarize records: bootstrap resamples and seed, and whether records of
    one dataset made on different task sets may pool (:mod:`prefix_exec.analysis.tasksets`)."""
    from prefix_exec.analysis.stats import DEFAULT_RESAMPLES  # here: stats imports numpy, which score commands need not

    parser.add_argument(
        "--resamples", type=resample_count, default=DEFAULT_RESAMPLES, help="bootstrap resamples (default: %(default)s)"
    )
    parser.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed, >= 0 (default: %(default)s)")
    tasksets.add_option(parser)
    add_infrastructure_option(parser)


def _add_identity_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="model name for the records (default: from the input)")
    parser.add_argument("--method", help="method (agent variant) name for the records (default: from the input)")
    parser.add_argument(
        "--trial",
        type=non_negative_int,
        metavar="N",
        help="trial number of every rollout read (default: the input's own, else 0, 1, ... by input order)",
    )
    parser.add_argument(
        "--trial-field",
        metavar="PATH",
        help="dotted path to each rollout's trial number in the input (a simulation, result line, transcript, "
        "row, sample or summary row; e.g. metadata.run); a rollout without it is an input error",
    )
    parser.add_argument(
        "--unique-task",
        action="store_true",
        help="refuse, naming both, two different rollouts of one task, model and method with the same trial "
        "(default: number the later ones as further trials in input order, and say so)",
    )


def trial_rule(args: argparse.Namespace) -> TrialRule:
    """Where the rollouts' trials come from (``--trial``, ``--trial-field``); both given is a usage error."""
    if args.trial is not None and args.trial_field:
        raise InputError("give --trial or --trial-field, not both")
    return TrialRule(fixed=args.trial, field=args.trial_field or None)


def numbering(args: argparse.Namespace) -> Numbering:
    """The :class:`Numbering` of one command's rollouts (``--unique-task``)."""
    return Numbering(unique=args.unique_task)


def add_infrastructure_option(parser: argparse.ArgumentParser) -> None:
    """``--keep-infrastructure-failures``, one option for every command that counts rollouts (the ``score``
    commands, ``metrics``, ``report``), with one meaning (:class:`prefix_exec.records.infrastructure.Exclusion`)."""
    parser.add_argument(
        "--keep-infrastructure-failures",
        action="store_true",
        help="count the rollouts an infrastructure failure ended (metadata.infrastructure: an inference crash, a "
        "model server error, tau2's infrastructure_error, the guard's dead or silent MCP server) in PEC/FED/TER, "
        "under their own first-failure label 'infrastructure', never one of the five; by default they are left "
        "out (a score command does not write their records), and stderr says how many, which, and N with and "
        "without them",
    )


def finish(report: ScoreReport, out: str, numbered: Numbering | None = None) -> int:
    """Say what the run did on stderr (with ``numbered``'s renumbered trials first, then the infrastructure
    failures left out or kept); the exit status: 2 when units could not be scored, else 1 when the pool lost units
    (the system's failure: ``--resume`` scores them), else 0 (an infrastructure failure left out is no error)."""
    note = numbered.describe() if numbered is not None else None
    if note:
        print(f"prefix-exec: trials: {note}", file=sys.stderr)
    if said := report.infrastructure.note(report.written + report.resumed):
        print(f"prefix-exec: infrastructure: {said}", file=sys.stderr)
    print(f"prefix-exec: {report.describe()} -> {out}", file=sys.stderr)
    return 2 if report.skipped else 1 if report.lost else 0


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type accepting integers >= ``minimum``."""
    return int_between(minimum, None)


def int_between(minimum: int, maximum: int | None) -> Callable[[str], int]:
    """An argparse type accepting integers in ``minimum..maximum`` (``None``: no upper bound)."""

    def parse(text: str) -> int:
        try:
            value = int(text) if len(text) <= 30 else int("x")
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum:,}, got {value}")
        return value

    return parse


#: Whether this process is the ``prefix-exec`` command's own (:func:`prefix_exec.cli.console`), not a caller's
#: that runs :func:`prefix_exec.cli.main`: only then does a command change a process-wide setting (it freezes the
#: garbage collector's view of what it loaded: :func:`freeze_loaded`).
COMMAND_PROCESS = False


def freeze_loaded() -> None:
    """In the command's own process, move every object alive now to the collector's permanent generation
    (``gc.freeze``): what a command loaded before scoring (a benchmark package's modules, its databases, the
    inputs) lives to the end, and each full collection would walk it all again. Not in a caller's process,
    whose own objects would never be collected again."""
    if COMMAND_PROCESS:
        gc.freeze()


#: argparse types for counts (>= 1) and seeds (>= 0).
positive_int = int_at_least(1)
non_negative_int = int_at_least(0)
#: Most bootstrap resamples accepted: the replicates of every statistic are held, (resamples, statistics).
MAX_RESAMPLES = 100_000
resample_count = int_between(1, MAX_RESAMPLES)
#: Deepest PEC(k) bootstrapped (--ci-depth): the per-rollout survival columns are (rollouts, depth).
MAX_CI_DEPTH = 100
ci_depth = int_between(1, MAX_CI_DEPTH)


def float_between(low: float, high: float, *, include_low: bool = True) -> Callable[[str], float]:
    """An argparse type accepting numbers in [low, high] (or (low, high] without ``include_low``); never nan."""
    bounds = f"{'[' if include_low else '('}{low:g}, {high:g}]"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        inside = (low <= value if include_low else low < value) and value <= high  # False for nan
        if not inside:
            raise argparse.ArgumentTypeError(f"must lie in {bounds}, got {text}")
        return value

    return parse


def checkpoint_depths(text: str) -> tuple[int, ...]:
    """``--checkpoints``: comma-separated depths k >= 1."""
    try:
        ks = tuple(int(k) for k in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated depths, got {text!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"depths must be >= 1, got {text!r}")
    return ks


def condition_pair(text: str) -> str:
    """argparse type: ``A:B``, each side a model, a method or ``model/method``. Kept as text: names may hold
    ``:``, so the split is chosen later against the records (:func:`prefix_exec.analysis.selection.split_pair`)."""
    if ":" not in text.strip(":"):
        raise argparse.ArgumentTypeError(f"expected A:B (a model, a method or model/method on each side), got {text!r}")
    return text


def warn_zeroed(found: list[Zeroed]) -> None:
    """Say on stderr which values of the files read were counted as 0 (:mod:`prefix_exec.records.values`)."""
    for line in zeroed_lines(found):
        print(f"prefix-exec: warning: {line}", file=sys.stderr)
