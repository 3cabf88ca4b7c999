"""What Figure 1 and the leaderboard figure draw, as numbers: the plots draw exactly these, so tests check these.

All curves are indexed from k = 1 and cut at a panel's ``depth`` (its k_max). N is a condition's rollout count
and n_k = #{T ≥ k} the rollouts that reach depth k.

- :func:`fixed_cohort`: PEC(k) = #{FED > k} / N, 0 beyond the longest rollout (exact: nobody survives there).
- :func:`reach`: n_k / N, the most PEC(k) can be. A drop of PEC(k) is a failure at step k or a rollout that
  ended (T < k): where PEC falls along its reach line, rollouts ended; the gap below the line is failures.
- :func:`on_reach`: whether a curve lies on its reach line throughout (nothing failed up to ``depth``).
- :func:`pec_band`: PEC(k)'s bootstrap interval where the summary has one (up to its ``ci_depth``), then
  ``(0, 0)`` beyond the longest rollout.
- :func:`eligible`: PEC_elig(k) = #{T ≥ k, FED > k} / n_k with its 95% Wilson interval on n_k, only where
  n_k > 0 (undefined elsewhere), so that k = 9 on 3 rollouts shows its width.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefix_exec.analysis.stats import wilson_interval
from prefix_exec.analysis.summary import ConditionSummary


@dataclass(frozen=True)
class EligiblePoint:
    """PEC_elig at depth ``k``: ``value`` = ``survivors`` / ``n``, with its Wilson interval [low, high]."""

    k: int
    value: float
    low: float
    high: float
    survivors: int
    n: int


def fixed_cohort(c: ConditionSummary, depth: int) -> list[float]:
    """PEC(1..depth), 0.0 past the longest rollout."""
    return [*c.PEC[:depth], *[0.0] * (depth - len(c.PEC[:depth]))]


def reach(c: ConditionSummary, depth: int) -> list[float]:
    """n_k / N for k = 1..depth (0.0 where no rollout reaches k, and everywhere when N is 0)."""
    counts = [*c.n_k[:depth], *[0] * (depth - len(c.n_k[:depth]))]
    return [n / c.N if c.N else 0.0 for n in counts]


def on_reach(c: ConditionSummary, depth: int) -> bool:
    """True when PEC(k) equals n_k / N at every k ≤ ``depth`` (no rollout failed by then) and some rollout
    reaches k = 1: the curve then lies on its reach line and hides it."""
    return bool(c.N and c.n_k and c.n_k[0]) and all(
        abs(p - r) < 1e-12 for p, r in zip(fixed_cohort(c, depth), reach(c, depth), strict=True)
    )


def pec_band(c: ConditionSummary, depth: int) -> list[tuple[float, float]]:
    """(low, high) of PEC(k) from k = 1: the summary's intervals, then exact zeros after the longest rollout
    when the intervals reach it; shorter than ``depth`` when they stop earlier (``ci_depth``)."""
    band = [(e.low, e.high) for e in c.PEC_CI[:depth]]
    if len(c.PEC_CI) >= len(c.PEC):  # intervals up to the longest rollout: zeros after it are exact
        band += [(0.0, 0.0)] * (depth - len(band))
    return band


def eligible(c: ConditionSummary, depth: int) -> list[EligiblePoint]:
    """PEC_elig(k) with its 95% Wilson interval, for each k ≤ depth with n_k > 0, in order of k."""
    points = []
    for k, (value, n) in enumerate(zip(c.PEC_elig[:depth], c.n_k[:depth], strict=False), start=1):
        if value is None or n == 0:
            continue
        survivors = round(value * n)  # PEC_elig is a ratio of counts: this recovers the count exactly
        interval = wilson_interval(survivors, n)
        assert interval is not None  # n > 0
        points.append(EligiblePoint(k, value, interval[0], interval[1], survivors, n))
    return points
