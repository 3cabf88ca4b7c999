"""What Figure 1 draws: the curves' numbers (hand-computed), and that the figures draw exactly them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from report_records import record

from prefix_exec.analysis.summary import ConditionSummary, summarize
from prefix_exec.report import curves, drawing, plots
from prefix_exec.report.inputs import metric_rows

# z for a 95% interval, to six places: the Wilson bounds below are computed by hand from it.
Z = 1.959964


def _condition(rows: list[Any]) -> ConditionSummary:
    (c,) = summarize(metric_rows(rows), resamples=20, seed=0).conditions
    return c


def _mixed() -> ConditionSummary:
    """N = 3: one clean rollout of 3 calls, one clean rollout of 1 call (it ends), one failing at step 2 of 3."""
    return _condition(
        [
            record("react", "t1", T=3, fed=4, success=1),
            record("react", "t2", T=1, fed=2, success=1),
            record("react", "t3", T=3, fed=2, success=0),
        ]
    )


def test_fixed_cohort_and_reach_by_hand() -> None:
    c = _mixed()
    # n_k = 3, 2, 2: the one-call rollout leaves at k = 2; PEC(k) = #{FED > k} / 3 = 3, 1, 1 (FEDs 4, 2, 2).
    assert curves.fixed_cohort(c, 5) == pytest.approx([1.0, 1 / 3, 1 / 3, 0.0, 0.0])
    assert curves.reach(c, 5) == pytest.approx([1.0, 2 / 3, 2 / 3, 0.0, 0.0])
    assert curves.fixed_cohort(c, 2) == pytest.approx([1.0, 1 / 3])
    # the gap at k = 2 is the failure; the fall from 1 to 2/3 of the reach line is the rollout that ended
    assert not curves.on_reach(c, 5)


def test_a_curve_without_failures_lies_on_its_reach_line() -> None:
    # BFCL's ground truth in small: every rollout clean, of lengths 1, 2 and 4. PEC falls to 0 all the same.
    c = _condition([record("gt", f"t{T}", T=T, fed=T + 1, success=1) for T in (1, 2, 4)])
    assert curves.fixed_cohort(c, 5) == pytest.approx([1.0, 2 / 3, 1 / 3, 1 / 3, 0.0])
    assert curves.reach(c, 5) == pytest.approx(curves.fixed_cohort(c, 5))
    assert curves.on_reach(c, 5)


def test_eligible_points_carry_n_k_and_the_wilson_interval() -> None:
    points = curves.eligible(_mixed(), 5)
    # defined only where someone reaches k (k = 1..3); k = 2 and 3: 1 survivor of the 2 that reach them
    assert [(p.k, p.survivors, p.n) for p in points] == [(1, 3, 3), (2, 1, 2), (3, 1, 2)]
    assert [p.value for p in points] == pytest.approx([1.0, 0.5, 0.5])
    # Wilson for 3/3: [n / (n + z^2), 1]; for 1/2: 1/2 ± z·sqrt(1/8 + z²/16) / (1 + z²/2)
    assert (points[0].low, points[0].high) == pytest.approx((3 / (3 + Z * Z), 1.0), abs=1e-6)
    half = Z * (1 / 8 + Z * Z / 16) ** 0.5 / (1 + Z * Z / 2)
    assert (points[1].low, points[1].high) == pytest.approx((0.5 - half, 0.5 + half), abs=1e-6)
    # fewer rollouts, wider: k = 2 on 2 rollouts is less sure than k = 1 on 3
    assert points[1].high - points[1].low > points[0].high - points[0].low


def _drawn(monkeypatch: pytest.MonkeyPatch, rows: list[Any], tmp_path: Path) -> dict[str, Any]:
    """Figure 1's figures by file stem prefix, captured before they are saved."""
    figures: dict[str, Any] = {}

    def keep(fig: Any, out: Path, stem: str) -> list[Path]:
        figures[stem.split("-")[0] + ("-elig" if stem.startswith("figure1-elig") else "")] = fig
        return []

    monkeypatch.setattr(drawing, "save", keep)
    monkeypatch.setattr(drawing.pyplot(), "close", lambda fig: None)
    plots.figure1(summarize(metric_rows(rows), resamples=20, seed=0), tmp_path)
    return figures


def test_figure1_draws_each_curve_with_its_reach_line_and_a_caption(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rows = [
        record("react", "t1", T=3, fed=4, success=1),
        record("react", "t2", T=1, fed=2, success=1),
        record("react", "t3", T=3, fed=2, success=0),
        *(record("dual-loop", f"t{i}", T=2, fed=3, success=1) for i in (1, 2, 3)),
    ]
    summary = summarize(metric_rows(rows), resamples=20, seed=0)
    fig = _drawn(monkeypatch, rows, tmp_path)["figure1"]
    (ax,) = fig.axes[:1]
    lines = {(line.get_label(), tuple(line.get_ydata())): line for line in ax.get_lines()}
    for c in summary.conditions:
        depth = len(ax.get_lines()[0].get_xdata())
        curve = lines[(c.method, tuple(curves.fixed_cohort(c, depth)))]
        reach = next(
            line
            for (label, ydata), line in lines.items()
            if label.startswith("_") and ydata == pytest.approx(tuple(curves.reach(c, depth)))
        )
        assert reach.get_color() == curve.get_color()
        assert reach.get_linestyle() == "--" and reach.get_linewidth() < curve.get_linewidth()
    caption = fig.get_supxlabel()
    assert "ended" in caption and "failure" in caption and "n_k / N" in caption
    # dual-loop never fails: its curve is on its reach line, and the panel says so
    notes = [t.get_text() for t in ax.texts] + [box.get_title().get_text() for box in ax.artists]
    assert any("dual-loop: PEC(k) = n_k / N" in note for note in notes)


def test_the_eligible_view_draws_its_band_and_n_k(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rows = [
        record("react", "t1", T=3, fed=4, success=1),
        record("react", "t2", T=1, fed=2, success=1),
        record("react", "t3", T=3, fed=2, success=0),
    ]
    fig = _drawn(monkeypatch, rows, tmp_path)["figure1-elig"]
    top, bottom = fig.axes[:2]
    points = curves.eligible(_mixed(), 10)
    assert [tuple(line.get_ydata()) for line in bottom.get_lines()] == [tuple(p.n for p in points)]
    (band,) = top.collections
    ys = sorted({round(float(y), 9) for y in band.get_paths()[0].vertices[:, 1]})
    for p in points:
        assert round(p.low, 9) in ys and round(p.high, 9) in ys
    # all three points have n_k < 10: drawn hollow (white faces) besides the line
    hollow = [line for line in top.get_lines() if line.get_markerfacecolor() == "white"]
    assert [tuple(line.get_xdata()) for line in hollow] == [(1, 2, 3)]
    assert "Wilson" in fig.get_supxlabel()
