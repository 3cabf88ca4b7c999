"""Time the paper-sized bootstrap against scipy.stats.bootstrap, one statistic at a time.

Grid: 3 datasets of 200, 200 and 164 tasks; 12 model x method conditions each; 10,000 resamples; every
bootstrapped scalar (TER, AUC-PEC, mean FED, success) plus PEC@1..10. prefix-exec draws one resample-count
matrix per dataset and gets every replicate from matrix products (`prefix_exec.analysis.summary.summarize`, which also
computes curves, Wilson intervals and labels). The baseline calls `scipy.stats.bootstrap` (percentile method,
vectorized) once per statistic per condition, which is what a user without the count-matrix trick would do.

Prints timings (median of repeats) and, as its last line, the speed-up ratio baseline / prefix-exec.
Run: .venv/bin/python benchmarks/bootstrap.py [--repeats 5] [--baseline-repeats 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy import stats as sps

from prefix_exec.analysis import metrics
from prefix_exec.analysis.rows import MetricRow
from prefix_exec.analysis.summary import summarize

DATASETS = {"bfcl": 200, "toolsandbox": 200, "tau": 164}
CONDITIONS = [(m, x) for m in ("model-a", "model-b", "model-c") for x in ("react", "prompt", "plan", "dual")]
RESAMPLES = 10_000
DEPTH = 10


def make_rows(seed: int = 0) -> list[MetricRow]:
    rng = np.random.default_rng(seed)
    rows = []
    for dataset, n in DATASETS.items():
        for model, method in CONDITIONS:
            T = rng.integers(1, 15, n)
            fail = rng.random(n) < rng.uniform(0.1, 0.8)
            fed = np.where(fail, rng.integers(1, T + 1), T + 1)
            y = (rng.random(n) < 0.6).astype(int)
            rows += [
                MetricRow(dataset, f"{dataset}-{i}", model, method, 0, int(T[i]), int(fed[i]), int(y[i]))
                for i in range(n)
            ]
    return rows


def per_rollout_statistics(rows: list[MetricRow]) -> list[np.ndarray]:
    """One (N,) vector per statistic per condition, whose mean is the statistic."""
    out = []
    for dataset in DATASETS:
        for model, method in CONDITIONS:
            group = [r for r in rows if r.condition == (dataset, model, method)]
            fed, T, y = metrics.as_arrays([r.fed for r in group], [r.T for r in group], [r.success for r in group])
            out += [values(fed, T, y) for values in metrics.PER_ROLLOUT.values()]
            out += [(fed > k).astype(float) for k in range(1, DEPTH + 1)]
    return out


def run_scipy(vectors: list[np.ndarray]) -> None:
    rng = np.random.default_rng(1)
    for v in vectors:
        sps.bootstrap((v,), np.mean, n_resamples=RESAMPLES, method="percentile", vectorized=True, rng=rng)


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline-repeats", type=int, default=1)
    args = parser.parse_args()
    rows = make_rows()
    vectors = per_rollout_statistics(rows)
    ours = timed(lambda: summarize(rows, resamples=RESAMPLES, seed=0, ci_depth=DEPTH), args.repeats)
    base = timed(lambda: run_scipy(vectors), args.baseline_repeats)
    print(
        f"grid: {len(DATASETS)} datasets ({', '.join(map(str, DATASETS.values()))} tasks), "
        f"{len(CONDITIONS)} conditions each, {RESAMPLES} resamples, {len(vectors)} bootstrapped statistics"
    )
    print(f"prefix-exec summarize (median of {args.repeats}): {ours:.3f} s")
    print(f"scipy.stats.bootstrap, one statistic at a time (median of {args.baseline_repeats}): {base:.3f} s")
    print(f"speed-up vs scipy.stats.bootstrap: {base / ours:.1f}x")


if __name__ == "__main__":
    main()
