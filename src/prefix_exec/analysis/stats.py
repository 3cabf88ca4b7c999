"""Interval estimation: the task-level percentile bootstrap, Wilson intervals and paired differences.

The bootstrap never loops over resamples in Python. One resample-count matrix ``C`` of shape
(resamples, tasks) is drawn per dataset; ``C[b, j]`` is how many times task j appears in resample b. Every
metric the protocol bootstraps is a ratio of per-task sums (TER, AUC-PEC, mean FED, success and PEC(k) are
all means over rollouts), so all replicates of all conditions of a dataset come from two matrix products,
``C @ numerators`` over ``C @ denominators``. Sharing ``C`` across conditions keeps comparisons paired.

``C`` is never held whole: :func:`bootstrap_replicates` draws it a block of rows at a time (the same stream
of draws, so the same numbers for the same seed), which keeps memory near ``CHUNK_ELEMENTS`` counts whatever
the number of tasks; 100,000 tasks at 10,000 resamples would otherwise need an 8 GB matrix.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

DEFAULT_RESAMPLES = 10_000
DEFAULT_LEVEL = 0.95
#: Resample-count entries drawn per block by :func:`bootstrap_replicates` (4M int64: 32 MB per array).
CHUNK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its interval; ``low``/``high`` are NaN when no interval could be formed."""

    point: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float | None]:
        return {"point": _finite(self.point), "low": _finite(self.low), "high": _finite(self.high)}


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def dataset_rng(seed: int, dataset: str) -> np.random.Generator:
    """A generator for one dataset's draw, derived from ``seed`` and the dataset's name.

    Deriving it from the name (not from the order datasets are met) keeps a dataset's intervals identical
    whether or not other datasets are summarized in the same run.
    """
    # surrogatepass: a name holding a lone surrogate still has a key (the same bytes as UTF-8 otherwise).
    key = zlib.crc32(dataset.encode("utf-8", "surrogatepass"))
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(key,)))


def resample_counts(n_tasks: int, resamples: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Counts matrix of a nonparametric bootstrap over ``n_tasks`` units, shape (resamples, n_tasks).

    Each row sums to ``n_tasks``: row b is the multiplicity of every task in resample b.
    """
    if n_tasks < 1 or resamples < 1:
        raise ValueError(f"need n_tasks >= 1 and resamples >= 1, got {n_tasks}, {resamples}")
    draws = rng.integers(0, n_tasks, size=(resamples, n_tasks))
    flat = draws + (np.arange(resamples, dtype=np.int64) * n_tasks)[:, None]
    return np.bincount(flat.ravel(), minlength=resamples * n_tasks).reshape(resamples, n_tasks)


def bootstrap_ratios(
    counts: NDArray[np.int64],
    numerators: ArrayLike,
    denominators: ArrayLike,
    groups: ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Point estimates and bootstrap replicates of ratio statistics sum(num) / sum(den) over tasks.

    ``numerators`` has shape (tasks, m): column j holds statistic j's per-task sum. ``denominators`` has
    shape (tasks, g) of per-task rollout counts, and ``groups`` (m,) names the denominator column of each
    statistic (default: column j for statistic j, with g = m); statistics of one condition share one count
    column, which halves the matrix work. Returns ``point`` of shape (m,) and ``replicates`` of shape
    (resamples, m). A replicate whose resample drew no rollout of a statistic's condition is NaN.
    """
    num = np.asarray(numerators, dtype=np.float64)
    den = np.asarray(denominators, dtype=np.float64)
    index = np.arange(num.shape[1]) if groups is None else np.asarray(groups, dtype=np.int64)
    c = counts.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = num.sum(axis=0) / den.sum(axis=0)[index]
        replicates = (c @ num) / (c @ den)[:, index]
    return point, replicates


def bootstrap_replicates(
    n_tasks: int,
    resamples: int,
    rng: np.random.Generator,
    numerators: ArrayLike,
    denominators: ArrayLike,
    groups: ArrayLike | None = None,
    *,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> tuple[FloatArray, FloatArray]:
    """:func:`bootstrap_ratios` on ``resample_counts(n_tasks, resamples, rng)``, drawn in blocks of rows.

    Each block holds about ``chunk_elements`` counts (at least one resample), so peak memory is
    O(chunk_elements + resamples * m) instead of O(resamples * n_tasks). The generator yields the same
    stream block by block as in one call, so the replicates equal the unchunked ones for the same ``rng``
    state. Shapes as in :func:`bootstrap_ratios`: ``point`` (m,), ``replicates`` (resamples, m).
    """
    if n_tasks < 1 or resamples < 1:
        raise ValueError(f"need n_tasks >= 1 and resamples >= 1, got {n_tasks}, {resamples}")
    num = np.asarray(numerators, dtype=np.float64)
    den = np.asarray(denominators, dtype=np.float64)
    rows = max(1, chunk_elements // n_tasks)
    point: FloatArray | None = None
    replicates = np.empty((resamples, num.shape[1]), dtype=np.float64)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        counts = resample_counts(n_tasks, stop - start, rng)
        point, replicates[start:stop] = bootstrap_ratios(counts, num, den, groups)
    assert point is not None
    return point, replicates


def percentile_interval(replicates: ArrayLike, level: float = DEFAULT_LEVEL) -> tuple[FloatArray, FloatArray]:
    """Percentile-bootstrap bounds per column of ``replicates`` (resamples, m); NaN replicates are ignored, and
    a column of NaN only (a statistic no resample could form: a success rate where no Y is known) has NaN
    bounds."""
    reps = np.asarray(replicates, dtype=np.float64)
    alpha = (1.0 - level) / 2.0
    if not np.isnan(reps).any():
        low, high = np.percentile(reps, [100 * alpha, 100 * (1 - alpha)], axis=0)
        return low, high
    low, high = np.full(reps.shape[1], np.nan), np.full(reps.shape[1], np.nan)
    formed = ~np.isnan(reps).all(axis=0)
    if formed.any():
        low[formed], high[formed] = np.nanpercentile(reps[:, formed], [100 * alpha, 100 * (1 - alpha)], axis=0)
    return low, high


def wilson_interval(successes: int, n: int, level: float = DEFAULT_LEVEL) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion; ``None`` when ``n`` is 0 (the rate is undefined)."""
    if n == 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in 0..n, got {successes} of {n}")
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def estimates(point: FloatArray, replicates: FloatArray, level: float = DEFAULT_LEVEL) -> list[Estimate]:
    """One :class:`Estimate` per column: the point and its percentile interval."""
    low, high = percentile_interval(replicates, level)
    return [Estimate(float(p), float(lo), float(hi)) for p, lo, hi in zip(point, low, high, strict=True)]


def paired_difference(
    point_a: float, reps_a: ArrayLike, point_b: float, reps_b: ArrayLike, level: float = DEFAULT_LEVEL
) -> Estimate:
    """A - B with a percentile interval from replicates drawn on the *same* task resamples."""
    diff = np.asarray(reps_a, dtype=np.float64) - np.asarray(reps_b, dtype=np.float64)
    low, high = percentile_interval(diff[:, None], level)
    return Estimate(float(point_a - point_b), float(low[0]), float(high[0]))
