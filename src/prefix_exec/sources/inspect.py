"""inspect_ai eval logs as :class:`scoring.units.Scorable` pairs: each sample with the environment it replays on.

inspect_evals' BFCL multi-turn samples go to the BFCL environment and its tau2 airline/retail samples to the tau
environment, mapped to what the native importers produce (:mod:`prefix_exec.importers.inspect.bfcl`,
:mod:`prefix_exec.importers.inspect.tau`), so they get the same replay, labels and Y rules as native files. Any
other task is replayed on the generic environment, on a tool spec (``--tools``) or, without one, on each
sample's own tool list (from its model events; schema checks only), with the recorded outcomes as evidence
(:mod:`prefix_exec.envs.custom.evidence`). Y is the log's score; the regrades (:mod:`prefix_exec.sources.agreement`)
and the consistency report (tau2 samples by tau's comparison, the others by the evidence policy's) are made by
:meth:`InspectSources.check`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from prefix_exec.envs.base import Environment
from prefix_exec.envs.custom import evidence
from prefix_exec.envs.custom.evidence import DEFAULT_POLICY, EvidencePolicy
from prefix_exec.envs.recipe import Recipe
from prefix_exec.envs.tau.consistency import compare_tau
from prefix_exec.envs.tau.pooled import inspect_domain
from prefix_exec.envs.tau.results import LoadedResults, load_results
from prefix_exec.errors import InputError
from prefix_exec.extras import require
from prefix_exec.importers.inspect.log import InspectLog, InspectSample, generic_rollout
from prefix_exec.importers.tau import TauResults
from prefix_exec.json_types import JsonObject
from prefix_exec.records.codec import read_records
from prefix_exec.records.consistency import Consistency, Disagreement
from prefix_exec.scoring.numbering import Numbering
from prefix_exec.scoring.units import EnvFor, Scorable, with_environment
from prefix_exec.sources.tau import tau_units
from prefix_exec.trajectory import PrefixRecord, Rollout, Skipped, UnitKey

if TYPE_CHECKING:
    from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess
    from prefix_exec.envs.custom.session import CustomEnvironment
    from prefix_exec.sources.own_tools import OwnLists

SUPPORTED = (
    "BFCL multi-turn (inspect_evals/bfcl) and tau2 airline/retail (inspect_evals/tau2_airline, tau2_retail, and "
    "a policy variant's task such as tau2_airline_tighter_policy)"
)
#: The records' note when a sample's own tools list served as its spec.
SCHEMA_ONLY_NOTE = "schema checks only: the sample's own tools list served as the spec (no --tools)"


def is_benchmark(task: str) -> bool:
    """Whether a log's task (its name without the package) is one mapped to a benchmark's environment."""
    return task == "bfcl" or inspect_domain(task) is not None


@dataclass
class InspectSources:
    """What one run read: the units to score (each rollout paired with its environment), the tau2 logs as loaded
    results files, and the environments the samples of several logs share (BFCL's, the spec's, built once).

    ``tau2_data`` is the tau2 data folder (``None``: the default); ``tools`` and ``hooks`` the spec for other
    tasks, and ``policy`` how their samples' recorded outcomes count. The task-set check of each tau2 log is
    printed on ``notes``; ``on_spec`` sees the spec once loaded (with its source's description), to say what it
    checks. :attr:`generic` holds the units replayed on the generic environment; without ``tools``, each sample
    of another task replays on its own tool list's environment (:attr:`own`, one per distinct list).
    ``numbering`` gives the rollouts of every log distinct trials (:mod:`scoring.numbering`) as they are read,
    before the tau checks and :attr:`generic` key on them.
    """

    notes: TextIO
    tau2_data: str | None = None
    tools: str | None = None
    hooks: str | None = None
    on_spec: Callable[[CustomEnvironment, str], None] | None = None
    policy: EvidencePolicy = DEFAULT_POLICY
    numbering: Numbering = field(default_factory=Numbering)
    units: list[Scorable | Skipped] = field(default_factory=list)
    tau_files: list[LoadedResults[TauResults]] = field(default_factory=list)
    generic: set[UnitKey] = field(default_factory=set)
    #: The consistency check, made by :meth:`on_record` when a tau2 log or another task's log was read.
    consistency: Consistency | None = None
    bfcl: BfclEnvironment | None = None
    spec: CustomEnvironment | None = None
    #: The environment of each distinct own tool list (made at the first sample scored on its own list).
    own: OwnLists | None = None

    def read(self, log: InspectLog, *, model: str, method: str) -> None:
        """Add the samples of ``log`` to :attr:`units`. An environment that cannot be built (a spec, a tau2
        domain) raises :class:`InputError` (nothing of the log is added); a sample that cannot be scored (no
        score, no tool list) is added as :class:`~prefix_exec.trajectory.Skipped`."""
        if log.task == "bfcl":
            from prefix_exec.importers.inspect.bfcl import bfcl_rollout

            env = self._bfcl()
            self._add([bfcl_rollout(log, s, model=model, method=method) for s in log.samples], env)
        elif inspect_domain(log.task) is not None:
            from prefix_exec.importers.inspect.tau import tau_results

            loaded = load_results(tau_results(log, model=model, method=method), self.tau2_data)
            loaded, units = tau_units(loaded, self.numbering, self.tau2_data, name=log.name, notes=self.notes)
            self.tau_files.append(loaded)
            self.units += units
        else:
            spec = self._spec() if self.tools is not None else None
            for sample in log.samples:
                unit = self._generic(log, sample, model, method, spec)
                if isinstance(unit, Scorable):
                    self.generic.add(unit.rollout.key)
                self.units.append(unit)

    def _add(self, units: list[Rollout | Skipped], env: Environment | EnvFor) -> None:
        self.units += with_environment(self.numbering.rollouts(units), env)

    def _bfcl(self) -> BfclEnvironment:
        if self.bfcl is None:
            require("bfcl_eval", "mpmath", why="BFCL's tasks and backend classes, for a BFCL log")
            from prefix_exec.envs.bfcl import BfclEnvironment
            from prefix_exec.envs.bfcl.tasks import INSTALL_HINT as BFCL_HINT

            try:
                self.bfcl = BfclEnvironment()
            except ImportError as exc:
                raise InputError(str(exc), hint=BFCL_HINT) from None
        return self.bfcl

    def _spec(self) -> CustomEnvironment:
        """The ``tools`` spec with ``hooks``, loaded once."""
        assert self.tools is not None
        if self.spec is None:
            from prefix_exec.envs.custom.environment import load_spec

            self.spec = load_spec(self.tools, hooks=self.hooks, policy=self.policy)
            if self.on_spec is not None:
                self.on_spec(self.spec, self.tools)
        return self.spec

    def _generic(
        self, log: InspectLog, sample: InspectSample, model: str, method: str, spec: CustomEnvironment | None
    ) -> Scorable | Skipped:
        """A sample of another task with its environment: ``spec``, or (``None``) the environment of its own tool
        list, built once per distinct list when its first rollout is replayed (inside that rollout's budget); or why
        it cannot be scored."""
        if sample.unscorable:
            return Skipped(sample.where, sample.unscorable)
        rollout = self.numbering.number(generic_rollout(log, sample, model=model, method=method))
        if spec is not None:
            from prefix_exec.envs.custom.environment import load_spec

            return Scorable(
                rollout, spec, Recipe(load_spec, (self.tools,), {"hooks": self.hooks, "policy": self.policy})
            )
        if sample.tools is None:
            return Skipped(
                sample.where,
                "the sample records no tool list (no model call in its events); pass --tools SPEC (docs/custom.md)",
            )
        if self.own is None:  # here: the generic environment's modules load only for such a sample
            from prefix_exec.sources.own_tools import OwnLists

            self.own = OwnLists(self.policy, SCHEMA_ONLY_NOTE)
        where: JsonObject = {"name": log.task, "path": log.path, "origin": "the sample's own tools list"}
        return self.own.pair(rollout, [dict(t) for t in sample.tools], where)

    def bfcl_regrade(self) -> Callable[[Rollout], Rollout] | None:
        """A ``prepare`` for :func:`~prefix_exec.scoring.run.score_to_file` that puts BFCL's multi-turn rule on every
        BFCL sample (``metadata.regrade``; its Y stays the log's); ``None`` when no BFCL log was read."""
        if self.bfcl is None:
            return None
        from prefix_exec.envs.bfcl import FinalSuccess

        return partial(_regrade_bfcl, checker=FinalSuccess(self.bfcl.templates))  # a partial pickles to workers

    def tau_keys(self) -> set[UnitKey]:
        """The units of the tau2 samples."""
        return {rollout.key for loaded in self.tau_files for rollout in loaded.results.rollouts}

    def on_record(self) -> Callable[[PrefixRecord], None] | None:
        """The ``on_record`` of :func:`~prefix_exec.scoring.run.score_to_file`: the consistency check (made here,
        :attr:`consistency`), tau2 samples compared by tau's rule, other tasks' samples by the evidence policy's
        (:func:`envs.custom.evidence.compare_custom`), BFCL samples not at all (their observations are inspect's
        replies, which that report is not about); ``None`` when neither was read."""
        if not self.tau_files and not self.generic:
            return None
        tau_keys, generic = self.tau_keys(), self.generic
        generic_compare = partial(evidence.compare_custom, policy=self.policy)

        def compare(record: PrefixRecord) -> tuple[list[Disagreement], int]:
            if record.key in tau_keys:
                return compare_tau(record)
            if record.key in generic:
                return generic_compare(record)
            return [], 0

        self.consistency = Consistency(compare, theirs="recorded outcome") if generic else Consistency(compare)
        return self.consistency.add

    def check(
        self,
        out: str,
        *,
        report: str | None,
        regrade: bool,
        resume: bool,
        keep_going: bool,
        log: TextIO,
    ) -> int:
        """The consistency report (to ``report``, default ``<out>.consistency.json``; always with a tau2 log, else
        when a call had a recorded outcome or ``report`` is given) and both regrades of the records in ``out``, on
        ``log``; returns how many samples could not be regraded."""
        wanted = (regrade or resume) and Path(out).exists()  # no output when nothing was scored
        records = list(read_records(out)) if wanted else []
        consistency = self.consistency
        if consistency is not None:
            if resume:  # records kept from an earlier run: compare every record of the output again
                keys = self.tau_keys() | self.generic
                consistency.compare_again(record for record in records if record.key in keys)
            if self.tau_files or consistency.calls or report:
                consistency.write(report or f"{out}.consistency.json", log)
        if not regrade:
            return 0
        from prefix_exec.sources.agreement import bfcl_agreement, tau_agreement

        if self.bfcl is not None:
            bfcl_agreement(records).write(log)
        if not self.tau_files:
            return 0
        scored = consistency.scored if consistency is not None else set()
        agreement, failed = tau_agreement(self.tau_files, scored, keep_going=keep_going, log=log)
        agreement.write(log)
        return failed


def _regrade_bfcl(rollout: Rollout, checker: FinalSuccess) -> Rollout:
    """A BFCL sample with BFCL's multi-turn rule in ``metadata.regrade`` (:meth:`InspectSources.bfcl_regrade`);
    any other sample as it is."""
    from prefix_exec.sources.agreement import with_bfcl_regrade

    return with_bfcl_regrade(rollout, checker) if rollout.dataset == "bfcl" else rollout
