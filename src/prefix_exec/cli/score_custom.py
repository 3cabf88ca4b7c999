"""``prefix-exec score custom``: score rollouts on tools declared in a JSON/YAML spec."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from prefix_exec.cli.common import add_scoring_options, finish, output_options
from prefix_exec.envs.custom import CustomEnvironment, load_spec
from prefix_exec.envs.spec_formats import FORM_NAMES
from prefix_exec.errors import InputError
from prefix_exec.io import iter_json_lines, rollout_from_json
from prefix_exec.scoring import paired, score_to_file
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
    parser.set_defaults(run=run)


def read_units(
    paths: list[str], *, keep_going: bool, model: str | None, method: str | None
) -> Iterator[Rollout | Skipped]:
    """Rollouts from canonical JSONL; with ``keep_going`` a malformed row becomes a ``Skipped``."""
    for path in paths:
        for number, data in iter_json_lines(path, tolerant=keep_going):
            try:
                if isinstance(data, InputError):
                    raise data
                rollout = rollout_from_json(data, path=path, line=number)
            except InputError as exc:
                if not keep_going:
                    raise
                yield Skipped(f"{path}:{number}", exc.detail())
                continue
            if model or method:
                rollout = replace(rollout, model=model or rollout.model, method=method or rollout.method)
            yield rollout


def add_spec_options(parser: argparse.ArgumentParser, tools_help: str, *, required: bool = False) -> None:
    """``--tools SPEC``, the tool spec (its help says where it applies), and ``--hooks``, the side file
    layered onto it: what every command that replays on a tool spec takes."""
    parser.add_argument("--tools", required=required, metavar="SPEC", help=tools_help)
    parser.add_argument(
        "--hooks",
        metavar="HOOKS.yaml",
        help="side file layering refs, produces, invalidates, precondition/effect hooks, state and tasks onto "
        "the --tools spec, keyed by tool name (docs/custom.md)",
    )


def note_schema_only(env: CustomEnvironment, source: str) -> None:
    """Say on stderr that only schema checks apply, when the spec declares no refs or hooks."""
    if env.schema_only:
        print(
            f"prefix-exec: note: {source} declares argument schemas only: only schema checks apply "
            "(tool names, turn exposure, arguments); layer refs and hooks with --hooks (docs/custom.md)",
            file=sys.stderr,
        )


def run(args: argparse.Namespace) -> int:
    env = load_spec(args.tools, hooks=args.hooks)
    note_schema_only(env, f"{args.tools} ({FORM_NAMES[env.form]})")
    units = read_units(args.rollouts, keep_going=args.keep_going, model=args.model, method=args.method)
    report = score_to_file(
        paired(units, env),
        args.out,
        desc=f"scoring {env.name}",
        inputs=[*args.rollouts, args.tools, *([args.hooks] if args.hooks else [])],
        **output_options(args),
    )
    return finish(report, args.out)
