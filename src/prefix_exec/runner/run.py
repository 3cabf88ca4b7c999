"""Run a grid into a run directory, resumably.

``RUN_DIR`` holds ``rollouts.jsonl`` (canonical rollouts with transcript and cost), ``records.jsonl`` (the
same rollouts scored by :func:`prefix_exec.replay.replay`), ``failures.jsonl`` (units that raised, with
the error; ``--resume`` retries them), ``cache.sqlite`` (LLM responses) and ``grid.toml`` (a copy).

Only this process writes, one fsynced line per finished unit: the rollout first, then its record. A kill -9
loses the units in flight and nothing else. On ``resume``: units with a rollout are skipped; a rollout
whose record was not written yet (killed between the two lines) is scored from the file; a torn last line
is cut and its unit redone. So the finished directory has each unit exactly once.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from prefix_exec.errors import InputError
from prefix_exec.io import JsonlWriter, completed_keys, read_rollouts, record_to_json
from prefix_exec.llm.cache import ResponseCache
from prefix_exec.replay import replay
from prefix_exec.runner.datasets import make_driver
from prefix_exec.runner.executors import execute
from prefix_exec.runner.grid import Grid, Unit, expand, load_grid, select_tasks
from prefix_exec.runner.worker import UnitResult

ROLLOUTS, RECORDS, FAILURES, CACHE, GRID_COPY = "rollouts.jsonl", "records.jsonl", "failures.jsonl", "cache.sqlite", \
    "grid.toml"


@dataclass
class RunReport:
    planned: int = 0
    written: int = 0
    failed: int = 0
    resumed: int = 0
    rescored: int = 0
    tokens: int = 0
    usd: float = 0.0
    retries: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        text = f"{self.written} of {self.planned} units written in {self.seconds:.1f} s, {self.tokens} agent tokens"
        if self.usd:
            text += f", ${self.usd:.2f}"
        if self.retries:
            text += f", {self.retries} LLM requests retried (429/5xx/timeouts/connection)"
        if self.resumed:
            text += f"; {self.resumed} already done (--resume)"
        if self.rescored:
            text += f"; {self.rescored} rollouts scored from the file"
        if self.failed:
            text += f"; {self.failed} failed (see {FAILURES}; --resume retries them)"
        return text


def plan_units(grid: Grid) -> list[Unit]:
    tasks = {d.name: select_tasks(d, make_driver(d, grid).task_ids(), grid.seed) for d in grid.datasets}
    return expand(grid, tasks)


def run_grid(
    grid_path: str | Path,
    out: str | Path,
    *,
    resume: bool = False,
    executor: str = "local",
    max_concurrency: int = 4,
    log: TextIO | None = None,
) -> RunReport:
    log = log if log is not None else sys.stderr
    started = time.perf_counter()
    grid = load_grid(grid_path)
    out = Path(out)
    rollouts_path, records_path = out / ROLLOUTS, out / RECORDS
    if not resume and rollouts_path.exists() and rollouts_path.stat().st_size:
        raise InputError("the run directory already has rollouts", path=out,
                         hint="pass --resume to continue it, or a fresh --out")
    out.mkdir(parents=True, exist_ok=True)
    if not (out / GRID_COPY).exists():
        shutil.copyfile(grid_path, out / GRID_COPY)
    units = plan_units(grid)
    report = RunReport(planned=len(units))
    with JsonlWriter(rollouts_path, append=True) as rollouts, JsonlWriter(records_path, append=True) as records, \
            JsonlWriter(out / FAILURES, append=True) as failures:
        done = completed_keys(rollouts_path)
        report.rescored = _score_orphans(grid, rollouts_path, done - completed_keys(records_path), records)
        todo = [u for u in units if u.key not in done]
        report.resumed = len(units) - len(todo)
        cache = out / CACHE if grid.cache else None
        if cache is not None:
            ResponseCache(cache)  # create it here, once, before workers open it concurrently
        with tqdm(total=len(todo), desc="units", unit="unit", disable=None, file=log, smoothing=0.1) as bar:
            for result in execute(executor, grid, cache, todo, max_concurrency):
                _write(result, rollouts, records, failures, report, grid)
                bar.update(1)
                bar.set_postfix(failed=report.failed, tokens=report.tokens, usd=f"{report.usd:.2f}",
                                retries=report.retries, refresh=False)
    report.seconds = time.perf_counter() - started
    return report


def _write(result: UnitResult, rollouts: JsonlWriter, records: JsonlWriter, failures: JsonlWriter,
           report: RunReport, grid: Grid) -> None:
    u = result.unit
    key = {"dataset": u.dataset, "task_id": u.task_id, "model": u.model, "method": u.method, "trial": u.trial}
    if result.error is not None or result.rollout is None or result.record is None:
        failures.write({**key, "error": result.error, "seconds": result.seconds})
        report.failed += 1
        return
    rollouts.write(result.rollout)
    records.write(result.record)
    report.written += 1
    report.retries += int(result.rollout.get("metadata", {}).get("retries", 0))
    for cost in result.rollout.get("cost", []):
        price_in, price_out = call_prices(grid, u.model, cost.get("model"))
        report.tokens += int(cost["prompt_tokens"]) + int(cost["completion_tokens"])
        report.usd += (cost["prompt_tokens"] * price_in + cost["completion_tokens"] * price_out) / 1e6


def call_prices(grid: Grid, unit_model: str, call_model: str | None) -> tuple[float, float]:
    """USD per 1M prompt and completion tokens for one LLM call of a unit of ``unit_model``.

    A call is priced by the grid model that made it: ``CallCost.model`` is the served id (``endpoint.model``)
    or a grid name. The unit's own model is tried first, then the verifier model, then the others in grid
    order; a call no grid model matches is charged at the unit model's price.
    """
    unit = grid.model(unit_model)
    candidates = [unit]
    if grid.verifier_model is not None:
        candidates.append(grid.model(grid.verifier_model))
    candidates += [m for m in grid.models if m not in candidates]
    spec = next((m for m in candidates if call_model in (m.name, m.endpoint.model)), unit)
    return spec.usd_per_mtok_prompt, spec.usd_per_mtok_completion


def _score_orphans(grid: Grid, path: Path, keys: Iterable[tuple[str, str, str, str, int]],
                   records: JsonlWriter) -> int:
    wanted = set(keys)
    if not wanted:
        return 0
    drivers = {d.name: make_driver(d, grid) for d in grid.datasets}
    count = 0
    for rollout in read_rollouts(path):
        if rollout.key in wanted:
            records.write(record_to_json(replay(rollout, drivers[rollout.dataset].env_for(rollout))))
            wanted.discard(rollout.key)
            count += 1
    return count
