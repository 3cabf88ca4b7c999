"""``prefix-exec score inspect``: replay inspect_ai eval logs (``.eval``/``.json``) on our environments.

inspect_evals' BFCL multi-turn samples go to the BFCL environment and its tau2 airline/retail samples to the
tau environment, mapped to what the native importers produce (``importers/inspect/bfcl.py``,
``importers/inspect/tau.py``), so they get the same replay, labels and Y rules as native files. Any other task
is replayed on the generic environment: on the tool spec given with ``--tools``, or without it on each sample's
own tool list (the tools its model calls were offered; schema checks only, an empty list included), with the
recorded outcomes as evidence (:mod:`envs.custom.evidence`); ``sources.inspect`` pairs each sample
with its environment.
Y is the log's score; the regrade (``prefix_exec.sources.agreement``) is reported against it. One consistency report
holds the tau2 samples' replay against tau2's error flags and the other samples' checks against their recorded
outcomes.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prefix_exec.cli.common import (
    add_scoring_options,
    consistency_path,
    finish,
    numbering,
    output_options,
    trial_rule,
)
from prefix_exec.cli.spec_options import add_spec_options, add_tau2_data_option, note_spec, policy_of
from prefix_exec.errors import InputError
from prefix_exec.extras import require
from prefix_exec.importers.inspect.archive import ReadBounds
from prefix_exec.importers.inspect.log import log_files
from prefix_exec.importers.inspect.reader import read_log
from prefix_exec.scoring.run import score_to_file
from prefix_exec.sources.inspect import SUPPORTED, InspectSources, is_benchmark
from prefix_exec.trajectory import Skipped


def register(benchmarks: Any, name: str) -> None:
    parser: argparse.ArgumentParser = benchmarks.add_parser(
        name,
        help="inspect_ai eval logs: inspect_evals' BFCL and tau2 on our environments, other tasks on --tools or "
        "on their own tool lists",
        description=(
            "Replay the tool calls of inspect_ai eval logs (.eval or .json, read with inspect_ai's own reader) "
            f"prefix by prefix. {SUPPORTED} samples go to our BFCL and tau environments; any other task is "
            "replayed on the tool spec given with --tools, or without it on each sample's own tool list (schema "
            "checks only), its recorded tool errors counting as refusals. Y is the log's score; our regrade is "
            "reported against it. Needs the inspect extra. See docs/inspect.md."
        ),
    )
    parser.add_argument("logs", nargs="+", metavar="LOG", help="inspect logs (.eval or .json) or folders of them")
    add_spec_options(
        parser,
        "tool spec for logs of tasks other than BFCL and tau2 airline/retail: our JSON/YAML spec, an OpenAI "
        "tools array or an MCP tools/list result (default: each sample's own tool list, schema checks only; "
        "docs/custom.md)",
    )
    parser.add_argument("--scorer", metavar="NAME", help="the score that is Y when a sample has several")
    parser.add_argument(
        "--no-regrade", dest="regrade", action="store_false", help="do not regrade BFCL and tau2 samples"
    )
    add_tau2_data_option(parser)
    add_scoring_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    require("inspect_ai", why="inspect_ai's own log reader reads the logs")
    paths = [str(p) for p in log_files(args.logs)]
    trials = numbering(args)
    sources = InspectSources(
        sys.stderr,
        args.tau2_data,
        args.tools,
        args.hooks,
        on_spec=note_spec,
        policy=policy_of(args),
        numbering=trials,
    )
    inputs = [*paths, *(p for p in (args.tools, args.hooks) if p)]
    consistency_path(args, inputs)  # refused before scoring: an input, --out, a folder or a FIFO
    _read_logs(args, paths, sources)
    report = score_to_file(
        sources.units,
        args.out,
        total=len(sources.units),
        desc="scoring inspect",
        prepare=sources.bfcl_regrade() if args.regrade else None,
        on_record=sources.on_record(),
        inputs=inputs,
        options=output_options(args),
    )
    unregraded = sources.check(
        args.out,
        report=args.consistency,
        regrade=args.regrade,
        resume=args.resume,
        keep_going=args.keep_going,
        log=sys.stderr,
    )
    status = finish(report, args.out, trials)
    return 2 if unregraded else status


def _read_logs(args: argparse.Namespace, paths: list[str], sources: InspectSources) -> None:
    """Read each log into ``sources``; under ``--keep-going`` a log that cannot be read or loaded is one
    :class:`Skipped` unit, reported by ``score_to_file`` (never dropped)."""
    # Without --tools a task of neither benchmark is scored on its samples' own tool lists, read from their events.
    own_tools = None if args.tools else (lambda task: not is_benchmark(task))
    noted = False
    rule = trial_rule(args)
    bounds = ReadBounds(args.rollout_budget, args.call_memory)  # each sample read under a rollout's budgets
    for path in paths:
        try:
            log = read_log(path, scorer=args.scorer, tools=own_tools, trials=rule, bounds=bounds)
        except InputError as exc:
            if not args.keep_going:
                raise
            sources.units.append(Skipped(path, exc.describe()))  # reported by score_to_file, never dropped
            continue
        print(
            f"prefix-exec: {log.name}: task {log.task}, {len(log.samples)} sample(s), status {log.status}",
            file=sys.stderr,
        )
        if own_tools is not None and own_tools(log.task) and not noted:
            noted = True
            print(
                "prefix-exec: note: no --tools: each sample of a task other than BFCL and tau2 is checked against "
                "its own tool list, so only schema checks apply (tool names, arguments); the records say so in "
                "metadata.spec_note",
                file=sys.stderr,
            )
        try:
            sources.read(log, model=args.model or log.model, method=args.method or log.method)
        except InputError as exc:  # a --tools spec or a tau2 domain that does not load
            if not args.keep_going:
                raise
            sources.units.append(Skipped(path, exc.describe()))
