"""The protocol's metrics as pure functions over arrays (paper section 2.2, equations 1 to 12).

Inputs are 1-D arrays of one condition's N rollouts, aligned by position:

- ``fed``: first-error depth, integers in ``1..T_i + 1`` (``T_i + 1`` when fully executable);
- ``T``: evaluated action slots, integers >= 1 (an empty rollout counts as T = 1);
- ``y``: final success, 0 or 1, or absent (``None`` or NaN: the input recorded no Y). Absent Y is never 0: the
  success rate, RR and the decomposition are taken over the rollouts whose Y is known, and are ``None`` (not 0)
  when there is none; PEC, n_k, TER, AUC-PEC and FED use every rollout and never read Y.

Depth ``k`` is 1-based everywhere; curves are returned as arrays whose index 0 is k = 1. Every function is
deterministic and allocates nothing larger than its inputs times the depth range.

The scalar statistics TER, AUC-PEC, mean FED and final success are each the mean of one per-rollout value;
:data:`PER_ROLLOUT` names those values once, and both the point estimates here and the task-level bootstrap
of :mod:`prefix_exec.analysis.summary` (which resamples per-task sums of them) read them from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def as_arrays(fed: ArrayLike, T: ArrayLike, y: ArrayLike | None = None) -> tuple[IntArray, IntArray, FloatArray]:
    """Validate and convert; raises ``ValueError`` when an invariant of the protocol is broken. ``y`` comes back
    as floats, 0.0 or 1.0, NaN where absent (``None`` in ``y``); without ``y``, every Y is absent."""
    f = np.asarray(fed, dtype=np.int64)
    t = np.asarray(T, dtype=np.int64)
    s = np.full(f.shape, np.nan) if y is None else np.asarray(y, dtype=np.float64)
    if f.ndim != 1 or f.shape != t.shape or f.shape != s.shape:
        raise ValueError(f"fed, T and y must be 1-D of equal length, got {f.shape}, {t.shape}, {s.shape}")
    if f.size == 0:
        raise ValueError("no rollouts: metrics need N >= 1")
    if (t < 1).any():
        raise ValueError("T must be >= 1 for every rollout (an empty rollout counts as T = 1)")
    if ((f < 1) | (f > t + 1)).any():
        raise ValueError("fed must lie in 1..T+1 for every rollout")
    if not (np.isin(s, (0, 1)) | np.isnan(s)).all():
        raise ValueError("y must be 0, 1 or absent (None)")
    return f, t, s


def outcomes(values: Iterable[int | None]) -> FloatArray:
    """Ys as :func:`as_arrays` takes them: 0.0, 1.0, NaN for an absent (``None``) one."""
    return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)


def known(y: FloatArray) -> NDArray[np.bool_]:
    """Per rollout: is its Y recorded (not NaN)?"""
    return ~np.isnan(y)


def executable_values(fed: IntArray, T: IntArray, y: FloatArray) -> FloatArray:
    """Per rollout: 1.0 when the whole trajectory is executable (FED = T + 1), else 0.0 (TER's values)."""
    return np.asarray(fed == T + 1, dtype=np.float64)


def area_values(fed: IntArray, T: IntArray, y: FloatArray) -> FloatArray:
    """Per rollout: the horizon-normalized area (FED - 1) / T, in [0, 1] (AUC-PEC's values)."""
    return np.asarray((fed - 1) / T, dtype=np.float64)


def fed_values(fed: IntArray, T: IntArray, y: FloatArray) -> FloatArray:
    """Per rollout: the first-error depth as a float (mean FED's values)."""
    return np.asarray(fed, dtype=np.float64)


def success_values(fed: IntArray, T: IntArray, y: FloatArray) -> FloatArray:
    """Per rollout: final success Y as a float, NaN where absent (the success rate's values)."""
    return np.asarray(y, dtype=np.float64)


#: ``values(fed, T, y) -> (N,) floats`` for validated arrays (:func:`as_arrays`); the statistic is the mean of
#: the values that are not NaN (only the success rate has NaN values: its absent Y).
PerRollout = Callable[[IntArray, IntArray, FloatArray], FloatArray]
#: Each scalar statistic by its name in summaries and records, in column order.
PER_ROLLOUT: Mapping[str, PerRollout] = {
    "TER": executable_values,
    "AUC_PEC": area_values,
    "mean_FED": fed_values,
    "success": success_values,
}
#: The statistics of :data:`PER_ROLLOUT` whose values are NaN where Y is absent: each is the mean over the
#: rollouts whose Y is known (the others use every rollout).
OVER_KNOWN_Y = frozenset({"success"})


def executable(fed: ArrayLike, T: ArrayLike) -> NDArray[np.bool_]:
    """Per rollout: is the whole trajectory executable (FED = T + 1)?"""
    f, t, _ = as_arrays(fed, T)
    return np.asarray(f == t + 1, dtype=np.bool_)


def survival_matrix(fed: ArrayLike, max_depth: int) -> NDArray[np.bool_]:
    """Indicator matrix ``S[i, k-1] = 1{FED_i > k}`` for k = 1..max_depth, shape (N, max_depth)."""
    f = np.asarray(fed, dtype=np.int64)
    depths = np.arange(1, max_depth + 1)
    return f[:, None] > depths[None, :]


def _above(values: IntArray, depth: int) -> IntArray:
    """``#{values_i > k}`` for k = 1..depth, from a histogram: O(N + depth) memory, never N x depth."""
    hist = np.bincount(np.clip(values, 0, depth + 1), minlength=depth + 2)
    return np.asarray(values.size - np.cumsum(hist)[1 : depth + 1], dtype=np.int64)


def pec(fed: ArrayLike, T: ArrayLike, max_depth: int | None = None) -> FloatArray:
    """Fixed-cohort PEC(k) = #{FED_i > k} / N for k = 1..max_depth (default max T), eq. (4).

    No censoring correction: a rollout that ended before depth k counts as not surviving to k, so the
    curve is non-increasing and its denominator is always N. Memory is O(N + max_depth).
    """
    f, t, _ = as_arrays(fed, T)
    depth = int(t.max()) if max_depth is None else max_depth
    return np.asarray(_above(f, depth) / f.size, dtype=np.float64)


def n_k(T: ArrayLike, max_depth: int | None = None) -> IntArray:
    """Eligible-set sizes n_k = #{T_i >= k} for k = 1..max_depth (default max T), eq. (5)."""
    t = np.asarray(T, dtype=np.int64)
    depth = int(t.max()) if max_depth is None else max_depth
    # T_i >= k  <=>  T_i + 1 > k
    return _above(t + 1, depth)


def pec_elig(fed: ArrayLike, T: ArrayLike, max_depth: int | None = None) -> FloatArray:
    """Eligible-depth PEC_elig(k) = #{T_i >= k and FED_i > k} / n_k, eq. (6); NaN where n_k = 0.

    Not a survival curve: the eligible set changes with k, so it need not be monotone. It satisfies
    PEC(k) = (n_k / N) * PEC_elig(k) wherever n_k > 0, eq. (7).
    """
    f, t, _ = as_arrays(fed, T)
    depth = int(t.max()) if max_depth is None else max_depth
    eligible = n_k(t, depth)
    # FED_i > k means FED_i >= k + 1, and FED_i <= T_i + 1, so T_i >= k: the eligibility condition of
    # eq. (6) holds for every survivor and the numerator is #{FED_i > k}.
    alive = _above(f, depth)
    out = np.full(depth, np.nan)
    np.divide(alive, eligible, out=out, where=eligible > 0)
    return out


def ter(fed: ArrayLike, T: ArrayLike) -> float:
    """Trajectory executability rate: the share of rollouts with FED = T + 1, eq. (8)."""
    return float(executable_values(*as_arrays(fed, T)).mean())


def auc_pec(fed: ArrayLike, T: ArrayLike) -> float:
    """Horizon-normalized area: mean of (FED_i - 1) / T_i, eq. (11). Lies in [0, 1]; 1 iff TER = 1."""
    return float(area_values(*as_arrays(fed, T)).mean())


def mean_fed(fed: ArrayLike) -> float:
    """Mean first-error depth. Read it with the horizon: a fully executable rollout has FED = T + 1."""
    f = np.asarray(fed, dtype=np.int64)
    return float(fed_values(f, f, f.astype(np.float64)).mean())


def success_rate(y: ArrayLike) -> float | None:
    """Final success Pr(Y = 1) over the rollouts whose Y is known; ``None`` (not 0) when none is."""
    s = np.asarray(y, dtype=np.float64)
    found = s[known(s)]
    return float(found.mean()) if found.size else None


@dataclass(frozen=True)
class Recovery:
    """RR = Pr[Y = 1 | FED <= T], eq. (9), over the RR-Eligible rollouts whose Y is known.

    ``eligible`` is RR-Eligible = #{FED <= T} (every rollout with a prefix failure, Y known or not), ``known``
    those of them whose Y is recorded (RR's denominator) and ``successes`` those with Y = 1. ``rate`` is ``None``
    (not 0) when ``known`` is 0: undefined when nothing failed, absent when no failed rollout's Y is recorded.
    """

    successes: int
    eligible: int
    known: int

    @property
    def rate(self) -> float | None:
        return self.successes / self.known if self.known else None


def recovery(fed: ArrayLike, T: ArrayLike, y: ArrayLike) -> Recovery:
    """Recovery counts: successes among rollouts with a prefix failure, RR-Eligible = #{FED <= T}, and how many of
    those have a known Y."""
    f, t, s = as_arrays(fed, T, y)
    failed = f <= t
    counted = failed & known(s)
    return Recovery(successes=int(s[counted].sum()), eligible=int(failed.sum()), known=int(counted.sum()))


@dataclass(frozen=True)
class Decomposition:
    """Pr(Y=1) = q*s + (1-q)*r, eq. (12), with q = TER, s = Pr(Y=1 | FED = T+1) and r = RR, all four over the
    rollouts whose Y is known (so that the identity holds; with every Y known, q is TER).

    ``s`` is ``None`` when no rollout is fully executable (q = 0) and ``r`` is ``None`` when none failed
    (q = 1); the identity then holds with the undefined term's weight at zero.
    """

    q: float
    s: float | None
    r: float | None
    success: float

    def recombined(self) -> float:
        """q*s + (1-q)*r with undefined terms dropped; equals ``success`` up to float rounding."""
        return self.q * (self.s or 0.0) + (1.0 - self.q) * (self.r or 0.0)


def decompose(fed: ArrayLike, T: ArrayLike, y: ArrayLike) -> Decomposition | None:
    """The decomposition over the rollouts whose Y is known; ``None`` when no Y is."""
    f, t, s = as_arrays(fed, T, y)
    mask = known(s)
    if not mask.any():
        return None
    f, t, s = f[mask], t[mask], s[mask]
    full = f == t + 1
    q = float(full.mean())
    s_rate = float(s[full].mean()) if full.any() else None
    r_rate = recovery(f, t, s).rate
    return Decomposition(q=q, s=s_rate, r=r_rate, success=float(s.mean()))
