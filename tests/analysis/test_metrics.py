from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prefix_exec.analysis import metrics

# Hand-computed oracle (see the comments for each figure).
#   A: T=3, FED=4 (fully executable), Y=1
#   B: T=2, FED=1, Y=1
#   C: T=4, FED=3, Y=0
#   D: T=1, FED=2 (fully executable), Y=0
FED = [4, 1, 3, 2]
T = [3, 2, 4, 1]
Y = [1, 1, 0, 0]


def test_pec_by_hand():
    # FED > 1: A, C, D; FED > 2: A, C; FED > 3: A; FED > 4: none.
    np.testing.assert_allclose(metrics.pec(FED, T), [0.75, 0.5, 0.25, 0.0])


def test_n_k_and_eligible_pec_by_hand():
    np.testing.assert_array_equal(metrics.n_k(T), [4, 3, 2, 1])
    # k=2: T>=2 and FED>2 is A, C of A, B, C; k=3: A of A, C; k=4: none of C.
    np.testing.assert_allclose(metrics.pec_elig(FED, T), [3 / 4, 2 / 3, 1 / 2, 0.0])


def test_scalars_by_hand():
    assert metrics.ter(FED, T) == 0.5
    assert metrics.auc_pec(FED, T) == pytest.approx((3 / 3 + 0 / 2 + 2 / 4 + 1 / 1) / 4)
    assert metrics.mean_fed(FED) == 2.5
    assert metrics.success_rate(Y) == 0.5
    rec = metrics.recovery(FED, T, Y)
    assert (rec.successes, rec.eligible, rec.rate) == (1, 2, 0.5)
    d = metrics.decompose(FED, T, Y)
    assert (d.q, d.s, d.r, d.success) == (0.5, 0.5, 0.5, 0.5)


def test_pec_past_the_longest_rollout_is_zero_and_elig_is_undefined():
    np.testing.assert_allclose(metrics.pec(FED, T, max_depth=6)[4:], [0.0, 0.0])
    assert np.isnan(metrics.pec_elig(FED, T, max_depth=6)[4:]).all()


def test_undefined_depths_are_nan_without_a_numpy_warning():
    """Depths 5 and 6 have no eligible rollout (n_k = 0): NaN is set there, not computed as 0 / 0, which
    would print numpy's "invalid value encountered" warning beside every summary of the CLI."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        elig = metrics.pec_elig(FED, T, max_depth=6)
    np.testing.assert_allclose(elig[:4], [3 / 4, 2 / 3, 1 / 2, 0.0])
    assert np.isnan(elig[4:]).all()


def test_rr_is_undefined_not_zero_when_nothing_failed():
    rec = metrics.recovery([3, 2], [2, 1], [0, 1])
    assert rec.eligible == 0
    assert rec.rate is None
    d = metrics.decompose([3, 2], [2, 1], [0, 1])
    assert d.r is None
    assert d.q == 1.0
    assert d.recombined() == pytest.approx(d.success)


def test_paper_worked_example():
    # BFCL, Llama-4 Maverick, Plan-Conditioned ReAct: 200 rollouts, 10 fully executable and successful,
    # 190 with a prefix failure of which 138 succeed.
    T_ = np.full(200, 5)
    fed = np.concatenate([np.full(10, 6), np.full(190, 2)])
    y = np.concatenate([np.ones(10), np.ones(138), np.zeros(52)]).astype(int)
    assert metrics.ter(fed, T_) == pytest.approx(0.05)
    rec = metrics.recovery(fed, T_, y)
    assert (rec.successes, rec.eligible) == (138, 190)
    assert rec.rate == pytest.approx(0.7263, abs=5e-5)
    assert metrics.success_rate(y) == pytest.approx(0.74)
    assert rec.successes / y.sum() == pytest.approx(0.932, abs=5e-4)
    d = metrics.decompose(fed, T_, y)
    assert d.q * d.s + (1 - d.q) * d.r == pytest.approx(0.74)


@pytest.mark.parametrize(
    ("fed", "T", "y"),
    [([1], [0], [1]), ([0], [1], [1]), ([3], [1], [1]), ([1], [1], [2]), ([], [], []), ([1, 2], [1], [1])],
)
def test_invalid_inputs_are_rejected(fed, T, y):
    with pytest.raises(ValueError):
        metrics.as_arrays(fed, T, y)


@pytest.mark.parametrize(
    ("fed", "T", "y"),
    [
        pytest.param([[1, 2]], [[1, 1]], [[0, 1]], id="2-D, all of one shape"),
        pytest.param(3, 2, 1, id="0-D, one rollout not in a list"),
        pytest.param([1, 2], [1], [0, 1], id="T shorter (numpy would broadcast it)"),
        pytest.param([2], [1, 1], [1], id="T longer"),
        pytest.param([1, 2], [1, 1], [1], id="y shorter"),
        pytest.param([1, 2], [1], None, id="no y, fed and T of two lengths"),
    ],
)
def test_the_shape_check_names_each_mismatch(fed, T, y):
    """Each case is caught by the shape check itself (its message), not by a later check that a broadcast
    happens to trip, nor accepted with the arrays broadcast against each other."""
    with pytest.raises(ValueError, match="fed, T and y must be 1-D of equal length"):
        metrics.as_arrays(fed, T, y)


@st.composite
def rollouts(draw):
    n = draw(st.integers(1, 40))
    T_ = draw(st.lists(st.integers(1, 12), min_size=n, max_size=n))
    fed = [draw(st.integers(1, t + 1)) for t in T_]
    y = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    return np.array(fed), np.array(T_), np.array(y)


@given(rollouts())
def test_pec_is_non_increasing_and_bounded(data):
    fed, T_, _ = data
    curve = metrics.pec(fed, T_)
    assert (np.diff(curve) <= 1e-12).all()
    assert ((curve >= 0) & (curve <= 1)).all()


@given(rollouts())
def test_support_decomposition_eq7(data):
    fed, T_, _ = data
    nk = metrics.n_k(T_)
    elig = metrics.pec_elig(fed, T_)
    defined = nk > 0
    np.testing.assert_allclose(metrics.pec(fed, T_)[defined], (nk / len(fed) * elig)[defined])


@given(rollouts())
def test_ter_auc_bounds_and_rr_eligible_identity(data):
    fed, T_, y = data
    ter, auc = metrics.ter(fed, T_), metrics.auc_pec(fed, T_)
    assert 0 <= ter <= auc + 1e-12
    assert auc <= 1 + 1e-12
    assert metrics.recovery(fed, T_, y).eligible == pytest.approx(len(fed) * (1 - ter))


@given(rollouts())
def test_auc_is_the_mean_horizon_normalized_area_eq10(data):
    fed, T_, _ = data
    area = np.mean([sum(f > k for k in range(1, t + 1)) / t for f, t in zip(fed, T_, strict=True)])
    assert metrics.auc_pec(fed, T_) == pytest.approx(area)


@given(rollouts())
def test_success_decomposes_into_uninterrupted_and_recovered_eq12(data):
    fed, T_, y = data
    d = metrics.decompose(fed, T_, y)
    assert d.recombined() == pytest.approx(metrics.success_rate(y))


@given(st.integers(1, 10), st.lists(st.integers(0, 11), min_size=1, max_size=30))
def test_ter_equals_pec_at_a_common_horizon(t0, offsets):
    fed = np.array([1 + (o % (t0 + 1)) for o in offsets])
    T_ = np.full(len(fed), t0)
    assert metrics.ter(fed, T_) == pytest.approx(metrics.pec(fed, T_)[t0 - 1])


def test_executable_by_hand():
    # Executable means FED = T + 1: (1, T 2) no; (3, T 2) yes; (3, T 3) no; (2, T 1) yes; (1, T 1) no.
    flags = metrics.executable([1, 3, 3, 2, 1], [2, 2, 3, 1, 1])
    assert flags.dtype == np.bool_
    assert flags.tolist() == [False, True, False, True, False]
    assert metrics.executable(FED, T).tolist() == [True, False, False, True]  # A and D
    assert metrics.executable(FED, T).mean() == metrics.ter(FED, T)
    with pytest.raises(ValueError, match="fed must lie"):
        metrics.executable([3], [1])
