from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps

from prefix_exec.analysis.stats import (
    bootstrap_ratios,
    bootstrap_replicates,
    dataset_rng,
    paired_difference,
    percentile_interval,
    resample_counts,
    wilson_interval,
)


@pytest.mark.parametrize(("k", "n"), [(138, 190), (0, 12), (12, 12), (1, 7), (61, 200)])
def test_wilson_matches_scipy(k, n):
    expected = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson_interval(k, n)
    assert low == pytest.approx(expected.low, abs=1e-12)
    assert high == pytest.approx(expected.high, abs=1e-12)


def test_wilson_by_hand_formula():
    # p = 0.5, n = 4, z = 1.959964: centre 0.5, half = z*sqrt(1/16 + z^2/64) / (1 + z^2/4)
    z = 1.959963984540054
    half = z * np.sqrt(0.25 / 4 + z * z / 64) / (1 + z * z / 4)
    assert wilson_interval(2, 4) == pytest.approx((0.5 - half, 0.5 + half))


def test_wilson_undefined_without_trials():
    assert wilson_interval(0, 0) is None


@given(st.integers(1, 60), st.integers(1, 50), st.integers(0, 2**32 - 1))
def test_counts_are_multiplicities_of_a_resample(n, b, seed):
    counts = resample_counts(n, b, np.random.default_rng(seed))
    assert counts.shape == (b, n)
    assert (counts.sum(axis=1) == n).all()
    assert (counts >= 0).all()


def test_same_seed_same_draw_and_datasets_draw_independently():
    a = resample_counts(30, 100, dataset_rng(7, "bfcl"))
    b = resample_counts(30, 100, dataset_rng(7, "bfcl"))
    c = resample_counts(30, 100, dataset_rng(7, "tau"))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_matrix_replicates_equal_an_explicit_resampling_loop():
    rng = np.random.default_rng(3)
    n_tasks, trials = 25, 2
    values = rng.random((n_tasks, trials))  # two rollouts per task
    num = values.sum(axis=1, keepdims=True)
    den = np.full((n_tasks, 1), float(trials))
    counts = resample_counts(n_tasks, 40, np.random.default_rng(11))
    point, reps = bootstrap_ratios(counts, num, den)
    assert point[0] == pytest.approx(values.mean())
    for b in range(40):
        drawn = np.repeat(np.arange(n_tasks), counts[b])
        assert reps[b, 0] == pytest.approx(values[drawn].mean())


def test_percentile_interval_agrees_with_scipy_bootstrap():
    rng = np.random.default_rng(0)
    x = (rng.random(200) < 0.3).astype(float)
    counts = resample_counts(200, 10_000, np.random.default_rng(1))
    _, reps = bootstrap_ratios(counts, x[:, None], np.ones((200, 1)))
    low, high = percentile_interval(reps)
    ref = sps.bootstrap((x,), np.mean, n_resamples=10_000, method="percentile", rng=np.random.default_rng(2))
    assert low[0] == pytest.approx(ref.confidence_interval.low, abs=0.01)
    assert high[0] == pytest.approx(ref.confidence_interval.high, abs=0.01)


def test_paired_difference_uses_shared_draws():
    reps_a = np.array([0.5, 0.6, 0.7, 0.8])
    diff = paired_difference(0.65, reps_a, 0.55, reps_a - 0.1)
    # Identical draws shifted by 0.1: the paired interval collapses onto 0.1.
    assert (diff.point, diff.low, diff.high) == pytest.approx((0.1, 0.1, 0.1))


@pytest.mark.parametrize("chunk", [1, 37, 300, 10**7])
def test_chunked_replicates_are_the_unchunked_ones(chunk):
    rng = np.random.default_rng(3)
    n = 300
    num = rng.random((n, 6))
    den = rng.integers(1, 3, (n, 2)).astype(float)
    groups = np.repeat([0, 1], 3)
    point, reps = bootstrap_ratios(resample_counts(n, 500, np.random.default_rng(5)), num, den, groups)
    p, r = bootstrap_replicates(n, 500, np.random.default_rng(5), num, den, groups, chunk_elements=chunk)
    assert (p == point).all()
    # One block (the default for every paper-sized draw) is bit-identical; smaller blocks reorder BLAS sums.
    if chunk >= 500 * n:
        assert (r == reps).all()
    np.testing.assert_allclose(r, reps, rtol=0, atol=1e-12)


def test_chunked_bootstrap_never_holds_the_count_matrix():
    import tracemalloc

    n, resamples = 20_000, 2_000  # a whole count matrix would be 320 MB
    num = np.ones((n, 2))
    den = np.ones((n, 1))
    tracemalloc.start()
    _, reps = bootstrap_replicates(n, resamples, np.random.default_rng(0), num, den, [0, 0], chunk_elements=1 << 20)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert reps.shape == (resamples, 2)
    assert np.allclose(reps, 1.0)
    assert peak < 64 * 2**20


@pytest.mark.parametrize(("n_tasks", "resamples"), [(0, 5), (-1, 5), (5, 0), (5, -2)])
def test_counts_need_a_task_and_a_resample(n_tasks, resamples):
    """The guard names both bounds; without it numpy raises its own error for no task ("high <= 0") and an
    empty (0, n) matrix passes for no resample."""
    with pytest.raises(ValueError, match="need n_tasks >= 1 and resamples >= 1"):
        resample_counts(n_tasks, resamples, np.random.default_rng(0))


@pytest.mark.parametrize(("n_tasks", "resamples"), [(0, 5), (-1, 5), (5, 0), (5, -2)])
def test_replicates_need_a_task_and_a_resample(n_tasks, resamples):
    """As for the counts; without the guard, no task is a ZeroDivisionError (the block size) and no resample
    an AssertionError (no block drawn)."""
    num, den = np.ones((3, 1)), np.ones((3, 1))
    with pytest.raises(ValueError, match="need n_tasks >= 1 and resamples >= 1"):
        bootstrap_replicates(n_tasks, resamples, np.random.default_rng(0), num, den)


def test_one_task_or_one_resample_is_a_bootstrap():
    # One task: every resample draws it once, so every replicate is its own ratio, 3 / 2.
    point, reps = bootstrap_replicates(1, 4, np.random.default_rng(0), [[3.0]], [[2.0]])
    assert point.tolist() == [1.5]
    assert reps.tolist() == [[1.5]] * 4
    # One resample of three tasks: its replicate is the ratio of the drawn tasks' sums.
    num, den = np.array([[1.0], [2.0], [6.0]]), np.array([[1.0], [1.0], [2.0]])
    counts = resample_counts(3, 1, np.random.default_rng(9))
    assert counts.sum() == 3
    point, reps = bootstrap_replicates(3, 1, np.random.default_rng(9), num, den)
    assert point.tolist() == [9.0 / 4.0]
    assert reps.shape == (1, 1)
    drawn = np.repeat(np.arange(3), counts[0])
    assert reps[0, 0] == pytest.approx(num[drawn].sum() / den[drawn].sum())
