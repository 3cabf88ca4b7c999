"""``prefix-exec score custom``: score rollouts on tools declared in a JSON/YAML spec."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from prefix_exec.cli.common import add_scoring_options, finish, output_options
from prefix_exec.envs.custom import load_spec
from prefix_exec.errors import InputError
from prefix_exec.io import iter_json_lines, rollout_from_json
from prefix_exec.replay import Skipped
from prefix_exec.scoring import score_to_file
from prefix_exec.trajectory import Rollout


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
    parser.add_argument("--tools", required=True, metavar="SPEC", help="tool spec file (.json, .yaml or .yml)")
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


def run(args: argparse.Namespace) -> int:
    env = load_spec(args.tools)
    units = read_units(args.rollouts, keep_going=args.keep_going, model=args.model, method=args.method)
    report = score_to_file(
        units,
        lambda _r: env,
        args.out,
        desc=f"scoring {env.name}",
        inputs=[*args.rollouts, args.tools],
        **output_options(args),
    )
    return finish(report, args.out)
