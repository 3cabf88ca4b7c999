"""``prefix-exec score transcripts``: score transcripts in the forms agents write them, one rollout per
conversation (:mod:`prefix_exec.importers.transcripts`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from prefix_exec.cli.common import (
    add_scoring_options,
    numbering,
    trial_rule,
)
from prefix_exec.cli.spec_options import (
    add_spec_options,
    infer_to_file,
    inference_options,
    note_spec,
    policy_of,
    score_on_spec,
    spec_of,
)
from prefix_exec.envs.custom.environment import load_spec
from prefix_exec.envs.custom.evidence import EvidencePolicy
from prefix_exec.envs.custom.session import CustomEnvironment
from prefix_exec.envs.recipe import Recipe
from prefix_exec.errors import InputError
from prefix_exec.importers.transcripts import (
    READERS,
    Identity,
    TranscriptFile,
    decodings,
    read_batch,
    unreadable,
)
from prefix_exec.records.jsonl import expand_inputs
from prefix_exec.scoring.units import Batch, Scorable, Undecoded, numbered
from prefix_exec.sources.own_tools import SCHEMA_ONLY_NOTE, OwnLists
from prefix_exec.trajectory import Skipped

#: The records' note when a conversation's own tools list served as its spec.
#: The identity fields a ``--<name>-field PATH`` option reads from a conversation, and each option's help.
FIELDS = {
    "task_id": "task id (default: task_id, metadata.task_id or id); several comma-separated paths are joined "
    "with '/' (metadata.suite_name,metadata.name: AgentDojo's task names repeat across suites)",
    "success": "final success, 0/1 or true/false (default: success, metadata.success, reward or metadata.reward)",
    "model": "model (default: model or metadata.model; or a fixed --model)",
    "method": "method (default: method or metadata.method, else 'default'; or a fixed --method)",
}
#: With workers, a file of at most this many bytes is one :class:`~prefix_exec.scoring.units.Batch`: a worker reads,
#: decodes and replays all its conversations (a larger one is read here and its conversations sent one by one, so
#: that no worker holds a whole large file).
BATCH_BYTES = 8 << 20
#: The --tools environment and the recipe a worker process builds it again by (:mod:`prefix_exec.envs.recipe`).
Spec = tuple[CustomEnvironment, Recipe]


def register(benchmarks: Any, name: str) -> None:
    forms = ", ".join(f"{r.label} ({r.name})" for r in READERS.values())
    parser: argparse.ArgumentParser = benchmarks.add_parser(
        name,
        help="transcripts: OpenAI Chat or Responses, Anthropic Messages, LangChain, tau-bench results",
        description=(
            f"Score transcripts, one rollout per conversation. Forms read: {forms}; each file's form is "
            "detected from its records (--format forces one). A file is JSONL (one conversation per line), a "
            'JSON list, or a JSON object wrapping lists ({"data": [...]}). With --tools the calls are checked '
            "against that spec (ours, an OpenAI tools array or an MCP tools/list result, plus --hooks); without "
            "it each conversation's own tools list is the spec, and only schema checks apply. Identity fields "
            "are dotted paths into the conversation. See docs/custom.md."
        ),
    )
    parser.add_argument(
        "transcripts", nargs="+", metavar="TRANSCRIPTS", help="JSONL or .json files (or folders of them)"
    )
    parser.add_argument(
        "--format",
        choices=["auto", *READERS],
        default="auto",
        help="the form of every file (default: auto, detected per file from its records)",
    )
    add_spec_options(
        parser,
        "tool spec: ours, an OpenAI tools array or an MCP tools/list result (default: each conversation's "
        "own 'tools' list, schema checks only)",
    )
    fields = parser.add_argument_group("where the rollout's identity comes from (dotted paths into a conversation)")
    for field, what in FIELDS.items():
        fields.add_argument(f"--{field.replace('_', '-')}-field", metavar="PATH", help=what)
    fields.add_argument(
        "--dataset",
        help="dataset name for every record (default: dataset or metadata.dataset, else the --tools spec's name, "
        "else 'transcripts')",
    )
    parser.add_argument(
        "--infer-spec",
        action="store_true",
        help="infer the --hooks side file from these transcripts first (as prefix-exec infer-spec does, with its "
        "default thresholds), write it beside --out as <out>.spec.yaml, and score with it (needs --tools; "
        "docs/custom.md, 'Inferring a side file')",
    )
    add_scoring_options(parser)  # --model, --method (fixed names instead of fields), --trial, --trial-field
    parser.set_defaults(handler=handle)


def identity_of(args: argparse.Namespace, default_dataset: str) -> Identity:
    """The :class:`Identity` the options describe; a field named both ways is a usage error."""
    for fixed, field in (("model", "model_field"), ("method", "method_field")):
        if getattr(args, fixed) and getattr(args, field):
            raise InputError(f"give --{fixed} or --{fixed}-field, not both")
    paths = {name: getattr(args, f"{name}_field") for name in FIELDS if getattr(args, f"{name}_field")}
    values = {name: getattr(args, name) for name in ("model", "method", "dataset") if getattr(args, name)}
    trials = trial_rule(args)  # --trial N, --trial-field PATH (common to every score command)
    if trials.fixed is not None:
        values["trial"] = trials.fixed
    if trials.field is not None:
        paths["trial"] = trials.field
    # No trial in the conversation: None, so the rollout says its trial was not given (scoring.numbering.Numbering).
    return Identity(paths, values, {"method": "default", "trial": None, "dataset": default_dataset})


def handle(args: argparse.Namespace) -> int:
    policy = policy_of(args)
    if args.infer_spec and args.hooks:
        raise InputError("--infer-spec writes the side file it scores with: give it or --hooks, not both")
    if (args.hooks or args.infer_spec) and not args.tools:
        raise InputError(
            f"{'--hooks' if args.hooks else '--infer-spec'} layers onto a --tools spec",
            hint="pass the tool list as --tools too (its own file, or the transcript's tools saved as a JSON array)",
        )
    files = expand_inputs(
        args.transcripts,
        lambda folder: [*folder.glob("*.jsonl"), *folder.glob("*.json")],
        none_found="no .jsonl or .json files in this folder",
    )
    if args.infer_spec:
        args.hooks = _inferred(args, files)
    spec: Spec | None = None
    if args.tools:
        spec = (spec_of(args, policy), Recipe(load_spec, (args.tools,), {"hooks": args.hooks, "policy": policy}))
        note_spec(spec[0], args.tools)
    identity = identity_of(args, spec[0].name if spec is not None else "transcripts")
    forced = None if args.format == "auto" else args.format
    # With workers, a worker decodes each conversation (most of the reading's cost) before replaying it.
    defer = spec is not None and (args.workers > 1 or args.launcher != "local")
    # A file goes to a local worker whole (Batch); a Ray actor may run on another machine, without the file.
    whole = defer and args.launcher == "local"
    units = _units(files, identity, forced, spec, keep_going=args.keep_going, policy=policy, defer=defer, whole=whole)
    trials = numbering(args)
    inputs: list[str | Path] = [*files, *(p for p in (args.tools, args.hooks) if p)]
    return score_on_spec(
        numbered(units, trials), args, trials, policy=policy, desc="scoring transcripts", inputs=inputs
    )


def _units(
    files: list[Path],
    identity: Identity,
    forced: str | None,
    spec: Spec | None,
    *,
    keep_going: bool,
    policy: EvidencePolicy,
    defer: bool = False,
    whole: bool = False,
) -> Iterator[Scorable | Undecoded | Batch | Skipped]:
    """Rollouts of every conversation, each with ``spec`` or, without one, the environment of its own tools list
    (built once per distinct list, kept by digest, with ``policy``); with ``defer`` and a ``spec``, each
    conversation :class:`Undecoded`, or, with ``whole`` too, each file of at most :data:`BATCH_BYTES` a
    :class:`Batch`, for worker processes to read and decode (a worker reads the file by its path: ``whole`` only
    for processes on this machine). Says on the log which form each file was read as."""
    own = OwnLists(policy, SCHEMA_ONLY_NOTE)  # without a spec: each distinct list met, its environment
    for path in files:
        if whole and spec is not None and _size(path) <= BATCH_BYTES:
            read = partial(read_batch, str(path), identity, forced, keep_going)
            yield Batch(read, *spec, name=str(path))  # its note is said once its conversations are written
            continue
        transcripts = TranscriptFile(path, identity, format=forced, tolerant=keep_going)
        if defer and spec is not None:
            # The decodings are the importer's functions: a worker that decodes imports no CLI (numpy, the parser)
            for unit in decodings(transcripts, keep_going):
                yield unit if isinstance(unit, Skipped) else Undecoded(unit, *spec)
        else:
            for item in transcripts:
                try:
                    if isinstance(item, InputError):
                        raise item
                    yield Scorable(item.rollout, *spec) if spec else own.pair_transcript(item)
                except InputError as exc:
                    yield unreadable(exc, keep_going)
        print(transcripts.note(), file=sys.stderr)


def _size(path: Path) -> int:
    """``path``'s size in bytes; 0 when it cannot be seen (reading it says why, where it is read)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _inferred(args: argparse.Namespace, files: list[Path]) -> str:
    """Infer the side file from ``files`` and write it beside ``--out`` (``<out>.spec.yaml``; kept by ``--resume``
    when the inputs give the same file, replaced by ``--overwrite``); its path. A records file that would be refused
    is refused first, before any inference."""
    out = Path(args.out)
    if out.is_file() and out.stat().st_size > 0 and not (args.resume or args.overwrite):
        raise InputError(
            "the output file already holds records",
            path=out,
            hint="pass --resume to continue it, --overwrite to replace it, or choose another --out",
        )
    side = f"{args.out}.spec.yaml"
    form = "transcripts" if args.format == "auto" else args.format
    options = inference_options(args, form=form, tools=args.tools, keep_going=args.keep_going)
    inputs: list[str | Path] = [*files, args.tools, args.out]
    infer_to_file(files, options, side, inputs=inputs, overwrite=args.overwrite, resume=args.resume, log=sys.stderr)
    return side
