"""The options every command that replays on a tool spec takes, and what reads them: ``score custom``, ``score
transcripts`` (``score openai``), ``score traces`` and ``score inspect``; and ``--tau2-data``, which ``score tau``
and ``score inspect`` take.

- :func:`add_spec_options` and what reads them: :func:`policy_of` (how recorded outcomes count), :func:`spec_of`
  (``--tools`` with ``--hooks``, loaded within ``--rollout-budget``) and :func:`note_spec`;
- :func:`score_on_spec`: the library's run (:func:`prefix_exec.sources.spec.score_on_spec`) on the parsed options;
- :func:`add_tau2_data_option`.

With :mod:`prefix_exec.cli.common`, the only module of the command line other commands' modules import.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from prefix_exec.cli.common import consistency_path, finish, output_options
from prefix_exec.envs.custom import evidence
from prefix_exec.envs.custom.evidence import DEFAULT_ERROR_PATTERN, EvidencePolicy
from prefix_exec.envs.custom.session import CustomEnvironment
from prefix_exec.errors import InputError
from prefix_exec.scoring.numbering import Numbering
from prefix_exec.scoring.units import ScoringUnit
from prefix_exec.sources import spec


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


def spec_of(args: argparse.Namespace, policy: EvidencePolicy) -> CustomEnvironment:
    """The environment of ``--tools`` (and ``--hooks``), loaded within ``--rollout-budget``
    (:func:`prefix_exec.sources.spec.spec_within`)."""
    return spec.spec_within(args.tools, args.hooks, policy, args.rollout_budget)


def note_spec(env: CustomEnvironment, path: str | Path) -> None:
    """Say on stderr that only schema checks apply, when the spec read from ``path`` declares no refs or hooks,
    and which tools the side file names that an MCP listing lacks."""
    for note in (spec.schema_only_note(env, path), spec.unlisted_note(env, path)):
        if note is not None:
            print(note, file=sys.stderr)


def score_on_spec(
    units: Iterable[ScoringUnit],
    args: argparse.Namespace,
    numbering: Numbering,
    *,
    policy: EvidencePolicy,
    desc: str,
    inputs: list[str | Path],
    total: int | None = None,
) -> int:
    """Score ``units`` into ``--out`` with the command's output options, write the consistency report
    (``--consistency``, default ``<out>.consistency.json``: written when a call had a recorded outcome or
    ``--consistency`` was given; its lines on stderr) with :func:`prefix_exec.sources.spec.score_on_spec`, and
    return the command's exit status (:func:`~prefix_exec.cli.common.finish`, which says what ``numbering`` did).
    The report's path is checked before scoring: an input, ``--out``, a folder or a FIFO is refused."""
    report = spec.score_on_spec(
        units,
        args.out,
        policy=policy,
        desc=desc,
        inputs=inputs,
        report_path=consistency_path(args, inputs),
        report_always=bool(args.consistency),
        options=output_options(args),
        log=sys.stderr,
        total=total,
    )
    return finish(report, args.out, numbering)


def add_tau2_data_option(parser: argparse.ArgumentParser) -> None:
    """``--tau2-data DIR``: where the tau2 domains' databases are, for the commands that regrade tau2 rollouts."""
    parser.add_argument(
        "--tau2-data",
        metavar="DIR",
        help="tau2 data folder holding tau2/domains/<domain>/db.json (default: TAU2_DATA_DIR, then the package's)",
    )
