"""``prefix-exec score custom``: score rollouts on tools declared in a JSON/YAML spec.

What every command that replays on a tool spec shares (its options, the run and its consistency report) is the
library's: :mod:`prefix_exec.sources.spec`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from prefix_exec.cli.common import (
    add_scoring_options,
    numbering,
    trial_rule,
)
from prefix_exec.cli.spec_options import add_spec_options, note_spec, policy_of, score_on_spec, spec_of
from prefix_exec.envs.custom.environment import load_spec
from prefix_exec.envs.recipe import Recipe
from prefix_exec.scoring.units import with_environment
from prefix_exec.sources.spec import read_units


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


def handle(args: argparse.Namespace) -> int:
    policy = policy_of(args)
    env = spec_of(args, policy)
    note_spec(env, args.tools)
    units = read_units(
        args.rollouts, keep_going=args.keep_going, model=args.model, method=args.method, trials=trial_rule(args)
    )
    trials = numbering(args)
    recipe = Recipe(load_spec, (args.tools,), {"hooks": args.hooks, "policy": policy})  # built again per worker
    inputs: list[str | Path] = [*args.rollouts, args.tools, *([args.hooks] if args.hooks else [])]
    return score_on_spec(
        with_environment(trials.rollouts(units), env, recipe),
        args,
        trials,
        policy=policy,
        desc=f"scoring {env.name}",
        inputs=inputs,
    )
