"""Runs work units: one worker per thread (local) or per process (Ray), each with its own environments.

A worker builds each dataset's driver and each (model, trial) backend once and reuses them, and gives each
unit's agent the plan store's book of that unit's (dataset, task, model, trial): the shared initial plans.
``run`` returns the canonical rollout and the record replay gives it, as records (the run's writer turns them
into JSON lines), or the error that stopped the unit (a failed unit is retried by ``--resume``). A result
crosses process boundaries (a spawned process, a Ray actor) by pickling: records are frozen dataclasses.

A result nested past :data:`~prefix_exec.json_types.MAX_DEPTH` (a hook's result, an environment's data) cannot
be pickled (about 800 levels fail it) nor read back from the run's files (their readers refuse it), so every
worker fails such a unit with the part named (:func:`depth_problem_of`): the local launcher's threads, its
processes and Ray write the same files.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from prefix_exec.agents.variants import Agent
from prefix_exec.drivers.base import Driver, to_rollout
from prefix_exec.json_types import JsonObject, depth_problem
from prefix_exec.llm.backend import ChatBackend
from prefix_exec.llm.cache import ResponseCache
from prefix_exec.records.redaction import redact_text
from prefix_exec.replay import replay
from prefix_exec.runner.datasets import make_driver
from prefix_exec.runner.grid import Grid
from prefix_exec.runner.plan_store import PlanStore
from prefix_exec.trajectory import PrefixRecord, Rollout, Unit


@dataclass(frozen=True)
class UnitResult:
    """``rollout`` and the ``record`` replay gives it; ``error`` is set instead when the unit failed.
    ``seconds`` is the unit's wall time; ``retries`` the LLM requests a failed unit retried."""

    unit: Unit
    rollout: Rollout | None = None
    record: PrefixRecord | None = None
    error: str | None = None
    seconds: float = 0.0
    retries: int = 0


class UnitWorker:
    """``gates`` maps an endpoint URL to the gate its requests hold in flight, shared by every worker of a run
    so that a model's ``max_concurrency`` caps the whole run, not each worker."""

    def __init__(
        self, grid: Grid, cache_path: Path | None, gates: Mapping[str, AbstractContextManager[Any]] | None = None
    ) -> None:
        self.grid = grid
        self.gates = dict(gates or {})
        self.cache = ResponseCache(cache_path) if cache_path is not None else None
        self.plans = PlanStore(grid.plan_store) if grid.plan_store is not None else None
        self._drivers: dict[str, Driver] = {}
        self._backends: dict[tuple[str, int], ChatBackend] = {}

    def driver(self, dataset: str) -> Driver:
        if dataset not in self._drivers:
            spec = next(d for d in self.grid.datasets if d.name == dataset)
            self._drivers[dataset] = make_driver(spec, self.grid)
        return self._drivers[dataset]

    def backend(self, model: str, trial: int) -> ChatBackend:
        if (model, trial) not in self._backends:
            config = self.grid.endpoint(model, trial)
            self._backends[(model, trial)] = ChatBackend(
                config, cache=self.cache, slots=self.gates.get(config.base_url)
            )
        return self._backends[(model, trial)]

    def agent(self, unit: Unit) -> Agent:
        scope = "\x1f".join(map(str, unit.key))
        executor = self.backend(unit.model, unit.trial).scoped(scope)
        verifier = (
            self.backend(self.grid.verifier_model, unit.trial).scoped(scope) if self.grid.verifier_model else None
        )
        store = self.plans
        plans = None if store is None else store.for_unit(unit.dataset, unit.task_id, unit.model, unit.trial)
        return Agent(unit.method, executor, verifier=verifier, settings=self.grid.agent, plans=plans)

    def run(self, unit: Unit) -> UnitResult:
        started = time.perf_counter()
        try:
            driver = self.driver(unit.dataset)
            outcome = driver.play(self.agent(unit), unit.task_id, unit.trial)
            rollout = to_rollout(
                outcome,
                dataset=unit.dataset,
                task_id=unit.task_id,
                model=unit.model,
                method=unit.method,
                trial=unit.trial,
            )
            backend = self.backend(unit.model, unit.trial)
            notes: JsonObject = {"decoding": {**backend.config.decoding(), "seed": backend.config.seed}}
            fallback = backend.tools_rejected
            if fallback is not None:  # tool_mode auto: the server rejected native tools, calls went as text
                # (its own key: metadata["text_fallback"] notes calls read from a native answer's content)
                notes["tools_refused"] = fallback
            rollout = replace(rollout, metadata={**rollout.metadata, **notes})
            record = replay(rollout, driver.env_for(rollout))
            problem = depth_problem_of(rollout, record)
            if problem is not None:
                raise ValueError(problem)
        except Exception as exc:  # the unit boundary: any failure is reported and the grid goes on
            # failures.jsonl and the run's messages show it: a URL in it loses its credentials
            detail = redact_text("".join(traceback.format_exception_only(type(exc), exc)).strip())
            retries = len(getattr(exc, "retries", ()))  # a BackendError lists the retries it made
            return UnitResult(unit, error=detail, seconds=time.perf_counter() - started, retries=retries)
        return UnitResult(unit, rollout, record, seconds=time.perf_counter() - started)


def depth_problem_of(rollout: Rollout, record: PrefixRecord) -> str | None:
    """Why the unit's ``rollout`` or ``record`` cannot be kept, naming the part (``verdicts[2].result``), or
    ``None``: a part nested past :data:`~prefix_exec.json_types.MAX_DEPTH` lists, objects and tuples."""
    parts: list[tuple[str, object]] = [("the transcript", rollout.transcript), ("the metadata", rollout.metadata)]
    for i, call in enumerate(rollout.actions):
        parts.append((f"actions[{i}].arguments", call.arguments))
        if call.observation is not None:
            parts.append((f"actions[{i}].observation.content", call.observation.content))
    parts += [(f"verdicts[{i}].result", verdict.result) for i, verdict in enumerate(record.verdicts)]
    parts.append(("the record's metadata", record.metadata))
    for name, value in parts:
        problem = depth_problem(value)
        if problem is not None:
            return (
                f"the unit's {name} is {problem}: it cannot be sent between processes or read back from the run's "
                "files (a tool's hook or the environment's data built it; keep results shallower)"
            )
    return None
