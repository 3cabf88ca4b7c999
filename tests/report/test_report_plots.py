"""Figures that stay readable and safe: plain-text labels, the x-axis cut at a stated k_max, and the no-failure
note clear of the curves (file names and styles: test_report_drawing.py)."""

from __future__ import annotations

from pathlib import Path

from report_records import record

from prefix_exec.analysis.summary import summarize
from prefix_exec.report.build import Options, write_report
from prefix_exec.report.inputs import metric_rows
from prefix_exec.report.layout import depth_cut, leaderboard_blocks


def test_depth_cut_is_bfcl_ten_else_the_95th_percentile_of_t() -> None:
    # 19 rollouts of T = 4 and one of T = 102: 95% have T <= 4, so the axis stops at 4, not 102
    rows = [record("a", f"t{i}", T=4, fed=5, success=1, dataset="tau", model=f"m{i % 2}") for i in range(19)]
    rows.append(record("a", "t19", T=102, fed=103, success=1, dataset="tau", model="m1"))
    s = summarize(metric_rows(rows), resamples=20, seed=0)
    cut = depth_cut("tau", s.conditions)
    assert cut.k_max == 4
    assert "95th percentile of T" in cut.reason
    assert "max T 102" in cut.reason
    bfcl = [record("a", f"t{i}", T=30, fed=31, success=1, dataset="bfcl_x") for i in range(3)]
    assert depth_cut("bfcl_x", summarize(metric_rows(bfcl), resamples=20, seed=0).conditions).k_max == 10


def test_hostile_model_names_draw_as_text(tmp_path: Path) -> None:
    names = ["org/model-a", "org:model-a", "org_model-a", "$\\frac{1}{2}$ model", "n" * 300]
    rows = [
        record(method, f"t{i}", T=3, fed=2 + (i + j) % 3, success=i % 2, model=name, dataset="tau")
        for j, name in enumerate(names)
        for method in ("react", "dual-loop")
        for i in range(4)
    ]
    report = write_report(rows, tmp_path / "out", Options(resamples=50))
    pngs = sorted(p.name for p in report.files if p.suffix == ".png")
    # one Figure 1 pair per model (five distinct files despite three names sharing a slug), the ranking
    # chart and the leaderboard's two figures
    assert len([p for p in pngs if p.startswith("figure1-") and not p.startswith("figure1-elig-")]) == 5
    assert len(pngs) == 5 * 2 + 1 + 2
    assert max(len(p) for p in pngs) < 80
    s = summarize(metric_rows(rows), resamples=20, seed=0)
    assert len(leaderboard_blocks(s)[0].rows) == 10


def test_the_no_failure_note_sits_clear_of_every_plotted_point() -> None:
    """A curve on its reach line is named in a note inside the panel. Placed in a fixed corner, it covered
    the points of another curve there (here a method whose rollouts mostly fail at step 1 runs along the
    bottom); it goes where it covers none."""
    from prefix_exec.report.drawing import pyplot, series_styles
    from prefix_exec.report.plots import _curve_panel

    clean = [record("clean", f"t{i}", T=1 + i % 6, fed=2 + i % 6, success=1) for i in range(30)]
    # 2 of 30 executable: PEC(k) = 0.07 up to k = 6, a run of points just above the bottom axis
    failing = [record("failing", f"t{i}", T=6, fed=1 if i > 1 else 7, success=0) for i in range(30)]
    s = summarize(metric_rows(clean + failing), resamples=20, seed=0)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    try:
        _curve_panel(ax, s.conditions, "bfcl_demo", series_styles(["clean", "failing"]), lambda c: c.method)
        fig.canvas.draw()
        # the note, whether drawn as a text or as a legend-like box
        texts = [(t, t.get_text()) for t in ax.texts] + [(a, a.get_title().get_text()) for a in ax.artists]
        notes = [(artist, text) for artist, text in texts if "no failure" in text]
        assert len(notes) == 1 and notes[0][1].startswith("clean:")
        box = notes[0][0].get_window_extent()
        points = [
            xy for line in ax.get_lines() if line.get_marker() not in (None, "None", "") for xy in line.get_xydata()
        ]
        assert points
        assert not any(box.contains(*ax.transData.transform(xy)) for xy in points)
    finally:
        plt.close(fig)
