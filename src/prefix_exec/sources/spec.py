"""Rollouts on a tool spec: what ``score custom``, ``score transcripts`` (``score openai``) and ``score inspect``'s
generic path score, and the run they share.

- :func:`read_units`: canonical rollouts (JSONL), each with its trial;
- :func:`add_spec_options` and what reads them: :func:`policy_of` (how recorded outcomes count), :func:`spec_of`
  (``--tools`` with ``--hooks``, loaded within the rollout budget) and :func:`note_schema_only`;
- :func:`score_on_spec`: the scoring run, with the consistency report of our checks against the recorded outcomes
  (:func:`spec_consistency`, :func:`write_consistency`).

The commands' modules (:mod:`prefix_exec.cli`) parse, call these, and print the run's last lines.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path

from prefix_exec import budget
from prefix_exec.envs.custom import evidence
from prefix_exec.envs.custom.environment import load_spec
from prefix_exec.envs.custom.evidence import DEFAULT_ERROR_PATTERN, EvidencePolicy
from prefix_exec.envs.custom.session import CustomEnvironment
from prefix_exec.envs.custom.spec_formats import FORM_NAMES
from prefix_exec.errors import InputError
from prefix_exec.importers.trials import FROM_INPUT, TrialError, TrialRule, trial_fields
from prefix_exec.records.codec import read_records, rollout_from_json
from prefix_exec.records.consistency import Consistency
from prefix_exec.records.jsonl import iter_json_lines
from prefix_exec.scoring.run import ScoreOptions, ScoreReport, score_to_file
from prefix_exec.scoring.units import ScoringUnit
from prefix_exec.trajectory import Rollout, Skipped


def read_units(
    paths: list[str],
    *,
    keep_going: bool,
    model: str | None,
    method: str | None,
    trials: TrialRule = FROM_INPUT,
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
        "10,000 characters) is a refusal of the call (default: %(default)r, replies beginning with 'Error')",
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
    return Consistency(partial(evidence.compare_custom, policy=policy), theirs="recorded outcome")


def write_consistency(args: argparse.Namespace, consistency: Consistency, path: str) -> None:
    """Write ``consistency``'s report to ``path`` (the command's ``--consistency``, default
    ``<out>.consistency.json``) when a call had a recorded outcome or ``--consistency`` was given; with
    ``--resume`` every record of the output is compared again first (the kept ones were scored by an earlier run)."""
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
    report_path: str,
    options: ScoreOptions,
    total: int | None = None,
) -> ScoreReport:
    """Score ``units`` into ``--out`` (``score_to_file`` with ``options``, the command's output options), write
    the consistency report to ``report_path`` (:func:`write_consistency`, comparing by ``policy``, the one the
    environments were built with) and return what the run did (the command says it and picks its exit code)."""
    consistency = spec_consistency(policy)
    report = score_to_file(
        units, args.out, total=total, desc=desc, on_record=consistency, inputs=inputs, options=options
    )
    write_consistency(args, consistency, report_path)
    return report


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
