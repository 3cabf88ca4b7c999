"""The report's plans table (report/plans.py): where dual-loop's plans went before the executor, on the recorded
real-model run (tests/data/real-model), whose every plan was refused by the structure check."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from prefix_exec.cli import main
from prefix_exec.records.codec import read_records
from prefix_exec.report.build import Options, write_report

REAL = Path(__file__).parents[1] / "data" / "real-model" / "records.jsonl"


def test_the_report_says_the_verifier_never_ran(tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert main(["report", str(REAL), "--no-plots", "--resamples", "100", "--out", str(out)]) == 0
    table = list(csv.DictReader(io.StringIO((out / "plans.csv").read_text(encoding="utf-8"))))
    found = [
        (r["dataset"], r["method"], r["task"], r["turns"], r["plans"], r["structure_refused"], r["verifier_refused"])
        for r in table
    ]
    # by hand from records.jsonl: plans 2 a turn (k_val 2), plan_parse_errors equal to plans, no verifier call
    assert found == [
        ("bfcl", "dual-loop", "multi_turn_base_100", "2", "4", "4", "0"),
        ("ticketing", "dual-loop", "close-printer", "1", "2", "2", "0"),
        ("ticketing", "dual-loop", "new-laptop", "1", "2", "2", "0"),
        ("ticketing", "dual-loop", "all", "2", "4", "4", "0"),
    ]
    assert {r["outcome"] for r in table} == {"every plan refused by the structure check: the verifier never ran"}
    assert {r["accepted"] for r in table} == {"0"}
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "### Plans before the executor" in md
    page = (out / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="plans">Plans before the executor</h2>' in page
    assert "plans.csv" in {f["name"] for f in json.loads((out / "files.json").read_text())}


def test_a_report_of_methods_that_plan_nothing_has_no_plans_table(tmp_path: Path) -> None:
    react = [r for r in read_records(REAL) if r.method == "react"]
    report = write_report(react, tmp_path / "report", Options(resamples=100, plots=False))
    assert "plans" not in {t.name for t in report.tables}
    assert not (tmp_path / "report" / "plans.md").exists()


@pytest.mark.parametrize("trials", [1, 3])
def test_trials_of_a_task_are_summed(tmp_path: Path, trials: int) -> None:
    from dataclasses import replace

    dual = [r for r in read_records(REAL) if r.method == "dual-loop" and r.dataset == "bfcl"]
    records = [replace(r, trial=t) for r in dual for t in range(trials)]
    report = write_report(records, tmp_path / "report", Options(resamples=100, plots=False))
    (table,) = [t for t in report.tables if t.name == "plans"]
    (row,) = table.rows
    assert [c.text for c in row[4:8]] == [str(2 * trials), str(4 * trials), str(4 * trials), "0"]
