"""``prefix-exec score traces``: score the traces agent frameworks write, one rollout per trace
(:mod:`prefix_exec.importers.traces`). The flow is ``score transcripts``'s: the same spec options, the same
environments (``--tools``, else each trace's own tools list, schema checks only), the same scoring."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefix_exec.cli.common import (
    add_scoring_options,
    numbering,
    trial_rule,
)
from prefix_exec.cli.spec_options import add_spec_options, note_spec, policy_of, score_on_spec, spec_of
from prefix_exec.envs.custom.evidence import EvidencePolicy
from prefix_exec.errors import InputError
from prefix_exec.importers.traces import FORMATS, TraceFile, TraceIdentity
from prefix_exec.importers.transcripts import Identity, unreadable
from prefix_exec.records.jsonl import expand_inputs
from prefix_exec.scoring.units import Scorable, numbered
from prefix_exec.sources.own_tools import SCHEMA_ONLY_NOTE, OwnLists
from prefix_exec.trajectory import Skipped

#: File names a folder is searched for.
PATTERNS = ("*.jsonl", "*.json", "*.ndjson", "*.pb", "*.binpb")


def register(benchmarks: Any, name: str) -> None:
    parser: argparse.ArgumentParser = benchmarks.add_parser(
        name,
        help="traces: OTLP/JSON (GenAI, OpenInference, MLflow attributes), OpenAI Agents SDK, LangSmith runs",
        description=(
            "Score the traces agent frameworks write, one rollout per trace. Formats read, detected per file: "
            f"{', '.join(FORMATS.values())}. OTLP spans are read in their attribute dialect (OpenTelemetry GenAI "
            "conventions current and legacy, OpenInference, MLflow). The conversation is the last model span's "
            "messages, each tool span matched to the model's call by call id, else by name and order; a tool span "
            "with status ERROR, an exception event, error.type or an error field is a recorded refusal. The task "
            "id is --task-id-field (a span attribute), else gen_ai.conversation.id, session.id, ... (docs/traces.md), "
            "else the trace id; Y is --success-field (a span attribute); without it Y is not in the trace and the "
            "records' success is null (absent: metrics shows success and RR as n/a, never 0). Spans are grouped "
            "per trace in bounded memory "
            "(at most 50,000 spans per trace). See docs/traces.md."
        ),
    )
    parser.add_argument(
        "traces",
        nargs="+",
        metavar="TRACES",
        help="trace files (.jsonl, .json; .pb, .binpb with the otlp extra) or folders of them",
    )
    add_spec_options(
        parser,
        "tool spec: ours, an OpenAI tools array or an MCP tools/list result (default: the tools list the trace's "
        "model spans carry, gen_ai.tool.definitions or llm.tools; schema checks only)",
    )
    fields = parser.add_argument_group("where the rollout's identity comes from (span attribute names)")
    fields.add_argument("--task-id-field", metavar="ATTRIBUTE", help="task id attribute (default: docs/traces.md)")
    fields.add_argument("--success-field", metavar="ATTRIBUTE", help="final success attribute: true/false or 0/1")
    fields.add_argument("--dataset", help="dataset name for every record (default: the --tools spec's, else 'traces')")
    add_scoring_options(parser)  # --model, --method, --trial, --trial-field, --out, --workers, --keep-going ...
    parser.set_defaults(handler=handle)


def identity_of(args: argparse.Namespace, default_dataset: str) -> TraceIdentity:
    """The :class:`TraceIdentity` the options describe."""
    values = {name: getattr(args, name) for name in ("model", "method", "dataset") if getattr(args, name)}
    trials = trial_rule(args)
    if trials.field is not None:
        raise InputError("--trial-field names a transcript field; traces take --trial N or number trials in order")
    if trials.fixed is not None:
        values["trial"] = trials.fixed
    # success None: a trace without --success-field has no Y, and its rollout says so (absent, not 0)
    defaults = {"method": "default", "trial": None, "dataset": default_dataset, "success": None}
    return TraceIdentity(Identity({}, values, defaults), args.task_id_field, args.success_field)


def handle(args: argparse.Namespace) -> int:
    policy = policy_of(args)
    if args.hooks and not args.tools:
        raise InputError("--hooks layers onto a --tools spec", hint="pass the tool list as --tools too")
    files = expand_inputs(
        args.traces,
        lambda folder: [p for pattern in PATTERNS for p in folder.glob(pattern)],
        none_found="no .jsonl, .json, .ndjson, .pb or .binpb files in this folder",
    )
    env = None
    if args.tools:
        env = spec_of(args, policy)
        note_spec(env, args.tools)
    identity = identity_of(args, env.name if env is not None else "traces")
    if not args.success_field:
        print(
            "prefix-exec: note: no --success-field: Y is not read from the traces; the records' success is null "
            "(not recorded): metrics shows success and RR as n/a; PEC, FED, TER and AUC-PEC do not use Y",
            file=sys.stderr,
        )
    trials = numbering(args)
    units = _units(files, identity, env, keep_going=args.keep_going, policy=policy)
    inputs: list[str | Path] = [*files, *(p for p in (args.tools, args.hooks) if p)]
    return score_on_spec(numbered(units, trials), args, trials, policy=policy, desc="scoring traces", inputs=inputs)


def _units(
    files: list[Path], identity: TraceIdentity, env: Any, *, keep_going: bool, policy: EvidencePolicy
) -> Iterator[Scorable | Skipped]:
    """Each trace's rollout, on ``env`` or, without it, on the tools list its model spans carry (as
    ``score transcripts`` does with a conversation's own list); says on the log what each file held."""
    own = OwnLists(policy, SCHEMA_ONLY_NOTE)
    for path in files:
        found = TraceFile(path, identity, tolerant=keep_going)
        for item in found:
            try:
                if isinstance(item, InputError):
                    raise item
                yield Scorable(item.rollout, env) if env is not None else own.pair_transcript(item)
            except InputError as exc:
                yield unreadable(exc, keep_going)
        print(found.note(), file=sys.stderr)
