"""``prefix-exec score inspect``: replay inspect_ai eval logs (``.eval``/``.json``) on our environments.

inspect_evals' BFCL multi-turn samples go to the BFCL environment and its tau2 airline/retail samples to the
tau environment, mapped to what the native importers produce (``importers/inspect_bfcl.py``,
``importers/inspect_tau.py``), so they get the same replay, labels and Y rules as native files. Any other task
is replayed on the tool spec given with ``--tools``. Y is the log's score; the regrade (``prefix_exec.log_agreement``)
is reported against it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefix_exec.cli.common import add_scoring_options, finish, output_options
from prefix_exec.cli.score_custom import add_spec_options, note_schema_only
from prefix_exec.cli.score_tau import add_tau2_data_option
from prefix_exec.envs.base import Environment
from prefix_exec.errors import InputError
from prefix_exec.extras import require
from prefix_exec.importers.inspect_log import InspectLog, generic_rollout, log_files, read_log
from prefix_exec.importers.inspect_tau import TASKS as TAU_TASKS
from prefix_exec.importers.tau import TauResults
from prefix_exec.io import read_records
from prefix_exec.jsonl import UnitKey
from prefix_exec.scoring import score_to_file
from prefix_exec.trajectory import PrefixRecord, Rollout, Skipped

SUPPORTED = "BFCL multi-turn (inspect_evals/bfcl) and tau2 airline/retail (inspect_evals/tau2_airline, tau2_retail)"
EnvFor = Callable[[Rollout], Environment]


def register(benchmarks: Any, name: str) -> None:
    parser: argparse.ArgumentParser = benchmarks.add_parser(
        name,
        help="inspect_ai eval logs: inspect_evals' BFCL and tau2 on our environments, other tasks on --tools",
        description=(
            "Replay the tool calls of inspect_ai eval logs (.eval or .json, read with inspect_ai's own reader) "
            f"prefix by prefix. {SUPPORTED} samples go to our BFCL and tau environments; any other task is "
            "replayed on the tool spec given with --tools. Y is the log's score; our regrade is reported "
            "against it. Needs the inspect extra. See docs/inspect.md."
        ),
    )
    parser.add_argument("logs", nargs="+", metavar="LOG", help="inspect logs (.eval or .json) or folders of them")
    add_spec_options(
        parser,
        "tool spec for logs of tasks other than BFCL and tau2 airline/retail: our JSON/YAML spec, an OpenAI "
        "tools array or an MCP tools/list result (docs/custom.md)",
    )
    parser.add_argument("--scorer", metavar="NAME", help="the score that is Y when a sample has several")
    parser.add_argument(
        "--no-regrade", dest="regrade", action="store_false", help="do not regrade BFCL and tau2 samples"
    )
    parser.add_argument(
        "--consistency",
        metavar="PATH.json",
        help="where to write the tau consistency report (default: <out>.consistency.json, when a tau2 log is read)",
    )
    add_tau2_data_option(parser)
    add_scoring_options(parser)
    parser.set_defaults(run=run)


@dataclass
class Sources:
    """What one run read: the units to score, each rollout's environment, and the tau2 logs as results files."""

    args: argparse.Namespace
    units: list[Rollout | Skipped] = field(default_factory=list)
    env_of: dict[int, EnvFor] = field(default_factory=dict)
    tau_files: list[TauResults] = field(default_factory=list)
    tau_envs: dict[str, Any] = field(default_factory=dict)
    shared: dict[str, Environment] = field(default_factory=dict)

    def add(self, units: list[Rollout | Skipped], env_for: EnvFor) -> None:
        for unit in units:
            if isinstance(unit, Rollout):
                self.env_of[id(unit)] = env_for
        self.units += units

    def read(self, log: InspectLog) -> None:
        model, method = self.args.model or log.model, self.args.method or log.method
        if log.task == "bfcl":
            from prefix_exec.importers.inspect_bfcl import bfcl_rollout

            env = self._bfcl()
            self.add([bfcl_rollout(log, s, model=model, method=method) for s in log.samples], lambda _r: env)
        elif log.task in TAU_TASKS:
            self._tau(log, model, method)
        else:
            spec = self._spec(log)
            units: list[Rollout | Skipped] = [
                Skipped(s.where, s.unscorable) if s.unscorable else generic_rollout(log, s, model=model, method=method)
                for s in log.samples
            ]
            self.add(units, lambda _r: spec)

    def _bfcl(self) -> Environment:
        if "bfcl" not in self.shared:
            require("bfcl_eval", "mpmath", why="BFCL's tasks and backend classes, for a BFCL log")
            from prefix_exec.envs.bfcl import BfclEnvironment
            from prefix_exec.envs.bfcl.tasks import INSTALL_HINT as BFCL_HINT

            try:
                self.shared["bfcl"] = BfclEnvironment()
            except ImportError as exc:
                raise InputError(str(exc), hint=BFCL_HINT) from None
        return self.shared["bfcl"]

    def _tau(self, log: InspectLog, model: str, method: str) -> None:
        from prefix_exec.envs.tau import TauEnvironment, load_domain
        from prefix_exec.envs.tau.tasks import check_embedded
        from prefix_exec.importers.inspect_tau import tau_results
        from prefix_exec.importers.tau import with_provenance

        results = tau_results(log, model=model, method=method)
        env = TauEnvironment(load_domain(results.domain, self.args.tau2_data), results.tasks)
        check = check_embedded(env.domain, results.tasks)
        results = with_provenance(results, env.domain.provenance, check.differing)
        print(f"prefix-exec: {log.name}: {check.describe()}", file=sys.stderr)
        self.tau_files.append(results)
        self.tau_envs[results.path] = env
        self.add(list(results.units), env.bind)

    def _spec(self, log: InspectLog) -> Environment:
        path = self.args.tools
        if path is None:
            raise InputError(
                f"task {log.task!r} is not one prefix-exec maps to a benchmark ({SUPPORTED})",
                path=log.path,
                hint="replay it on your tools' spec: prefix-exec score inspect --tools SPEC LOG ... (docs/custom.md)",
            )
        if "spec" not in self.shared:
            from prefix_exec.envs.custom import load_spec
            from prefix_exec.envs.spec_formats import FORM_NAMES

            env = load_spec(path, hooks=self.args.hooks)
            note_schema_only(env, f"{path} ({FORM_NAMES[env.form]})")
            self.shared["spec"] = env
        return self.shared["spec"]


def run(args: argparse.Namespace) -> int:
    require("inspect_ai", why="inspect_ai's own log reader reads the logs")
    paths = [str(p) for p in log_files(args.logs)]
    sources = Sources(args)
    for path in paths:
        try:
            log = read_log(path, scorer=args.scorer)
        except InputError as exc:
            if not args.keep_going:
                raise
            sources.units.append(Skipped(path, exc.describe()))  # reported by score_to_file, never dropped
            continue
        print(
            f"prefix-exec: {log.name}: task {log.task}, {len(log.samples)} sample(s), status {log.status}",
            file=sys.stderr,
        )
        try:
            sources.read(log)
        except InputError as exc:  # an unknown task without --tools, a tau2 domain that does not load
            if not args.keep_going:
                raise
            sources.units.append(Skipped(path, exc.describe()))
    prepare = None
    if args.regrade and "bfcl" in sources.shared:
        from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess
        from prefix_exec.log_agreement import with_bfcl_regrade

        env = sources.shared["bfcl"]
        assert isinstance(env, BfclEnvironment)
        checker = FinalSuccess(env.templates)

        def prepare(rollout: Rollout) -> Rollout:
            if rollout.dataset != "bfcl":
                return rollout
            regraded = with_bfcl_regrade(rollout, checker)
            sources.env_of[id(regraded)] = sources.env_of[id(rollout)]  # a new object: same environment
            return regraded

    consistency = None
    if sources.tau_files:
        from prefix_exec.envs.tau.consistency import Consistency

        consistency = Consistency()
    report = score_to_file(
        sources.units,
        lambda rollout: sources.env_of[id(rollout)](rollout),
        args.out,
        total=len(sources.units),
        desc="scoring inspect",
        prepare=prepare,
        on_record=_tau_only(sources, consistency),
        inputs=[*paths, *(p for p in (args.tools, args.hooks) if p)],
        **output_options(args),
    )
    unregraded = _report_checks(args, sources, consistency)
    status = finish(report, args.out)
    return 2 if unregraded else status


def _tau_only(sources: Sources, consistency: Any) -> Callable[[PrefixRecord], None] | None:
    """The consistency check's ``on_record``, fed only the records of tau2 samples (BFCL's observations are
    inspect's replies, which that report is not about)."""
    if consistency is None:
        return None
    keys = _tau_keys(sources)

    def add(record: PrefixRecord) -> None:
        if record.key in keys:
            consistency.add(record)

    return add


def _tau_keys(sources: Sources) -> set[UnitKey]:
    return {rollout.key for results in sources.tau_files for rollout in results.rollouts}


def _report_checks(args: argparse.Namespace, sources: Sources, consistency: Any) -> int:
    """The tau consistency report and both regrades, on stderr; returns how many samples could not be regraded."""
    wanted = (args.regrade or args.resume) and Path(args.out).exists()  # no output when nothing was scored
    records = list(read_records(args.out)) if wanted else []
    if consistency is not None:
        if args.resume:  # records kept from an earlier run: compare every record of the output again
            consistency.restart()
            keys = _tau_keys(sources)
            for record in records:
                if record.key in keys:
                    consistency.add(record)
        consistency.write(args.consistency or f"{args.out}.consistency.json", sys.stderr)
    if not args.regrade:
        return 0
    from prefix_exec.log_agreement import bfcl_agreement, tau_agreement

    if "bfcl" in sources.shared:
        bfcl_agreement(records).write(sys.stderr)
    if not sources.tau_files:
        return 0
    agreement, failed = tau_agreement(
        sources.tau_files,
        sources.tau_envs,
        consistency.scored if consistency is not None else set(),
        keep_going=args.keep_going,
        log=sys.stderr,
    )
    agreement.write(sys.stderr)
    return failed
