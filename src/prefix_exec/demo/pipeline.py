"""The no-key demo end to end: synthetic agents on BFCL ground truth -> real BFCL replay -> calibration ->
the full report. Everything it writes is marked synthetic.

Files in ``out``: ``rollouts.jsonl`` (the synthetic rollouts), ``records.jsonl`` (scored),
``calibration.txt`` (the matrices printed to the terminal), and every report file (``report.html``,
``table2.md``, ``figure1-*.png``, ...).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prefix_exec.demo import bfcl
from prefix_exec.demo.agents import AGENTS, MODEL, plan, telemetry
from prefix_exec.demo.calibration import Calibration, calibrate, render
from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess
from prefix_exec.errors import InputError
from prefix_exec.json_types import dumps
from prefix_exec.records.codec import record_to_json, rollout_to_json
from prefix_exec.replay import replay
from prefix_exec.report import Options, Report, write_report
from prefix_exec.report.outdir import OutputFolder
from prefix_exec.trajectory import PrefixRecord, Rollout

DATASET = "bfcl (synthetic)"
CATEGORY = "base"


@dataclass(frozen=True)
class DemoResult:
    calibration: Calibration
    report: Report
    records: tuple[PrefixRecord, ...]
    seconds: float


def synthesize(tasks: int, seed: int) -> list[Rollout]:
    """One rollout per (agent, task) over the first ``tasks`` BFCL base tasks, with BFCL's final success."""
    env = BfclEnvironment()
    checker = FinalSuccess(env.templates)
    rollouts: list[Rollout] = []
    for task in bfcl.tasks(CATEGORY, tasks):
        truth = bfcl.truth_calls(task)
        docs = bfcl.docs(task)
        witness = bfcl.Witness(task, env.templates)
        for agent in AGENTS:
            rng = random.Random(f"{seed}:{agent.method}:{task.id}")
            p = plan(agent, truth, docs, witness, rng)
            metadata: dict[str, object] = {"synthetic": True, "category": task.category}
            if p.mutation is not None:
                m = p.mutation
                metadata.update(
                    operator=m.operator,
                    injected_label=m.injected.value,
                    expected_label=m.expected.value,
                    injected_depth=m.depth,
                    repaired=p.repaired,
                    detail=m.detail,
                )
            rollouts.append(
                Rollout(
                    DATASET,
                    task.id,
                    MODEL,
                    agent.method,
                    p.calls,
                    success=bfcl.success(checker, task, p.calls),
                    cost=telemetry(agent, len(p.calls), rng),
                    metadata=metadata,
                )
            )
    return rollouts


def write_demo(
    out: str | Path,
    *,
    tasks: int = 200,
    seed: int = 0,
    resamples: int = 10_000,
    overwrite: bool = False,
    echo: Callable[[str], None] = print,
) -> DemoResult:
    """Synthesize, score with the real BFCL environment, calibrate, and write the report into ``out``.

    ``tasks`` above the number of BFCL base tasks, a negative ``seed`` or an ``out`` that is an existing file
    is an :class:`InputError`, raised before anything is written; so is a non-empty ``out`` that an earlier
    demo or report did not write, unless ``overwrite`` (see :mod:`prefix_exec.report.outdir`)."""
    start = time.monotonic()
    available = bfcl.task_count(CATEGORY)
    if tasks < 1 or tasks > available:
        raise InputError(
            f"--tasks {tasks}: BFCL's {CATEGORY} category has {available} tasks",
            hint=f"pass --tasks between 1 and {available}",
        )
    if seed < 0:
        raise InputError(f"--seed {seed}: a seed must be >= 0")
    folder = OutputFolder.claim(out, overwrite=overwrite)
    rollouts = synthesize(tasks, seed)
    folder.write_text("rollouts.jsonl", "".join(dumps(rollout_to_json(r)) + "\n" for r in rollouts))
    env = BfclEnvironment()
    records = [replay(r, env) for r in rollouts]
    folder.write_text("records.jsonl", "".join(dumps(record_to_json(r)) + "\n" for r in records))
    calibration = calibrate(records)
    text = render(calibration)
    folder.write_text("calibration.txt", text)
    echo(text)
    options = Options(resamples=resamples, seed=seed, title="prefix-exec demo: synthetic agents on BFCL (SYNTHETIC)")
    report = write_report(records, folder, options)
    return DemoResult(calibration, report, tuple(records), time.monotonic() - start)
