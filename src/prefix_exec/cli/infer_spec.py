"""``prefix-exec infer-spec``: a ``--hooks`` side file (``refs``, ``produces``, ``invalidates``) inferred from logs
(:mod:`prefix_exec.inference`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from prefix_exec.cli.spec_options import add_inference_options, infer_to_file, inference_options
from prefix_exec.errors import InputError
from prefix_exec.inference.corpus import FORMS
from prefix_exec.records.jsonl import expand_inputs


def register(commands: Any, name: str) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help="infer a --hooks side file (refs, produces, invalidates) from logs: which arguments must hold a value "
        "an earlier call produced",
        description=(
            "Read logs of every form prefix-exec reads (transcripts in any form score transcripts reads, tau2 "
            "results files, inspect logs, canonical rollouts such as a guard's record folder) and write the side "
            "file that says which arguments are references: an argument is one when the values passed there came "
            "from earlier results (exact values, counted per result path and argument, arrays element-wise), or "
            "when it is named like an id and its values were always explained by an earlier result or message; "
            "enums, dates, numbers and free text never are. Each entry carries its evidence as a comment; "
            "--explain TOOL.ARG says why an argument is or is not one. Use the file as it is: score transcripts "
            "--tools TOOLS --hooks SIDE.yaml, or guard --hooks SIDE.yaml. See docs/custom.md, 'Inferring a side "
            "file'."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="log files (.jsonl, .json, .eval) or folders of them")
    parser.add_argument(
        "--tools",
        metavar="SPEC",
        help="the tool spec the side file will be layered on (ours, an OpenAI tools array or an MCP tools/list "
        "result): only its tools and declared arguments are inferred, and its schemas say which arguments are plain "
        "values (default: each conversation's own tools list where it has one)",
    )
    parser.add_argument("--out", metavar="SIDE.yaml", help="where to write the side file (needed unless --explain)")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing --out file (default: refuse to touch it)"
    )
    parser.add_argument(
        "--format",
        choices=FORMS,
        default="auto",
        help="the form of every file (default: auto, decided per file: .eval is inspect, a .json holding "
        "'simulations' tau2, JSONL of canonical rollouts rollouts, anything else transcripts in their detected form)",
    )
    parser.add_argument(
        "--explain",
        action="append",
        default=[],
        metavar="TOOL.ARG",
        help="print why an argument (book_reservation.user_id, book_reservation.flights[*].flight_number) is or is "
        "not a reference, with its counts and examples (repeatable)",
    )
    parser.add_argument(
        "--keep-going", action="store_true", help="list a record or file that cannot be read and go on (exit 2)"
    )
    add_inference_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if not args.out and not args.explain:
        raise InputError("say where to write the side file with --out SIDE.yaml (or ask --explain TOOL.ARG)")
    files = expand_inputs(
        args.files,
        lambda folder: sorted([*folder.glob("*.jsonl"), *folder.glob("*.json"), *folder.glob("*.eval")]),
        none_found="no .jsonl, .json or .eval files in this folder",
    )
    options = inference_options(args, form=args.format, tools=args.tools, keep_going=args.keep_going)
    inputs: list[str | Path] = [*files, *([args.tools] if args.tools else [])]
    result = infer_to_file(files, options, args.out, inputs=inputs, overwrite=args.overwrite, log=sys.stderr)
    for name in args.explain:
        from prefix_exec.inference.explain import explain

        sys.stdout.write(explain(name, result.inferred, result.evidence, options.thresholds))
    return 2 if result.skipped else 0
