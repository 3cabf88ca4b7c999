"""Records whose final success Y is not recorded (``success`` None) in the report's tables and in
``prefix-exec report``: success, RR and what derives from them show ``n/a`` with how many records lack Y, never
0.00; tables over records that all carry Y are unchanged (the goldens of test_report_tables.py)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from report_records import TASKS, record

from prefix_exec.analysis.summary import Summary, summarize
from prefix_exec.cli import main
from prefix_exec.report.cells import Table
from prefix_exec.report.formats import to_csv, to_latex, to_markdown
from prefix_exec.report.inputs import metric_rows
from prefix_exec.report.layout import Anchors, leaderboard_blocks
from prefix_exec.report.leaderboard import leaderboard
from prefix_exec.report.metric_tables import ABSENT_NOTE, decomposition, table2
from prefix_exec.report.paired import paired_differences
from prefix_exec.report.ranking import NOT_RECORDED, ranking, ranking_agreement
from prefix_exec.trajectory import FailureLabel, PrefixRecord

ROOT = Path(__file__).resolve().parents[2]


def mixed() -> list[PrefixRecord]:
    """Block (bfcl_demo, m1): react executable and successful everywhere; plan-conditioned the same, with Y
    recorded on t3 and t4 only; dual-loop fails at step 2 everywhere, Y recorded nowhere. Block m2: react fails
    at step 1, unsuccessful everywhere."""
    rows = []
    for i, t in enumerate(TASKS):
        rows.append(record("react", t, T=4, fed=5, success=1))
        rows.append(record("plan-conditioned", t, T=4, fed=5, success=1 if i >= 2 else None))  # type: ignore[arg-type]
        rows.append(record("dual-loop", t, T=4, fed=2, success=None, label=FailureLabel.SCHEMA))  # type: ignore[arg-type]
        rows.append(record("react", t, T=2, fed=1, success=0, model="m2", label=FailureLabel.PRECONDITION))
    return rows


def summary() -> Summary:
    return summarize(metric_rows(mixed()), resamples=200, seed=0)


def cells(table: Table) -> dict[tuple[str, str], list[str]]:
    """Each row's texts after (model, method), keyed by (model, method)."""
    return {(row[1].text, row[2].text): [c.text for c in row[3:]] for row in table.rows}


def test_table2_shows_absent_y_as_na_with_the_count_never_zero() -> None:
    s = summary()
    table = table2(s, Anchors.of(s))
    found = cells(table)
    # N, TER, mean FED, AUC-PEC, RR-Eligible, RR, success
    assert found[("m1", "dual-loop")] == [
        "4",
        "0.00 [0.00, 0.00]",
        "2.00 [2.00, 2.00]",
        "0.25 [0.25, 0.25]",
        "4",
        "n/a (not recorded for 4 of 4)",
        "n/a (not recorded for 4 of 4)",
    ]
    assert found[("m1", "plan-conditioned")][5:] == ["undefined", "1.00 [1.00, 1.00] (not recorded for 2 of 4)"]
    assert found[("m1", "react")][5:] == ["undefined", "1.00 [1.00, 1.00]"]
    assert ABSENT_NOTE in table.note
    bold = {(row[1].text, row[2].text): row[-1].bold for row in table.rows}
    assert bold[("m1", "react")] and bold[("m1", "plan-conditioned")] and not bold[("m1", "dual-loop")]
    rows = list(csv.DictReader(io.StringIO(to_csv(table))))
    dual = next(r for r in rows if r["method"] == "dual-loop")
    assert (dual["success"], dual["success_low"], dual["RR"], dual["RR_eligible"]) == ("", "", "", "4")
    assert "n/a (not recorded for 4 of 4)" in to_markdown(table) and "n/a (not recorded for 4 of 4)" in to_latex(table)


def test_all_known_y_adds_no_note() -> None:
    known = [r for r in mixed() if r.method == "react"]
    s = summarize(metric_rows(known), resamples=50, seed=0)
    assert ABSENT_NOTE not in table2(s).note


def test_decomposition_is_over_the_records_with_y_and_na_without_any() -> None:
    s = summary()
    found = cells(decomposition(s, Anchors.of(s)))
    assert found[("m1", "dual-loop")] == ["n/a"] * 5 + ["n/a (Y not recorded)"]
    # plan-conditioned over t3, t4: q = 1, s = 1, r undefined, success 1, no success after an invalid prefix
    assert found[("m1", "plan-conditioned")] == ["1.00", "1.00", "undefined", "1.00", "1.00", "0.0% (0/2)"]


def test_ranking_has_no_outcome_rank_where_y_is_absent() -> None:
    s = summary()
    found = cells(ranking(s, Anchors.of(s)))
    # success, outcome rank, AUC-PEC, prefix rank, TER, TER rank, rank shift
    assert found[("m1", "dual-loop")] == ["n/a", "n/a", "0.25", "3", "0.00", "3", "n/a"]
    assert found[("m1", "react")][:2] == ["1.00", "1"]
    agreement = {row[1].text: [c.text for c in row[2:]] for row in ranking_agreement(s).rows}
    assert agreement["m1"][-3:] == ["n/a (final success not recorded)"] * 2 + [NOT_RECORDED]
    assert agreement["m1"][0] == "react, plan-conditioned"  # the leaders among the conditions with Y


def test_paired_success_differences_are_na_where_a_side_has_no_y() -> None:
    s = summary()
    table = paired_differences(s)
    found = {(row[1].text, row[2].text): row[-1].text for row in table.rows}  # Δsuccess
    assert found[("m1/dual-loop", "m1/react")] == "n/a (Y not recorded)"
    assert found[("m1/dual-loop", "m1/plan-conditioned")] == "n/a (Y not recorded)"
    assert found[("m1/plan-conditioned", "m1/react")] == "0.00 [0.00, 0.00]"  # over plan's recorded t3, t4


def test_the_leaderboard_puts_conditions_without_y_last() -> None:
    s = summary()
    [block] = leaderboard_blocks(s)
    assert [(c.model, c.method) for c in block.rows] == [
        ("m1", "react"),
        ("m1", "plan-conditioned"),
        ("m2", "react"),
        ("m1", "dual-loop"),
    ]
    assert ABSENT_NOTE in leaderboard(s).note


def test_report_on_traces_scored_without_y(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real fixture scored twice, with and without --success-field (two methods): the report writes every
    table and figure, says on stderr how many records lack Y, and shows them as n/a."""
    traces = ROOT / "tests" / "data" / "traces" / "agents-sdk.jsonl"
    tools = ROOT / "examples" / "transcripts" / "tools.json"
    base = ["score", "traces", str(traces), "--tools", str(tools), "--workers", "1"]
    assert main([*base, "--method", "without-y", "--out", str(tmp_path / "a.jsonl")]) == 0
    given = ["--success-field", "metadata.success", "--method", "with-y"]
    assert main([*base, *given, "--out", str(tmp_path / "b.jsonl")]) == 0
    capsys.readouterr()
    out = tmp_path / "report"
    argv = ["report", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--out", str(out)]
    assert main([*argv, "--resamples", "50", "--format", "md,csv"]) == 0
    assert "success: not recorded for 7 of 14 records" in capsys.readouterr().err
    table = (out / "table2.md").read_text()
    assert "n/a (not recorded for 7 of 7)" in table and ABSENT_NOTE in table
    doc = json.loads((out / "summary.json").read_text())
    by_method = {c["method"]: c for c in doc["conditions"]}
    assert by_method["without-y"]["success"] is None and by_method["without-y"]["success_known"] == 0
    assert by_method["with-y"]["success"]["point"] == pytest.approx(4 / 7)
    assert by_method["without-y"]["TER"] == by_method["with-y"]["TER"]
    page = (out / "report.html").read_text()
    assert "n/a (not recorded for 7 of 7)" in page and NOT_RECORDED in page  # Table 2, the ranking's verdict
    written = {entry["name"] for entry in json.loads((out / "files.json").read_text())}
    assert any(name.startswith("figure1-") for name in written)  # PEC needs no Y
    assert not any(n.startswith("ranking") and n.endswith((".png", ".svg")) for n in written)  # no outcome rank
