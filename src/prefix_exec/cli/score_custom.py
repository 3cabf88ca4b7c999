"""``prefix-exec score custom``: score rollouts on tools declared in a JSON/YAML spec.

Also the options and the run every command that replays on a tool spec shares (``score custom``, ``score openai``
/ ``score transcripts``, ``score inspect``'s generic path): :func:`add_spec_options`, :func:`policy_of` and
:func:`score_on_spec`, which writes the consistency report of our checks against the recorded outcomes.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from prefix_exec import budget
from prefix_exec.cli.common import (
    add_scoring_options,
    consistency_path,
    finish,
    numbering,
    output_options,
    trial_source,
)
from prefix_exec.envs.custom import evidence
from prefix_exec.envs.custom.environment import CustomEnvironment, load_spec
from prefix_exec.envs.custom.evidence import DEFAULT_ERROR_PATTERN, EvidencePolicy
from prefix_exec.envs.custom.spec_formats import FORM_NAMES
from prefix_exec.envs.recipe import Recipe
from prefix_exec.errors import InputError
from prefix_exec.importers.trials import FROM_INPUT, TrialError, TrialSource, trial_fields
from prefix_exec.records.codec import iter_json_lines, read_records, rollout_from_json
from prefix_exec.records.consistency import Consistency
from prefix_exec.scoring.numbering import Numbering
from prefix_exec.scoring.run import score_to_file
from prefix_exec.scoring.units import ScoringUnit, paired
from prefix_exec.trajectory import Rollout, Skipped


def register(benchmarks: Any, name: str) -> None:
    parser: argparse.ArgumentParser = benchmarks.add_parser(
        name,
        help="your own tools, declared as JSON Schema in a spec file (see docs/custom.md)",
        description=(
            "Score canonical rollouts (JSONL) on tools declared in a JSON or YAML spec: JSON Schema arguments, "
            "value references, and optional Python precondition/effect hooks. See docs/custom.md and "
            "examples/ticketing."
        ),
    )
    add_spec_options(
        parser,
        "tool spec file (.json, .yaml or .yml): our spec, an OpenAI tools array or an MCP tools/list result",
        required=True,
    )
    parser.add_argument("rollouts", nargs="+", metavar="ROLLOUTS.jsonl", help="canonical rollout files")
    add_scoring_options(parser)
    parser.set_defaults(handler=handle)


def read_units(
    paths: list[str],
    *,
    keep_going: bool,
    model: str | None,
    method: str | None,
    trials: TrialSource = FROM_INPUT,
) -> Iterator[Rollout | Skipped]:
    """Rollouts from canonical JSONL, their trial from ``trials`` (a path into the row; its own ``trial`` by
    default); with ``keep_going`` a malformed row becomes a ``Skipped``."""
    for path in paths:
        for number, data in iter_json_lines(path, tolerant=keep_going):
            try:
                if isinstance(data, InputError):
                    raise data
                rollout = rollout_from_json(data, path=path, line=number)
                try:
                    rollout = replace(rollout, **trial_fields(trials.read(data)))
                except TrialError as bad:
                    raise bad.input_error(path=path, line=number) from None
            except InputError as exc:
                if not keep_going:
                    raise
                yield Skipped(f"{path}:{number}", exc.detail())
                continue
            if model or method:
                rollout = replace(rollout, model=model or rollout.model, method=method or rollout.method)
            yield rollout


def add_spec_options(parser: argparse.ArgumentParser, tools_help: str, *, required: bool = False) -> None:
    """What every command that replays on a tool spec takes: ``--tools SPEC`` (its help says where it applies),
    ``--hooks``, the side file layered onto it, how recorded outcomes count (``--error-pattern``,
    ``--no-error-pattern``, ``--require-tools``; :func:`policy_of` reads them) and where the consistency report
    goes (``--consistency``)."""
    parser.add_argument("--tools", required=required, metavar="SPEC", help=tools_help)
    parser.add_argument(
        "--hooks",
        metavar="HOOKS.yaml",
        help="side file layering refs, produces, invalidates, precondition/effect hooks, state and tasks onto "
        "the --tools spec, keyed by tool name (docs/custom.md)",
    )
    evidence_options = parser.add_argument_group("recorded outcomes as evidence (docs/custom.md)")
    patterns = evidence_options.add_mutually_exclusive_group()
    patterns.add_argument(
        "--error-pattern",
        metavar="REGEX",
        default=DEFAULT_ERROR_PATTERN,
        help="a recorded tool reply without an error flag whose text this Python regex finds (re.search, first "
        "10,000 characters) is a refusal of the call (default: %(default)r, replies beginning with 'Error' or "
        "with an exception's class and a colon, such as 'ValueError: ...')",
    )
    patterns.add_argument(
        "--no-error-pattern",
        action="store_true",
        help="only a log's own error flags make a recorded refusal; no reply text does",
    )
    evidence_options.add_argument(
        "--require-tools",
        action="store_true",
        help="a rollout without any tool call fails (precondition at depth 1) whatever the spec allows",
    )
    evidence_options.add_argument(
        "--consistency",
        metavar="PATH.json",
        help="where to write the consistency report: calls where our checks and the recorded outcome disagree "
        "(default: <out>.consistency.json, written when a call has a recorded outcome; for tau2 samples, "
        "replay against tau2's error flags)",
    )


def policy_of(args: argparse.Namespace) -> EvidencePolicy:
    """The :class:`~prefix_exec.envs.custom.evidence.EvidencePolicy` the options of :func:`add_spec_options` describe; a
    pattern that is not a regular expression is an :class:`InputError`."""
    pattern: re.Pattern[str] | None = None
    if not args.no_error_pattern:
        try:
            pattern = evidence.compile_pattern(args.error_pattern)
        except ValueError as exc:
            raise InputError(
                f"--error-pattern {args.error_pattern!r:.80}: {exc}",
                hint="give a Python regular expression, e.g. '\\A\\s*Error\\b', or --no-error-pattern",
            ) from None
    return EvidencePolicy(error_pattern=pattern, require_tools=args.require_tools)


def spec_consistency(policy: EvidencePolicy) -> Consistency:
    """The consistency collector of the generic environment: our checks against the recorded outcomes."""
    return Consistency(evidence.compare(policy), theirs="recorded outcome")


def write_consistency(args: argparse.Namespace, consistency: Consistency, path: str) -> None:
    """Write ``consistency``'s report to ``path`` (:func:`~prefix_exec.cli.common.consistency_path`) when a call
    had a recorded outcome or ``--consistency`` was given; with ``--resume`` every record of the output is
    compared again first (the kept ones were scored by an earlier run)."""
    if args.resume and Path(args.out).is_file():
        consistency.compare_again(read_records(args.out))
    if consistency.calls or args.consistency:
        consistency.write(path, sys.stderr)


def score_on_spec(
    units: Iterable[ScoringUnit],
    args: argparse.Namespace,
    *,
    policy: EvidencePolicy,
    desc: str,
    inputs: list[str | Path],
    total: int | None = None,
    numbered: Numbering | None = None,
) -> int:
    """Score ``units`` into ``--out`` (``score_to_file`` with :func:`output_options`), write the consistency
    report (:func:`write_consistency`, comparing by ``policy``, the one the environments were built with) and
    return the command's exit code; ``numbered``: the numbering the units went through, whose renumbered trials
    are reported (:func:`~prefix_exec.cli.common.finish`)."""
    target = consistency_path(args, inputs)
    consistency = spec_consistency(policy)
    report = score_to_file(
        units,
        args.out,
        total=total,
        desc=desc,
        on_record=consistency,
        inputs=inputs,
        options=output_options(args),
    )
    write_consistency(args, consistency, target)
    return finish(report, args.out, numbered)


def note_schema_only(env: CustomEnvironment, path: str | Path) -> None:
    """Say on stderr that only schema checks apply, when the spec read from ``path`` declares no refs or hooks."""
    if env.schema_only:
        print(
            f"prefix-exec: note: {path} ({FORM_NAMES[env.form]}) declares argument schemas only: only schema checks "
            "apply (tool names, turn exposure, arguments); layer refs and hooks with --hooks (docs/custom.md)",
            file=sys.stderr,
        )


def spec_of(args: argparse.Namespace, policy: EvidencePolicy) -> CustomEnvironment:
    """The environment of ``--tools`` (and ``--hooks``), loaded within ``--rollout-budget``: compiling a spec's
    schemas is bounded work (:mod:`envs.custom.json_schema`), and a spec that still takes longer is refused."""
    try:
        with budget.rollout_budget(args.rollout_budget, 0):
            return load_spec(args.tools, hooks=args.hooks, policy=policy)
    except budget.OverBudget:
        raise InputError(
            f"the tool spec could not be loaded within --rollout-budget {args.rollout_budget:g} s",
            path=args.tools,
            hint="its schemas are too costly to compile; simplify them, or raise --rollout-budget",
        ) from None


def handle(args: argparse.Namespace) -> int:
    policy = policy_of(args)
    env = spec_of(args, policy)
    note_schema_only(env, args.tools)
    units = read_units(
        args.rollouts, keep_going=args.keep_going, model=args.model, method=args.method, trials=trial_source(args)
    )
    trials = numbering(args)
    recipe = Recipe(load_spec, (args.tools,), {"hooks": args.hooks, "policy": policy})  # built again per worker
    return score_on_spec(
        paired(trials.rollouts(units), env, recipe),
        args,
        policy=policy,
        desc=f"scoring {env.name}",
        inputs=[*args.rollouts, args.tools, *([args.hooks] if args.hooks else [])],
        numbered=trials,
    )
