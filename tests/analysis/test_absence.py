"""Absent final success Y (``success`` None: not recorded) through the metrics, the bootstrap and the paired
differences: success, RR and the decomposition are over the rollouts whose Y is known, absent (``None``) when
none is, and never count an absent Y as 0; PEC, n_k, TER, AUC-PEC and FED never read Y."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefix_exec.analysis import metrics
from prefix_exec.analysis.absence import absent_note
from prefix_exec.analysis.rows import MetricRow
from prefix_exec.analysis.stats import wilson_interval
from prefix_exec.analysis.summary import summarize

# Hand oracle: five rollouts, two of them without a recorded Y.
#   A: T=3, FED=4 (executable), Y=1
#   B: T=2, FED=1,              Y absent
#   C: T=4, FED=3,              Y=0
#   D: T=1, FED=2 (executable), Y absent
#   E: T=2, FED=2,              Y=1
FED = [4, 1, 3, 2, 2]
T = [3, 2, 4, 1, 2]
Y = [1, None, 0, None, 1]


def test_metrics_by_hand_with_mixed_known_and_absent_y():
    # PEC, TER, AUC-PEC and FED use all five rollouts, as if Y were not there at all.
    assert metrics.ter(FED, T) == pytest.approx(2 / 5)  # A and D
    assert metrics.auc_pec(FED, T) == pytest.approx((3 / 3 + 0 / 2 + 2 / 4 + 1 / 1 + 1 / 2) / 5)
    np.testing.assert_allclose(metrics.pec(FED, T), [4 / 5, 2 / 5, 1 / 5, 0.0])  # FED > k: A C D E, A C, A
    # success over the known A, C, E: 2 of 3 (with the absent two read as 0 it would be 2 of 5).
    assert metrics.success_rate(Y) == pytest.approx(2 / 3)
    # RR-Eligible = #{FED <= T} = B, C, E (3); of those C and E have Y (2); E succeeded (1).
    rec = metrics.recovery(FED, T, Y)
    assert (rec.successes, rec.eligible, rec.known, rec.rate) == (1, 3, 2, 0.5)
    # The decomposition over A, C, E: q = 1/3 (A), s = 1 (A), r = 1/2 (E of C, E); q·s + (1−q)·r = 2/3.
    d = metrics.decompose(FED, T, Y)
    assert d is not None
    assert (d.q, d.s, d.r) == pytest.approx((1 / 3, 1.0, 0.5))
    assert d.success == pytest.approx(2 / 3) == pytest.approx(d.recombined())


def test_with_no_y_known_success_rr_and_the_decomposition_are_absent_not_zero():
    assert metrics.success_rate([None, None]) is None
    rec = metrics.recovery([1, 3], [2, 2], [None, None])
    assert (rec.eligible, rec.known, rec.successes, rec.rate) == (1, 0, 0, None)
    assert metrics.decompose([1, 3], [2, 2], [None, None]) is None


@pytest.mark.parametrize("y", [[2, None], [0.5, 1], [-1, None]])
def test_y_other_than_zero_one_or_absent_is_refused(y):
    with pytest.raises(ValueError, match="0, 1 or absent"):
        metrics.as_arrays([1, 1], [1, 1], y)


def rows_for(model, method, feds, Ts, ys, tasks):
    return [
        MetricRow("d", t, model, method, trial, T_, f, y)
        for trial, (t, f, T_, y) in enumerate(zip(tasks, feds, Ts, ys, strict=True))
    ]


def test_summary_by_hand_with_mixed_and_all_absent_conditions():
    tasks = ["t0", "t1", "t2", "t3", "t4"]
    rows = rows_for("m", "a", FED, T, Y, tasks) + rows_for("m", "b", FED, T, [None] * 5, tasks)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a success no resample can form is NaN without numpy's warnings
        s = summarize(rows, resamples=300, seed=2)
    a, b = s.get("d", "m", "a"), s.get("d", "m", "b")
    assert (a.N, a.success_known, a.RR_eligible, a.RR_known, a.RR_successes) == (5, 3, 3, 2, 1)
    assert a.success is not None and a.success.point == pytest.approx(2 / 3)
    assert a.success.low <= a.success.point <= a.success.high
    assert a.RR is not None and (a.RR.low, a.RR.high) == pytest.approx(wilson_interval(1, 2))
    assert (b.N, b.success_known, b.RR_eligible, b.RR_known) == (5, 0, 3, 0)
    assert (b.success, b.RR, b.decomposition) == (None, None, None)
    assert b.as_dict()["success"] is None and b.as_dict()["decomposition"] is None
    for name in ("TER", "AUC_PEC", "mean_FED", "PEC", "PEC_CI", "PEC_elig", "n_k", "RR_eligible"):
        assert getattr(a, name) == getattr(b, name), name
    # a - b: success is undefined (b records no Y) and named; TER is paired as ever (identical: exactly 0)
    paired = s.compare_conditions(("d", "m", "a"), ("d", "m", "b"))
    assert paired.unrecorded == ("success",) and paired.as_dict()["unrecorded"] == ["success"]
    assert paired.as_dict()["differences"]["success"] == {"point": None, "low": None, "high": None}
    assert (paired.differences["TER"].point, paired.differences["TER"].low) == (0.0, 0.0)


@st.composite
def conditions(draw):
    """Rows of one condition with a known Y on every task, and absent-Y rows on some of those tasks."""
    n_tasks = draw(st.integers(1, 6))
    known, absent = [], []
    for task in range(n_tasks):
        for kind, out in (("known", known), ("absent", absent)):
            for _ in range(draw(st.integers(1 if kind == "known" else 0, 3))):
                t = draw(st.integers(1, 6))
                fed = draw(st.integers(1, t + 1))
                y = draw(st.integers(0, 1)) if kind == "known" else None
                out.append(MetricRow("d", f"t{task}", "m", "a", len(known) + len(absent) + 1000, t, fed, y))
    return known, absent


FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(conditions(), st.integers(0, 3))
def test_rows_without_y_change_no_y_statistic_nor_its_interval(found, seed):
    """Success (point and bootstrap interval), RR (with its Wilson interval) and the decomposition over a set
    holding absent-Y rows equal those over its known-Y rows alone, on the same tasks: each resample's success is
    over the known Ys it drew."""
    known, absent = found
    alone = summarize(known, resamples=200, seed=seed).get("d", "m", "a")
    mixed = summarize(known + absent, resamples=200, seed=seed).get("d", "m", "a")
    assert mixed.success == alone.success
    assert (mixed.RR, mixed.RR_successes, mixed.RR_known) == (alone.RR, alone.RR_successes, alone.RR_known)
    assert mixed.decomposition == alone.decomposition
    assert (mixed.success_known, mixed.N) == (len(known), len(known) + len(absent))


@FAST
@given(conditions(), st.integers(0, 3))
def test_forgetting_every_y_changes_nothing_that_does_not_use_y(found, seed):
    """The same rollouts with every Y made absent: PEC, its intervals, n_k, TER, AUC-PEC, mean FED and the labels
    are exactly as before; success, RR and the decomposition become absent, not 0."""
    rows = found[0] + found[1]
    given_y = summarize(rows, resamples=200, seed=seed).get("d", "m", "a")
    forgotten = [dataclasses.replace(r, success=None) for r in rows]
    without = summarize(forgotten, resamples=200, seed=seed).get("d", "m", "a")
    for name in ("N", "TER", "AUC_PEC", "mean_FED", "mean_T", "PEC", "PEC_CI", "PEC_elig", "n_k", "RR_eligible"):
        assert getattr(without, name) == getattr(given_y, name), name
    assert (without.success, without.RR, without.decomposition, without.success_known) == (None, None, None, 0)


@FAST
@given(conditions(), conditions())
def test_a_paired_success_difference_ignores_the_rows_without_y(a, b):
    """a − b of success with absent-Y rows on b's tasks equals a − b over b's known rows: same draws, same Ys."""
    a_rows = [dataclasses.replace(r, method="a") for r in a[0]]
    b_known = [dataclasses.replace(r, method="b") for r in b[0]]
    b_absent = [dataclasses.replace(r, method="b") for r in b[1]]
    pair = (("d", "m", "a"), ("d", "m", "b"))
    alone = summarize(a_rows + b_known, resamples=200, seed=1).difference(*pair, "success")
    mixed = summarize(a_rows + b_known + b_absent, resamples=200, seed=1).difference(*pair, "success")
    np.testing.assert_array_equal([mixed.point, mixed.low, mixed.high], [alone.point, alone.low, alone.high])


def test_the_note_counts_the_records_without_y():
    assert absent_note([0, 1, 1]) is None
    note = absent_note([None, 1, None, 0])
    assert note is not None and note.startswith("success: not recorded for 2 of 4 records")
    assert "never 0" in note
