"""Properties of bold and ranks over random values and random records."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from report_records import record

from prefix_exec.analysis.summary import summarize
from prefix_exec.report.cells import block_maxima
from prefix_exec.report.inputs import metric_rows
from prefix_exec.report.layout import Anchors
from prefix_exec.report.metric_tables import table2
from prefix_exec.report.ranking import competition_ranks

values = st.lists(st.one_of(st.none(), st.floats(0, 10, allow_nan=False)), min_size=1, max_size=8)


@given(values)
def test_bold_is_rank_one_and_nonempty(xs: list[float | None]) -> None:
    bold = block_maxima(xs)
    ranks = competition_ranks(xs)
    assert bold == [r == 1 for r in ranks]
    assert any(bold) == any(x is not None for x in xs)
    shown = {round(x, 2) for x, b in zip(xs, bold, strict=True) if b and x is not None}
    assert len(shown) <= 1  # every bold cell prints the same number


rollout = st.tuples(
    st.sampled_from(["A", "B", "C"]),
    st.sampled_from(["t1", "t2", "t3"]),
    st.integers(1, 4),
    st.integers(0, 5),
    st.integers(0, 1),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(rollout, min_size=1, max_size=20, unique_by=lambda r: (r[0], r[1])))
def test_table2_bolds_exactly_the_shown_maxima(rows: list[tuple[str, str, int, int, int]]) -> None:
    records = [record(m, t, T=T, fed=min(f, T) + 1 if f else 1, success=y) for m, t, T, f, y in rows]
    s = summarize(metric_rows(records), resamples=50, seed=1)
    t = table2(s, Anchors.of(s))
    for column in (4, 5, 6, 8, 9):
        cells = [r[column] for r in t.rows]
        shown = [float(c.text.split(" ")[0]) if c.value is not None else None for c in cells]
        top = max((v for v in shown if v is not None), default=None)
        if len(cells) == 1:  # a block of one condition compares nothing: no bold
            assert not cells[0].bold
            continue
        assert [c.bold for c in cells] == [v is not None and v == top for v in shown]
