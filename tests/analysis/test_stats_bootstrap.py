"""The task-level bootstrap of ``summarize`` against oracles that share nothing with its draw.

``test_stats.py`` checks the matrix arithmetic against a loop over the *same* counts, which cannot see a draw
that is wrong. Here the draw itself is checked: the multiplicities it gives each task (read back through the
public summary), the exact moments of the bootstrap distribution of a mean, ``scipy.stats.bootstrap`` as an
independent implementation, and invariance under relabelling the tasks.

Every tolerance is a multiple of a Monte-Carlo standard error derived in the test (or an exact bound); the
seeds are fixed, so a pass is reproducible and the margins say how far from the edge it is.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from prefix_exec.analysis.rows import MetricRow
from prefix_exec.analysis.summary import summarize

#: Standard errors allowed between an estimate and its oracle: a false alarm is below 1e-8 per comparison.
Z = 6.0


def task_counts(n_tasks: int, resamples: int, seed: int) -> np.ndarray:
    """The resample-count matrix of a dataset of ``n_tasks`` tasks, shape (resamples, n_tasks), read back
    through ``summarize``: condition ``m{j}`` succeeds on task j only, one rollout per task, so its success
    replicate in resample b is (copies of task j in b) / n_tasks."""
    tasks = [f"t{i:03d}" for i in range(n_tasks)]
    rows = [
        MetricRow("d", task, "m", f"m{j:03d}", 0, 1, 2, int(i == j))
        for j in range(n_tasks)
        for i, task in enumerate(tasks)
    ]
    summary = summarize(rows, resamples=resamples, seed=seed)
    columns = [summary.replicates[("d", "m", f"m{j:03d}")]["success"] for j in range(n_tasks)]
    counts = np.rint(np.column_stack(columns) * n_tasks).astype(np.int64)
    assert (counts.sum(axis=1) == n_tasks).all(), "each resample draws n_tasks tasks"
    return counts


def test_every_task_is_drawn_once_per_resample_on_average() -> None:
    # One resample's count of task j is Binomial(n, 1/n) (a margin of the Multinomial(n, 1/n...)): mean 1,
    # variance (n - 1) / n. Over B independent resamples the mean count has standard error sqrt((n-1)/(n B)).
    n, resamples = 12, 20_000
    counts = task_counts(n, resamples, seed=4)
    se_mean = math.sqrt((n - 1) / n / resamples)
    mean = counts.mean(axis=0)
    assert np.abs(mean - 1.0).max() < Z * se_mean, mean
    # The variance of each task's count is (n - 1) / n too; its standard error uses the binomial's 4th moment.
    var_exact, kurt_excess = (float(v) for v in sps.binom.stats(n, 1 / n, moments="vk"))
    se_var = math.sqrt((kurt_excess + 2) * var_exact**2 / resamples)
    var = counts.var(axis=0, ddof=1)
    assert np.abs(var - var_exact).max() < Z * se_var, var


def test_every_task_appears_in_some_resample() -> None:
    # A task is missed by one resample with probability (1 - 1/n)^n; by all 300 of them with (2/3)^900 at n = 3.
    for n in (2, 3, 7):
        counts = task_counts(n, 300, seed=n)
        assert (counts.sum(axis=0) > 0).all(), (n, counts.sum(axis=0))


def rows_of(feds: list[int], T: list[int], ys: list[int], tasks: list[str] | None = None) -> list[MetricRow]:
    tasks = tasks or [f"t{i:03d}" for i in range(len(feds))]
    return [MetricRow("d", t, "m", "a", 0, tt, f, y) for t, f, tt, y in zip(tasks, feds, T, ys, strict=True)]


def percentile_tolerance(distribution: np.ndarray, resamples: int, level: float = 0.95) -> float:
    """Z standard errors of the difference of two independent percentile-bootstrap bounds of ``resamples``
    draws each: a sample quantile at p has standard error sqrt(p (1 - p) / B) / f(q), with the density f at
    the quantile taken from a normal of the distribution's spread."""
    p = (1 - level) / 2
    z = NormalDist().inv_cdf(1 - p)
    density = NormalDist().pdf(z) / float(np.std(distribution))
    return Z * math.sqrt(2.0) * math.sqrt(p * (1 - p) / resamples) / density


# One rollout per task. The last task (by id, the order the summary sorts tasks in) is an outlier, so an
# interval computed without it is far from scipy's, and a bootstrap that mixes tasks up is far too.
KNOWN = {
    # success: 5 failures and 1 success; the 97.5 % bound lies inside the atom 3/6 of Binomial(6, 1/6)/6.
    "success-one-in-six": ([1] * 6, [1] * 6, [0, 0, 0, 0, 0, 1]),
    # mean FED over 15 tasks of different lengths, one long clean rollout last.
    "mean-fed-outlier": (
        [1, 2, 1, 3, 2, 1, 4, 2, 1, 3, 2, 1, 2, 3, 20],
        [3, 3, 2, 4, 5, 2, 6, 2, 1, 3, 3, 2, 2, 4, 19],
        [0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1],
    ),
    # AUC-PEC (mean of (FED - 1) / T) over 40 tasks drawn once with a fixed seed.
    "auc-40-tasks": (
        [int(f) for f in np.random.default_rng(8).integers(1, 7, 40)],
        [5] * 40,
        [int(y) for y in np.random.default_rng(9).integers(0, 2, 40)],
    ),
}
STATISTIC = {"success-one-in-six": "success", "mean-fed-outlier": "mean_FED", "auc-40-tasks": "AUC_PEC"}


def per_rollout(statistic: str, feds: np.ndarray, T: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """The statistic's per-rollout value, written out here (not taken from metrics.py)."""
    return {
        "success": ys.astype(float),
        "mean_FED": feds.astype(float),
        "AUC_PEC": (feds - 1) / T,
        "TER": (feds == T + 1).astype(float),
    }[statistic]


@pytest.mark.parametrize("name", KNOWN)
def test_intervals_agree_with_scipy_bootstrap_percentile(name: str) -> None:
    feds, T, ys = KNOWN[name]
    statistic = STATISTIC[name]
    resamples = 10_000
    got = getattr(summarize(rows_of(feds, T, ys), resamples=resamples, seed=1).get("d", "m", "a"), statistic)
    values = per_rollout(statistic, np.array(feds), np.array(T), np.array(ys))
    ref = sps.bootstrap((values,), np.mean, n_resamples=resamples, method="percentile", rng=np.random.default_rng(2))
    tol = percentile_tolerance(ref.bootstrap_distribution, resamples)
    assert got.point == pytest.approx(values.mean())
    assert got.low == pytest.approx(ref.confidence_interval.low, abs=tol)
    assert got.high == pytest.approx(ref.confidence_interval.high, abs=tol)


def test_ratio_intervals_of_multi_trial_tasks_agree_with_a_paired_scipy_bootstrap() -> None:
    # Tasks with 1 to 4 trials: TER is a ratio of per-task sums, resampled by whole task.
    rng = np.random.default_rng(5)
    trials = [int(k) for k in rng.integers(1, 5, 20)]
    rows: list[MetricRow] = []
    sums, sizes = [], []
    for i, k in enumerate(trials):
        executable = [int(v) for v in rng.random(k) < (0.9 if i == 19 else 0.3)]
        rows += [MetricRow("d", f"t{i:03d}", "m", "a", j, 3, 4 if e else 2, 0) for j, e in enumerate(executable)]
        sums.append(sum(executable))
        sizes.append(k)
    resamples = 10_000
    got = summarize(rows, resamples=resamples, seed=3).get("d", "m", "a").TER
    ref = sps.bootstrap(
        (np.array(sums, float), np.array(sizes, float)),
        lambda s, n, axis=-1: s.sum(axis=axis) / n.sum(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=resamples,
        method="percentile",
        rng=np.random.default_rng(4),
    )
    tol = percentile_tolerance(ref.bootstrap_distribution, resamples)
    assert got.point == pytest.approx(sum(sums) / sum(sizes))
    assert got.low == pytest.approx(ref.confidence_interval.low, abs=tol)
    assert got.high == pytest.approx(ref.confidence_interval.high, abs=tol)


def moments_tolerance(a: np.ndarray) -> tuple[float, float]:
    """Z standard errors of the mean and of the variance of ``a``'s B independent draws."""
    b = len(a)
    centred = a - a.mean()
    var = float(np.mean(centred**2))
    fourth = float(np.mean(centred**4))
    return Z * math.sqrt(var / b) + 1e-12, Z * math.sqrt(max(fourth - var**2, 0.0) / b) + 1e-12


fed_lists = st.lists(st.integers(1, 7), min_size=2, max_size=12)


@settings(max_examples=60, deadline=None)
@given(feds=fed_lists, data=st.data())
def test_relabelling_the_tasks_leaves_the_bootstrap_distribution_unchanged(
    feds: list[int], data: st.DataObject
) -> None:
    # Permuting which task id holds which rollout permutes the columns of the draw; its distribution is
    # exchangeable, so the replicates of mean FED have the same mean and variance up to Monte-Carlo error.
    order = data.draw(st.permutations(range(len(feds))))
    T = [6] * len(feds)
    resamples = 4_000
    first = summarize(rows_of(feds, T, [0] * len(feds)), resamples=resamples, seed=0)
    permuted = [feds[i] for i in order]
    second = summarize(rows_of(permuted, T, [0] * len(feds)), resamples=resamples, seed=0)
    a = first.replicates[("d", "m", "a")]["mean_FED"]
    b = second.replicates[("d", "m", "a")]["mean_FED"]
    (mean_a, var_a), (mean_b, var_b) = moments_tolerance(a), moments_tolerance(b)
    assert abs(a.mean() - b.mean()) < math.hypot(mean_a, mean_b)
    assert abs(a.var() - b.var()) < math.hypot(var_a, var_b)
    assert first.get("d", "m", "a").mean_FED.point == second.get("d", "m", "a").mean_FED.point


@settings(max_examples=60, deadline=None)
@given(feds=fed_lists)
def test_the_bootstrap_of_a_mean_has_its_exact_moments(feds: list[int]) -> None:
    # Exact for the nonparametric bootstrap of a mean of n values x: E*[mean*] = mean(x) and
    # Var*[mean*] = var(x, ddof=0) / n. The replicates must match both within Monte-Carlo error.
    x = np.array(feds, dtype=float)
    reps = summarize(rows_of(feds, [6] * len(feds), [0] * len(feds)), resamples=4_000, seed=2).replicates[
        ("d", "m", "a")
    ]["mean_FED"]
    tol_mean, tol_var = moments_tolerance(reps)
    assert abs(reps.mean() - x.mean()) < tol_mean
    assert abs(reps.var() - x.var() / len(x)) < tol_var
