"""``metrics`` and ``report`` on tau records: the pooled tau3 condition is the main row, the per-domain rows an
extra view; records of the layout before pooling (tau3-airline / tau3-retail, bare ids) are refused (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_records import record

from prefix_exec.cli import main
from prefix_exec.records.codec import record_to_json

# (domain, task, fed, success) with T = 2: the domains share the ids 18 (as the real files do) and differ in 19/26
ROLLOUTS = [("airline", "18", 3, 1), ("airline", "19", 1, 0), ("retail", "18", 3, 1), ("retail", "26", 3, 0)]


def _write(path: Path, *, old: bool) -> Path:
    rows = []
    for domain, task, fed, success in ROLLOUTS:
        if old:  # as 'score tau' wrote them before tau3 was pooled
            rec = record("react", task, T=2, fed=fed, success=success, dataset=f"tau3-{domain}")
        else:
            rec = record("react", f"{domain}/{task}", T=2, fed=fed, success=success, dataset="tau3")
            rec = type(rec)(**{**rec.__dict__, "metadata": {"domain": domain}})
        rows.append(json.dumps(record_to_json(rec)) + "\n")
    path.write_text("".join(rows), encoding="utf-8")
    return path


def test_metrics_print_the_pooled_row_then_the_per_domain_view(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "r.jsonl", old=False)
    assert main(["metrics", str(path), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    pooled, _, view = out.partition("Table 2 per domain")
    assert view, out
    # 4 rollouts on 4 tasks: airline/18 and retail/18 are two tasks; 3 of 4 fully executable
    assert "| tau3 | m1 | react | 4 | 0.75 [" in pooled
    assert "tau3-airline" not in pooled
    assert "| tau3-airline | m1 | react | 2 | 0.50 [" in view
    assert "| tau3-retail | m1 | react | 2 | 1.00 [1.00, 1.00]" in view

    assert main(["metrics", str(path), "--resamples", "200", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(c["dataset"], c["N"], c["n_tasks"]) for c in doc["conditions"]] == [("tau3", 4, 4)]
    assert [(c["dataset"], c["N"]) for c in doc["per_domain"]] == [("tau3-airline", 2), ("tau3-retail", 2)]


def test_the_report_has_a_per_domain_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "r.jsonl", old=False)
    assert main(["report", str(path), "--out", str(tmp_path / "rep"), "--no-plots", "--resamples", "200"]) == 0
    table2 = (tmp_path / "rep" / "table2.md").read_text(encoding="utf-8")
    domains = (tmp_path / "rep" / "table2_domains.md").read_text(encoding="utf-8")
    assert "| tau3 | m1 | react | 4 |" in table2
    assert "tau3-retail" not in table2
    assert "| tau3-airline | m1 | react | 2 |" in domains
    assert "| tau3-retail | m1 | react | 2 |" in domains
    page = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert page.index('<h2 id="table2-domains">') > page.index('<h2 id="table2">')
    assert 'id="t-table2_domains"' in page
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text(encoding="utf-8"))
    assert [c["dataset"] for c in summary["per_domain"]] == ["tau3-airline", "tau3-retail"]


@pytest.mark.parametrize("command", ["metrics", "report"])
def test_records_of_the_layout_before_pooling_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = _write(tmp_path / "r.jsonl", old=True)
    extra = ["--out", str(tmp_path / "rep"), "--no-plots"] if command == "report" else []
    assert main([command, str(path), "--resamples", "200", *extra]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{path}:1: field 'dataset': 'tau3-airline' with the bare task id '18'" in err
    assert "prefix-exec 0.1.0 wrote before tau3 was pooled" in err
    assert "hint: re-score the source log with this version" in err
    assert "Traceback" not in err
