"""``metrics`` and ``report`` leave rollouts an infrastructure failure ended out of the tables by default, and
count them under their own label with --keep-infrastructure-failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefix_exec.analysis.infrastructure import LABEL, apply, marked
from prefix_exec.analysis.rows import read_metric_rows
from prefix_exec.cli import main
from prefix_exec.records.codec import record_to_json
from prefix_exec.trajectory import FailureLabel, PrefixRecord, ToolCall, Verdict

DIED = "the server closed its output (it exited)"


def record(task: str, *, fed: int, died: bool = False) -> str:
    call = ToolCall(name="echo", arguments={})
    verdicts = (Verdict.accept(),) if fed == 2 else (Verdict.reject(FailureLabel.PRECONDITION, "refused"),)
    metadata = {"infrastructure": DIED} if died else {}
    unit = PrefixRecord(
        "guard",
        task,
        "client",
        "proxy",
        trial=0,
        T=1,
        fed=fed,
        success=int(fed == 2),
        verdicts=verdicts,
        actions=(call,),
        metadata=metadata,
    )
    return json.dumps(record_to_json(unit))


@pytest.fixture
def records(tmp_path: Path) -> Path:
    path = tmp_path / "records.jsonl"
    lines = [record("t1", fed=2), record("t2", fed=1), record("t3", fed=1, died=True), record("t4", fed=2)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_marked_and_applied(records: Path) -> None:
    failures = marked([records])
    assert failures == {("guard", "t3", "client", "proxy", 0): DIED}
    rows = read_metric_rows([records])
    left = apply(rows, failures, keep=False)
    assert [r.task_id for r in left.rows] == ["t1", "t2", "t4"]
    assert left.note() is not None and "N = 3 without them, 4 with them" in str(left.note())
    kept = apply(rows, failures, keep=True)
    assert [(r.task_id, r.label) for r in kept.rows][2] == ("t3", LABEL)
    assert "kept under the label 'infrastructure'" in str(kept.note())
    assert apply(rows, {}, keep=False).note() is None


def test_metrics_leaves_them_out_unless_kept(records: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m.json"
    assert main(["metrics", str(records), "--format", "json", "--resamples", "200", "--out", str(out)]) == 0
    (condition,) = json.loads(out.read_text())["conditions"]
    assert condition["N"] == 3
    assert condition["TER"]["point"] == pytest.approx(2 / 3)
    err = capsys.readouterr().err
    assert "1 rollout ended by an infrastructure failure (the system's, not the agent's) left out" in err
    assert "guard/t3 (client, proxy, trial 0)" in err
    kept = tmp_path / "k.json"
    argv = ["metrics", str(records), "--format", "json", "--resamples", "200", "--keep-infrastructure-failures"]
    assert main([*argv, "--out", str(kept)]) == 0
    assert json.loads(kept.read_text())["conditions"][0]["N"] == 4


def test_report_leaves_them_out_too(records: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert main(["report", str(records), "--no-plots", "--resamples", "200", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1 rollouts ended by an infrastructure failure left out of PEC/FED/TER: N = 3 without them" in err
    assert "report on 3 rollouts" in err
