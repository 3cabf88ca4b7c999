"""The options every command that replays on a tool spec takes, and what reads them: ``score custom``, ``score
transcripts`` (``score openai``), ``score traces`` and ``score inspect``; and ``--tau2-data``, which ``score tau``
and ``score inspect`` take.

- :func:`add_spec_options` and what reads them: :func:`policy_of` (how recorded outcomes count), :func:`spec_of`
  (``--tools`` with ``--hooks``, loaded within ``--rollout-budget``) and :func:`note_spec`;
- :func:`score_on_spec`: the library's run (:func:`prefix_exec.sources.spec.score_on_spec`) on the parsed options;
- :func:`add_tau2_data_option`;
- spec inference's options and its locked output, for ``infer-spec`` and ``score transcripts --infer-spec``:
  :func:`add_inference_options`, :func:`inference_options`, :func:`infer_to_file`.

With :mod:`prefix_exec.cli.common`, the only module of the command line other commands' modules import.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from prefix_exec.cli.common import consistency_path, finish, float_between, output_options, positive_int
from prefix_exec.envs.custom import evidence
from prefix_exec.envs.custom.evidence import DEFAULT_ERROR_PATTERN, EvidencePolicy
from prefix_exec.envs.custom.session import CustomEnvironment
from prefix_exec.errors import InputError
from prefix_exec.records import outputs
from prefix_exec.scoring.numbering import Numbering
from prefix_exec.scoring.run import hold_lock
from prefix_exec.scoring.units import ScoringUnit
from prefix_exec.sources import spec

if TYPE_CHECKING:
    from prefix_exec.inference import Options, Result
    from prefix_exec.inference.evidence import Evidence


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
    add_error_pattern(
        evidence_options,
        "a recorded tool reply without an error flag whose text this Python regex finds (re.search, first "
        "10,000 characters) is a refusal of the call (default: %(default)r, replies beginning with 'Error' or "
        "with an exception's class and a colon, such as 'ValueError: ...')",
        "only a log's own error flags make a recorded refusal; no reply text does",
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


def add_error_pattern(group: argparse._ActionsContainer, pattern_help: str, flags_help: str) -> None:
    """``--error-pattern REGEX`` (default :data:`DEFAULT_ERROR_PATTERN`, help ``pattern_help``) and, exclusive of
    it, ``--no-error-pattern`` (help ``flags_help``), in ``group``: :func:`policy_of` reads them for ``score``, as
    spec inference does."""
    patterns = group.add_mutually_exclusive_group()
    patterns.add_argument("--error-pattern", metavar="REGEX", default=DEFAULT_ERROR_PATTERN, help=pattern_help)
    patterns.add_argument("--no-error-pattern", action="store_true", help=flags_help)


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
    return EvidencePolicy(error_pattern=pattern, require_tools=getattr(args, "require_tools", False))


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


def add_inference_options(parser: argparse.ArgumentParser) -> None:
    """The options of spec inference (``infer-spec``): its thresholds, the cap on values tracked, and which recorded
    errors are evidence (``--error-pattern``, ``--no-error-pattern``, ``--no-error-evidence``)."""
    from prefix_exec.inference.candidates import DEFAULTS
    from prefix_exec.inference.evidence import DEFAULT_MAX_VALUES

    group = parser.add_argument_group("how inference decides (docs/custom.md, 'Inferring a side file')")
    group.add_argument(
        "--min-support",
        type=positive_int,
        default=DEFAULTS.min_support,
        metavar="N",
        help="an argument is a reference only with at least N cases (distinct values per conversation), N of them "
        "from earlier results under the flow rule (default: %(default)s)",
    )
    unit = float_between(0.0, 1.0)
    for flag, default, what in (
        (
            "--min-confidence",
            DEFAULTS.min_confidence,
            "share of an argument's values not given by the "
            "conversation that an earlier result held (flow rule), or of all its values explained (name rule)",
        ),
        (
            "--min-edge-share",
            DEFAULTS.min_edge_share,
            "a result path joins a reference's kind (its tool produces it) when it fed the reference --min-support "
            "values, or this share of its flowing values",
        ),
        (
            "--min-idlike",
            DEFAULTS.min_idlike,
            "share of an argument's values that must look like ids (not numbers "
            "under 10000, dates, booleans or text of more than four words)",
        ),
    ):
        group.add_argument(flag, type=unit, default=default, metavar="X", help=f"{what} (default: %(default)s)")
    group.add_argument(
        "--max-values",
        type=positive_int,
        default=DEFAULT_MAX_VALUES,
        metavar="N",
        help="distinct values remembered per argument, for --explain's count (default: %(default)s); memory is "
        "bounded whatever the corpus",
    )
    add_error_pattern(
        group,
        "a reply without an error flag whose text this regex finds is a recorded error (default: %(default)r, "
        "as score's)",
        "only a log's own error flags make errors",
    )
    group.add_argument(
        "--no-error-evidence",
        action="store_true",
        help="recorded errors are no evidence at all (neither flags nor pattern): no 'refused' rule, no invalidates, "
        "and a refused call's reply is read as any other",
    )


def inference_options(args: argparse.Namespace, *, form: str, tools: str | None, keep_going: bool) -> Options:
    """The :class:`prefix_exec.inference.Options` of the parsed options (thresholds at their defaults when the
    command has no such options: ``score transcripts --infer-spec``)."""
    from prefix_exec.inference import Options
    from prefix_exec.inference.candidates import DEFAULTS, Thresholds

    thresholds = Thresholds(
        min_support=getattr(args, "min_support", DEFAULTS.min_support),
        min_confidence=getattr(args, "min_confidence", DEFAULTS.min_confidence),
        min_edge_share=getattr(args, "min_edge_share", DEFAULTS.min_edge_share),
        min_idlike=getattr(args, "min_idlike", DEFAULTS.min_idlike),
    )
    return Options(
        form=form,
        tools=tools,
        policy=policy_of(args),
        errors=not getattr(args, "no_error_evidence", False),
        thresholds=thresholds,
        max_values=getattr(args, "max_values", Options().max_values),
        keep_going=keep_going,
    )


def infer_to_file(
    files: list[Path],
    options: Options,
    out: str | None,
    *,
    inputs: list[str | Path],
    overwrite: bool,
    log: TextIO,
    resume: bool = False,
) -> Result:
    """Infer from ``files`` (progress on ``log``, a line per file with the totals so far) and write the side file
    to ``out`` (``None``: write nothing). The output follows every command's rules
    (:mod:`prefix_exec.records.outputs`): never one of ``inputs``, an existing file refused unless ``overwrite``
    (with ``resume``, kept when the inference gives the same text, refused when it differs), held locked while the
    command runs, written whole."""
    from prefix_exec.inference import infer_spec

    if out is None:
        result = infer_spec(files, options, on_file=_progress(files, log), on_count=_counted(log))
        _say_skipped(result, log)
        return result
    path = Path(out)
    outputs.check_file(path, inputs)
    existing = path.is_file() and path.stat().st_size > 0
    if existing and not overwrite and not resume:
        raise InputError(
            "the side file already exists", path=path, hint="pass --overwrite to replace it, or choose another path"
        )
    fresh = not path.exists()
    try:
        with hold_lock(path):
            result = infer_spec(files, options, on_file=_progress(files, log), on_count=_counted(log))
            if existing and resume and not overwrite and path.read_text(encoding="utf-8") != result.text:
                raise InputError(
                    "the side file the records were scored with differs from what the inputs give now",
                    path=path,
                    hint="pass --overwrite to score again with a new side file, or score without --resume",
                )
            outputs.write_text(path, result.text, inputs)
    except BaseException:
        if fresh and path.is_file() and path.stat().st_size == 0:
            path.unlink()
        raise
    _say_skipped(result, log)
    print(f"prefix-exec: infer-spec: {summary(result)} -> {path}", file=log)
    return result


def _say_skipped(result: Result, log: TextIO) -> None:
    """Each record or file that could not be read (``--keep-going``), and why: never dropped unsaid."""
    for unit in result.skipped:
        print(f"prefix-exec: skipped {unit.where}: {unit.error}", file=log)


def summary(result: Result) -> str:
    """One line of what an inference found and read."""
    kinds = sorted({r.kind for r in result.inferred.references})
    refs = len(result.inferred.references)
    skipped = f", {len(result.skipped)} skipped" if result.skipped else ""
    return (
        f"{refs} reference{'s' if refs != 1 else ''} of {len(kinds)} kind{'s' if len(kinds) != 1 else ''} "
        f"({', '.join(kinds[:8])}{', ...' if len(kinds) > 8 else ''}), {len(result.inferred.productions)} produces, "
        f"{len(result.inferred.invalidations)} invalidates from {result.evidence.conversations:,} conversations "
        f"({result.evidence.calls:,} calls{skipped})"
    )


def _progress(files: list[Path], log: TextIO) -> Callable[[Path, str], None]:
    """Tell ``log`` each file before it is read: its place among all, its form."""
    seen = [0]

    def told(path: Path, form: str) -> None:
        seen[0] += 1
        print(f"prefix-exec: infer-spec: [{seen[0]}/{len(files)}] reading {path} ({form})", file=log, flush=True)

    return told


def _counted(log: TextIO) -> Callable[[Evidence], None]:
    """Tell ``log`` how much was read so far (inside a large file, where a line per file says too little)."""

    def told(evidence: Evidence) -> None:
        print(
            f"prefix-exec: infer-spec: {evidence.conversations:,} conversations, {evidence.calls:,} calls read",
            file=log,
            flush=True,
        )

    return told
