"""``prefix-exec score bfcl``: replay BFCL v3 multi-turn result files (or BFCL's own answers) safely."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import partial
from typing import Any

from prefix_exec.cli.common import (
    add_scoring_options,
    finish,
    float_between,
    numbering,
    output_options,
    trial_rule,
)
from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess
from prefix_exec.envs.bfcl.sample import NAME, stratified_200
from prefix_exec.envs.bfcl.tasks import INSTALL_HINT, load_task
from prefix_exec.errors import InputError, ReplayError
from prefix_exec.extras import require
from prefix_exec.importers.bfcl import PROMPTING_Y
from prefix_exec.replay import with_success
from prefix_exec.scoring.run import score_to_file
from prefix_exec.scoring.units import Scorable, ScoringUnit, Undecoded, numbered, with_environment
from prefix_exec.trajectory import Rollout, Skipped


def register(benchmarks: Any, name: str) -> None:
    parser: argparse.ArgumentParser = benchmarks.add_parser(
        name,
        help="BFCL v3 multi-turn result files, replayed on BFCL's backend classes (see docs/bfcl.md)",
        description=(
            "Replay BFCL multi-turn result files (BFCL_v4_multi_turn_<category>_result.json, FC or prompting "
            "format) prefix by prefix on BFCL's own backend classes, without ever eval-ing model output, and "
            "compute final success by BFCL's multi-turn rule. The category comes from the file name; model "
            "and method from --model/--method or the folder name. See docs/bfcl.md."
        ),
    )
    parser.add_argument("results", nargs="*", metavar="RESULT_FILE_OR_DIR", help="result files or folders of them")
    parser.add_argument(
        "--ground-truth",
        action="store_true",
        help="score BFCL's own ground-truth answers instead of result files (a self-check: all TER 1, Y 1)",
    )
    parser.add_argument(
        "--sample",
        choices=(NAME,),
        help=(
            "score only our deterministic 4 x 50 stratified sample of task ids (a seeded draw of the paper's "
            "design; the paper publishes no ids)"
        ),
    )
    parser.add_argument(
        "--prompting-y",
        choices=PROMPTING_Y,
        default="bfcl",
        help=(
            "prompting-format files: compute Y on the calls BFCL's own decoder reads (bfcl, the default: a "
            "string turn is empty, positional arguments are dropped, quoted calls fail to decode) or on the "
            "calls as decoded here for the prefix replay (decoded)"
        ),
    )
    parser.add_argument(
        "--no-information-check",
        dest="information",
        action="store_false",
        help="do not check that credentials came from the user or a tool (the information label; docs/bfcl.md)",
    )
    parser.add_argument(
        "--time-limit",
        type=float_between(0.0, 3600.0, include_low=False),
        default=2.0,
        metavar="SECONDS",
        help="wall-clock bound per API call (default: %(default)s)",
    )
    add_scoring_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    require("bfcl_eval", "mpmath", why="BFCL's tasks and backend classes")
    if bool(args.results) == bool(args.ground_truth):
        raise InputError("give result files or folders, or --ground-truth (not both)")
    try:
        env = BfclEnvironment(time_limit=args.time_limit, information=args.information)
        from prefix_exec.importers.bfcl import ground_truth_rollouts, read_results, undecoded_results

        only = frozenset(stratified_200()) if args.sample is not None else None
        units: Iterable[Rollout | Skipped]
        rule = trial_rule(args)
        reading = {"model": args.model, "method": args.method, "only": only, "prompting_y": args.prompting_y}
        trials = numbering(args)
        scored: Iterable[ScoringUnit]
        total: int | None = None
        if args.ground_truth:
            if rule.field is not None:
                raise InputError("--trial-field reads the result files; with --ground-truth give --trial N")
            units = (
                replace(r, model=args.model or r.model, method=args.method or r.method, trial=rule.fixed or 0)
                for r in ground_truth_rollouts(only)
            )
            total = len(only) if only is not None else 800
            scored = with_environment(trials.rollouts(units), env, affinity=_task_of)
        elif args.workers > 1 or args.launcher != "local":  # a worker decodes the lines it replays
            lines = undecoded_results(args.results, trials=rule, **reading)
            scored = numbered(_undecoded(lines, env), trials)
        else:
            scored = with_environment(trials.rollouts(read_results(args.results, trials=rule, **reading)), env)
        checker = FinalSuccess(env.templates)
        report = score_to_file(
            scored,
            args.out,
            total=total,
            desc="bfcl",
            prepare=partial(_with_success, checker=checker, env=env),  # a partial pickles to worker processes
            inputs=args.results,
            options=output_options(args),
        )
    except ImportError as exc:
        raise InputError(str(exc), hint=None if INSTALL_HINT in str(exc) else INSTALL_HINT) from None
    return finish(report, args.out, trials)


def _task_of(unit: Rollout) -> str:
    return unit.task_id


def _undecoded(
    lines: Iterable[tuple[str, Callable[[], Rollout | Skipped]] | Skipped], env: BfclEnvironment
) -> Iterator[Undecoded | Skipped]:
    """Each result line as an :class:`Undecoded` unit on ``env``, named by its task (its affinity: a task's ground
    truth and initial state are cached where its first rollout replays, so the others of that task go to the
    same process, and no two processes build them)."""
    for line in lines:
        yield line if isinstance(line, Skipped) else Undecoded(line[1], env, affinity=line[0])


def _with_success(unit: Rollout, checker: FinalSuccess, env: BfclEnvironment) -> Scorable:
    """The rollout with Y set by BFCL's multi-turn rule, keeping BFCL's reason for a failure (inside the
    rollout's budget), on ``env`` taking over what the check ran (so the replay runs no call twice)."""
    try:
        task = load_task(unit.task_id)
    except KeyError:
        raise ReplayError(f"BFCL has no task {unit.task_id} ({unit.metadata.get('source', 'input')})") from None
    try:
        check = checker.check_rollout(task, unit, keep_execution=True)
    except InputError as exc:  # a malformed metadata.bfcl_calls: this record only
        raise ReplayError(f"{unit.task_id} ({unit.metadata.get('source', 'input')}): {exc.detail()}") from None
    metadata = dict(unit.metadata)
    if check.reason:
        metadata["bfcl_check"] = check.reason
    return Scorable(with_success(replace(unit, metadata=metadata), check.success), env.after(check.execution))
