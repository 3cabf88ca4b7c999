"""Time prefix-exec's safe BFCL scoring against BFCL's own execution code and checker on the same trusted inputs.

Inputs: BFCL's 800 ground-truth answers plus the 800 glyphh-ada-1.1 FC rollouts (bfcl/ of the shared data:
../shared/data beside the repository or its worktree folder, or PREFIX_EXEC_SHARED_DATA).

- prefix-exec: decode each rollout (the importer), compute Y by BFCL's rule on the safe invocation
  (``FinalSuccess``), then replay it prefix by prefix (``replay`` on ``BfclEnvironment``, information check
  on, taking over the calls the check ran: ``BfclEnvironment.after``), each rollout inside the default
  rollout budget (wall clock, and memory per call) as scoring runs it: the full work of
  ``prefix-exec score bfcl`` minus writing the records file. A fresh environment and
  checker per repeat, so the task templates and ground-truth caches are built inside the timed region.
- BFCL: decode with BFCL's FC conversion, then BFCL's ``multi_turn_checker`` (its execution code ``eval``s every
  call string; acceptable here only because both inputs are trusted), as the tests' oracle
  (tests/envs/bfcl_oracle.py) runs them. A fresh model name per rollout keeps
  BFCL's module-global instance cache from carrying state between rollouts.

Both sides must agree on Y for every rollout (checked). Imports and task files are loaded before timing.
Prints the timings (median of repeats) and, last, the ratio prefix-exec / BFCL (target: at most 1.3).
Run: .venv/bin/python benchmarks/bfcl.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# BFCL's side is the tests' oracle, and the shared data is found as the tests find it (tests/shared_folder.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "envs"))

from bfcl_oracle import bfcl_success, verdict

from prefix_exec import budget
from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess
from prefix_exec.envs.bfcl.tasks import all_tasks, load_task
from prefix_exec.importers.bfcl import ground_truth_rollouts, read_results
from prefix_exec.replay import replay, with_success
from prefix_exec.trajectory import Rollout
from shared_folder import shared_data

GLYPHH = shared_data() / "bfcl" / "glyphh-ada-1.1"


def glyphh_results() -> dict[str, list[Any]]:
    results: dict[str, list[Any]] = {}
    for path in sorted(GLYPHH.iterdir()):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            results[row["id"]] = row["result"]
    return results


def prefix_exec_side() -> dict[tuple[str, str], int]:
    env = BfclEnvironment()
    checker = FinalSuccess(env.templates)
    ys: dict[tuple[str, str], int] = {}
    units: list[Rollout] = list(ground_truth_rollouts())
    units += [u for u in read_results([GLYPHH]) if isinstance(u, Rollout)]
    for rollout in units:
        with budget.rollout_budget():  # as scoring/replayer.py runs every rollout
            check = checker.check_rollout(load_task(rollout.task_id), rollout, keep_execution=True)
            replay(with_success(rollout, check.success), env.after(check.execution))
        ys[(rollout.model, rollout.task_id)] = check.success
    return ys


def bfcl_side(glyphh: dict[str, list[Any]]) -> dict[tuple[str, str], int]:
    """Y by BFCL's own FC decoding and checker (the test oracle, tests/envs/bfcl_oracle.py)."""
    ys: dict[tuple[str, str], int] = {}
    for task in all_tasks():
        decoded = [[list(turn)] if turn else [] for turn in task.ground_truth]
        ys[("ground_truth", task.id)] = int(verdict(task.id, decoded))
    for task_id, result in glyphh.items():
        ys[("glyphh-ada-1.1", task_id)] = int(bfcl_success(task_id, result))
    return ys


def timed(function: Any, *args: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = function(*args)
    return time.perf_counter() - started, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    glyphh = glyphh_results()
    all_tasks()  # task files read before timing, for both sides
    ours_times, theirs_times = [], []
    for _ in range(args.repeats):
        ours_time, ours = timed(prefix_exec_side)
        theirs_time, theirs = timed(bfcl_side, glyphh)
        ours_times.append(ours_time)
        theirs_times.append(theirs_time)
        disagreements = [key for key in theirs if ours[key] != theirs[key]]
        if disagreements:
            raise SystemExit(f"Y disagrees with BFCL on {len(disagreements)} rollouts, e.g. {disagreements[:3]}")
    ours_median, theirs_median = statistics.median(ours_times), statistics.median(theirs_times)
    n = len(ours)
    print(f"rollouts: {n} (800 ground truth + {n - 800} glyphh-ada-1.1), Y identical on all")
    print(f"prefix-exec (decode + Y + prefix replay): {ours_median:.2f} s  ({ours_median / n * 1e3:.2f} ms/rollout)")
    print(
        f"BFCL (decode + executor + checker):       {theirs_median:.2f} s  ({theirs_median / n * 1e3:.2f} ms/rollout)"
    )
    print(f"ratio prefix-exec / BFCL: {ours_median / theirs_median:.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
