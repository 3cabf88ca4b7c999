"""``metrics`` and ``report`` count rollouts an infrastructure failure ended the same way as the score commands:
left out of PEC/FED/TER by default (said on stderr, in the JSON summary, in Table 2's note and the figures'
captions), or counted under their own label with --keep-infrastructure-failures, apart from the five labels;
records written before the rule (replay's label kept) are read by the same rule."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.records.codec import record_to_json
from prefix_exec.records.infrastructure import LABEL
from prefix_exec.report.rollouts import decode
from prefix_exec.trajectory import FailureLabel, PrefixRecord, ToolCall, Verdict

DIED = "the server closed its output (it exited)"


def record(task: str, *, fed: int, died: bool = False, old: bool = False) -> str:
    """A guard-like record of one call: executable (``fed`` 2) or refused (1); ``died``: the server failed;
    ``old``: written as before the rule, with replay's label."""
    call = ToolCall(name="echo", arguments={})
    verdicts = (Verdict.accept(),) if fed == 2 else (Verdict.reject(FailureLabel.PRECONDITION, "refused"),)
    metadata = {"infrastructure": DIED} if died else {}
    unit = PrefixRecord(
        "guard", task, "client", "proxy", 0, T=1, fed=fed, success=int(fed == 2), verdicts=verdicts,
        actions=(call,), metadata=metadata,
    )  # fmt: skip
    row = record_to_json(unit)
    if old:
        row["label"], row["reason"] = "precondition", "refused"
    return json.dumps(row)


@pytest.fixture(params=["new", "old"])
def records(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    path = tmp_path / "records.jsonl"
    died = record("t3", fed=1, died=True, old=request.param == "old")
    lines = [record("t1", fed=2), record("t2", fed=1), died, record("t4", fed=2), record("t5", fed=2, died=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def metrics(records: Path, tmp_path: Path, *extra: str) -> dict[str, Any]:
    out = tmp_path / f"m{len(extra)}.json"
    argv = ["metrics", str(records), "--format", "json", "--resamples", "200", *extra, "--out", str(out)]
    assert main(argv) == 0
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def test_metrics_leaves_them_out_unless_kept(records: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = metrics(records, tmp_path)
    (condition,) = doc["conditions"]
    assert (condition["N"], condition["TER"]["point"], condition["labels"]) == (3, pytest.approx(2 / 3), {
        "precondition": 1
    })  # fmt: skip
    assert doc["infrastructure"] == {
        "label": LABEL,
        "kept": False,
        "count": 2,
        "N_with": 5,
        "N_without": 3,
        "rollouts": ["guard/t3 (client, proxy, trial 0)", "guard/t5 (client, proxy, trial 0)"],
    }
    err = capsys.readouterr().err
    assert (
        "2 rollouts ended by an infrastructure failure (the system's, not the agent's) left out of PEC/FED/TER" in err
    )
    kept = metrics(records, tmp_path, "--keep-infrastructure-failures")
    (condition,) = kept["conditions"]
    # counted with their FED (t3 failed at 1, t5 ran through) and under their own label, never 'precondition'
    assert (condition["N"], condition["TER"]["point"]) == (5, pytest.approx(3 / 5))
    assert condition["labels"] == {"precondition": 1, LABEL: 2}
    assert kept["infrastructure"]["kept"] is True and kept["infrastructure"]["N_without"] == 3
    assert "kept under the label 'infrastructure' (--keep-infrastructure-failures): N = 5 with them" in (
        capsys.readouterr().err
    )


def test_metrics_markdown_says_it_in_table_2(records: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", str(records), "--resamples", "200"]) == 0
    text = capsys.readouterr().out
    assert "Here: 2 rollouts ended by an infrastructure failure (the system's, not the agent's) left out: N = 3" in text


def rollouts(page: str) -> list[list[Any]]:
    """The drill-down rows of a report page's one condition."""
    found = re.search(r'<script type="application/json" id="rollout-data">(.*?)</script>', page)
    assert found is not None
    (blob,) = json.loads(found.group(1)).values()
    return decode(blob)


def test_report_counts_them_apart(records: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert main(["report", str(records), "--no-plots", "--resamples", "200", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "2 rollouts ended by an infrastructure failure (the system's, not the agent's) left out of PEC/FED" in err
    assert "report on 3 rollouts" in err
    assert json.loads((out / "summary.json").read_text())["infrastructure"]["N_with"] == 5
    assert LABEL not in (out / "labels.csv").read_text()
    assert "left out: N = 3 without them, 5 with them." in (out / "report.md").read_text()

    kept = tmp_path / "kept"
    argv = ["report", str(records), "--no-plots", "--resamples", "200", "--keep-infrastructure-failures"]
    assert main([*argv, "--out", str(kept)]) == 0
    assert "report on 5 rollouts" in capsys.readouterr().err
    header, row = (kept / "labels.csv").read_text().splitlines()[:2]
    counts = dict(zip(header.split(","), row.split(","), strict=True))
    # each rollout once: one agent failure, two the system's (one of them ran through), two executable
    assert (counts["precondition"], counts[LABEL], counts["executable"], counts["N"]) == ("1", "2", "2", "5")
    page = (kept / "report.html").read_text()
    assert "ended by an infrastructure failure (the system&#x27;s, not the agent&#x27;s) (2)" in page
    assert "counted under the label &#x27;infrastructure&#x27;" in page  # the page's subtitle says it
    reason = f"infrastructure failure (the system's, not the agent's): {DIED}"
    shown = {row[0]: (row[4], row[6], row[8][0][3]) for row in rollouts(page)}
    # the drill-down: the rollout and its failing call under the system's label, replay's cause kept as a note
    assert shown["t3"] == (LABEL, reason, [0, LABEL, "", "what replay saw (precondition, not counted): refused"])
    assert shown["t5"] == (LABEL, reason, [1, ""])
    assert shown["t2"] == ("precondition", "refused", [0, "precondition", "precondition", "refused"])


def test_report_refuses_when_nothing_is_the_agents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(record("t1", fed=1, died=True) + "\n", encoding="utf-8")
    assert main(["report", str(path), "--no-plots", "--out", str(tmp_path / "r")]) == 2
    assert "every record is an infrastructure failure" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    assert main(["metrics", str(path)]) == 2
