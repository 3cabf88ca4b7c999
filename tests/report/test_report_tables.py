"""Golden tests of the report tables on crafted records (tests/report/report_records.py): every number below was
checked by hand; bold marks block maxima per column with ties included."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from report_records import crafted, record

from prefix_exec.analysis.summary import Summary, summarize
from prefix_exec.report.build import Options, build_tables
from prefix_exec.report.cells import block_maxima
from prefix_exec.report.formats import RENDERERS, to_csv, to_latex, to_markdown
from prefix_exec.report.inputs import metric_rows
from prefix_exec.report.layout import Anchors, method_key
from prefix_exec.report.metric_tables import checkpoints, decomposition, label_counts, table2
from prefix_exec.report.paired import paired_differences, resolve_pairs
from prefix_exec.report.ranking import competition_ranks, kendall_tau, ranking, ranking_agreement
from prefix_exec.trajectory import FailureLabel

GOLDEN = Path(__file__).parent / "golden"


def summary_of(rows=None, resamples: int = 200) -> Summary:
    return summarize(metric_rows(rows if rows is not None else crafted()), resamples=resamples, seed=0)


# The md rendering after its title and note lines. Block m1: react and plan-conditioned tie on TER, mean FED,
# AUC-PEC and success (both bold); all three tie on success. RR is undefined where nothing failed and never
# bold; dual-loop's RR 4/4 = 1.00 with Wilson [0.51, 1.00]. Block m2: both at success 0.00, a tie at the
# minimum is still the maximum, so both are bold. RR-Eligible is never bold.
GOLDEN_MD = (GOLDEN / "table2.md").read_text(encoding="utf-8")

GOLDEN_CSV = (GOLDEN / "table2.csv").read_text(encoding="utf-8")

GOLDEN_TEX = (GOLDEN / "table2.tex").read_text(encoding="utf-8")


def test_table2_markdown_golden() -> None:
    s = summary_of()
    text = to_markdown(table2(s, Anchors.of(s)))
    assert text.split("\n", 4)[4] == GOLDEN_MD


def test_table2_csv_golden() -> None:
    s = summary_of()
    assert to_csv(table2(s, Anchors.of(s))) == GOLDEN_CSV


def test_table2_latex_golden() -> None:
    s = summary_of()
    assert to_latex(table2(s, Anchors.of(s))) == GOLDEN_TEX


def test_block_maxima_ties_at_shown_precision() -> None:
    # 0.944 and 0.941 both print as 0.94: both bold; 0.93 is not; undefined never is.
    assert block_maxima([0.944, 0.941, 0.93, None]) == [True, True, False, False]
    assert block_maxima([None, None]) == [False, False]
    assert block_maxima([0.5]) == [True]
    assert block_maxima([0.996, 1.0]) == [True, True]  # both show as 1.00


def test_table2_cells_link_to_their_condition() -> None:
    s = summary_of()
    anchors = Anchors.of(s)
    t = table2(s, anchors)
    for row in t.rows:
        cond = (row[0].text, row[1].text, row[2].text)
        assert {c.link for c in row[3:]} == {anchors.condition(cond)}
    # method order follows the paper (react, ..., plan-conditioned, dual-loop), not the alphabet
    assert [r[2].text for r in t.rows] == ["react", "plan-conditioned", "dual-loop", "react", "dual-loop"]


def test_checkpoints_points_and_missing_depths() -> None:
    s = summary_of()
    t = checkpoints(s, Anchors.of(s), ks=(1, 2, 4, 5))
    rows = {(r[1].text, r[2].text): [c.text for c in r[3:]] for r in t.rows}
    # dual-loop on m1 fails at step 2: PEC(1) = 1, PEC(k >= 2) = 0; the dataset's longest rollout is T = 4,
    # so no rollout reaches k = 5: the fixed-cohort PEC@5 is exactly 0 (Table G.1 prints 0, not n/a).
    assert rows[("m1", "dual-loop")] == ["1.00 [1.00, 1.00]"] + ["0.00 [0.00, 0.00]"] * 3
    assert rows[("m1", "react")] == ["1.00 [1.00, 1.00]"] * 3 + ["0.00 [0.00, 0.00]"]
    assert all(row[-1].value == 0.0 and row[-1].csv == ("0.0", "0.0", "0.0") for row in t.rows)
    # m2 dual-loop is executable with T = 2: it survives past 2 (FED 3) but not past 3 (fixed cohort).
    assert rows[("m2", "dual-loop")][:3] == ["1.00 [1.00, 1.00]", "1.00 [1.00, 1.00]", "0.00 [0.00, 0.00]"]


def test_label_counts_link_to_label_groups() -> None:
    s = summary_of()
    anchors = Anchors.of(s)
    t = label_counts(s, anchors)
    assert t.columns[3:] == (
        "schema",
        "dependency",
        "precondition",
        "state_consistency",
        "information",
        "executable",
        "N",
    )
    rows = {(r[1].text, r[2].text): r for r in t.rows}
    dual = rows[("m1", "dual-loop")]
    assert [c.text for c in dual[3:]] == ["4", "0", "0", "0", "0", "0", "4"]
    assert dual[3].link == anchors.label(("bfcl_demo", "m1", "dual-loop"), "schema")
    react2 = rows[("m2", "react")]
    assert [c.text for c in react2[3:]] == ["0", "0", "4", "0", "0", "0", "4"]
    assert react2[5].link == anchors.label(("bfcl_demo", "m2", "react"), "precondition")
    assert react2[3].link is None
    assert react2[8].link is None  # zero counts link nowhere


def test_decomposition_recombines_to_success() -> None:
    rows = crafted()
    # A mixed condition: 2 executable (1 success), 2 failed (1 recovered): q = .5, s = .5, r = .5, Y = .5.
    rows += [
        record("mixed", "t1", T=3, fed=4, success=1),
        record("mixed", "t2", T=3, fed=4, success=0),
        record("mixed", "t3", T=3, fed=2, success=1),
        record("mixed", "t4", T=3, fed=1, success=0),
    ]
    s = summary_of(rows)
    t = decomposition(s, Anchors.of(s))
    mixed = next(r for r in t.rows if r[2].text == "mixed")
    assert [c.text for c in mixed[3:]] == ["0.50", "0.50", "0.50", "0.50", "0.50", "50.0% (1/2)"]
    react = next(r for r in t.rows if r[2].text == "react" and r[1].text == "m1")
    assert [c.text for c in react[3:]] == ["1.00", "1.00", "undefined", "1.00", "1.00", "0.0% (0/4)"]
    nothing = next(r for r in t.rows if r[2].text == "dual-loop" and r[1].text == "m2")
    assert (nothing[7].text, nothing[8].text, nothing[8].value) == ("0.00", "n/a (no success)", None)


def test_decomposition_share_of_the_worked_example() -> None:
    """The paper's BFCL Llama-4 Maverick Plan-Conditioned ReAct: 200 rollouts, 10 fully executable (all
    successful), 190 with a prefix failure of which 138 succeed: 138/148 = 93.2% came after an invalid prefix."""
    rows = [record("pc", f"t{i}", T=3, fed=4, success=1) for i in range(10)]
    rows += [record("pc", f"t{10 + i}", T=3, fed=2, success=int(i < 138)) for i in range(190)]
    s = summary_of(rows)
    row = decomposition(s, Anchors.of(s)).rows[0]
    assert [c.text for c in row[3:]] == ["0.05", "1.00", "0.73", "0.74", "0.74", "93.2% (138/148)"]
    assert row[8].value == pytest.approx(138 / 148)


def test_ranking_divergence_flags_the_headline_case() -> None:
    # Block m1: outcome leaders are all three (tied at 1.00); prefix leaders are react and plan-conditioned.
    # A leader by AUC-PEC is among those tied for the lead by success, so the rankings do not diverge.
    s = summary_of()
    agreement = {r[1].text: [c.text for c in r[2:]] for r in ranking_agreement(s).rows}
    assert agreement["m1"][:3] == [
        "react, plan-conditioned, dual-loop",
        "react, plan-conditioned",
        "react, plan-conditioned",
    ]
    assert agreement["m1"][5] == "no"
    # m2: success tied at 0 (both lead), AUC-PEC led by dual-loop alone, who is among the success leaders:
    # no divergence, and tau is undefined because the success ranking is constant.
    assert agreement["m2"][3] == "undefined (a ranking is constant)"
    assert agreement["m2"][5] == "no"
    t = ranking(s, Anchors.of(s))
    dual = next(r for r in t.rows if r[1].text == "m1" and r[2].text == "dual-loop")
    assert (dual[4].text, dual[6].text, dual[9].text) == ("1", "3", "-2")


def test_ranking_divergence_when_success_and_prefix_reverse() -> None:
    # A succeeds more but breaks early; B survives but fails more: the rankings reverse (tau = -1). Every
    # resample where B does not draw only t1 reverses them too, so the interval is [-1, -1]: diverges.
    rows = [record("A", t, T=4, fed=1, success=1, dataset="x") for t in ("t1", "t2", "t3")]
    rows += [record("B", t, T=4, fed=5, success=int(t == "t1"), dataset="x") for t in ("t1", "t2", "t3")]
    s = summary_of(rows)
    (row,) = ranking_agreement(s).rows
    assert [c.text for c in row[2:]] == ["A", "B", "B", "-1.00 [-1.00, -1.00]", "-1.00 [-1.00, -1.00]", "yes"]
    assert row[7].bold


def test_one_condition_per_block_says_so() -> None:
    rows = [record("A", t, T=2, fed=3, success=1, dataset="x") for t in ("t1", "t2")]
    (row,) = ranking_agreement(summary_of(rows)).rows
    assert [c.text for c in row[5:]] == ["n/a (one condition)", "n/a (one condition)", "one condition: nothing to rank"]
    assert "undefined" not in to_markdown(ranking_agreement(summary_of(rows)))


def test_competition_ranks_and_kendall() -> None:
    assert competition_ranks([0.5, 0.9, 0.9, None]) == [3, 1, 1, None]
    assert kendall_tau([1, 2, 3], [1, 2, 3]) == 1.0
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau([1, 1], [1, 2]) is None
    # tau-b with one tie in a: (C - D) / sqrt((n0 - n1)(n0 - n2)) = (2 - 0) / sqrt(2 * 3)
    assert abs(kendall_tau([1, 1, 2], [1, 2, 3]) - 2 / 6**0.5) < 1e-12


def test_paired_differences_default_and_chosen_pairs() -> None:
    s = summary_of()
    default = paired_differences(s)
    m1 = [(r[1].text, r[2].text) for r in default.rows if r[1].text.startswith("m1/")]
    assert m1 == [
        ("m1/plan-conditioned", "m1/react"),
        ("m1/dual-loop", "m1/react"),
        ("m1/dual-loop", "m1/plan-conditioned"),
    ]
    chosen = paired_differences(s, resolve_pairs(s, ["dual-loop:react"], option="--pair"))
    texts = {r[1].text: [c.text for c in r[3:]] for r in chosen.rows}
    # homogeneous conditions on the same 4 tasks: the differences are exact and their intervals degenerate
    assert texts["m1/dual-loop"] == [
        "4",
        "-1.00 [-1.00, -1.00]",
        "-3.00 [-3.00, -3.00]",
        "-0.75 [-0.75, -0.75]",
        "0.00 [0.00, 0.00]",
    ]
    assert texts["m2/dual-loop"] == [
        "4",
        "1.00 [1.00, 1.00]",
        "2.00 [2.00, 2.00]",
        "1.00 [1.00, 1.00]",
        "0.00 [0.00, 0.00]",
    ]


def test_every_section_renders_in_every_format() -> None:
    rows = crafted()
    s = summary_of(rows)
    tables = [table for section in build_tables(s, rows, Options(resamples=200)) for table in section.tables]
    assert tables
    for table in tables:
        for name, render in RENDERERS.items():
            if render is not to_csv:
                assert table.title.split(":")[0] in render(table), (table.name, name)


def test_every_section_is_a_rectangular_csv_with_one_line_per_row() -> None:
    # The CSV has no title; it must parse back into a header and one line per table row, each as wide as the
    # header (a cell's csv parts plus a *_bold flag for a bolded column), starting with the row's first cell.
    rows = crafted()
    s = summary_of(rows)
    for section in build_tables(s, rows, Options(resamples=200)):
        for table in section.tables:
            header, *lines = csv.reader(io.StringIO(to_csv(table)))
            heads = table.csv_columns or tuple((c,) for c in table.columns)
            width = sum(len(h) for h in heads) + len(table.bold_columns)
            assert len(header) == width, table.name
            assert header[0] == heads[0][0], table.name
            assert len(lines) == len(table.rows), table.name
            for line, row in zip(lines, table.rows, strict=True):
                assert len(line) == width, (table.name, line)
                assert line[0] == (row[0].csv or (row[0].text,))[0], (table.name, line)


def test_method_key() -> None:
    assert method_key("Plan-Cond. ReAct") == "plan_cond_react"
    assert method_key(" Dual Loop ") == "dual_loop"


def test_labels_enum_order_matches_columns() -> None:
    assert [label.value for label in FailureLabel][:2] == ["schema", "dependency"]


def test_csv_and_markdown_cells_are_neutralised() -> None:
    from prefix_exec.report.cells import Cell, Table
    from prefix_exec.report.formats import to_csv, to_markdown

    hostile = ['=HYPERLINK("http://x","y")', "@SUM(A1)", "+1+1", "<script>alert(1)</script>", "a|b\nc", "-0.05"]
    table = Table("t", "t", ("name",), rows=tuple((Cell(text),) for text in hostile))
    import csv
    import io

    cells = [row[0] for row in csv.reader(io.StringIO(to_csv(table)))][1:]
    assert cells[:3] == ["'" + text for text in hostile[:3]]  # shown as text, never run as a formula
    assert cells[-1] == "-0.05"  # a number stays a number
    md = to_markdown(table)
    assert "<script>" not in md
    assert "&lt;script&gt;" in md
    assert "a\\|b c" in md


def test_an_empty_paired_table_says_why() -> None:
    rows = [record("react", t, T=2, fed=3, success=1, model=m) for t in ("t1", "t2") for m in ("a", "b")]
    t = paired_differences(summary_of(rows))
    assert t.rows == ()
    assert "--pair A:B" in t.note
    assert "leaderboard" in t.note
