"""``prefix-exec demo`` end to end (a short run), and its loud failure when calibration breaks."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from prefix_exec.cli import main
from prefix_exec.demo import mutations
from prefix_exec.trajectory import FailureLabel


def test_demo_runs_and_writes_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--out", str(tmp_path), "--tasks", "40", "--resamples", "200"]) == 0
    captured = capsys.readouterr()
    assert "Calibration: injected" in captured.out
    assert "every fault caught" in captured.out
    assert "Off the diagonal by design" in captured.out
    assert "invent_id" in captured.out
    assert "SYNTHETIC rollouts" in captured.err
    from prefix_exec.report.drawing import file_stem

    figure = file_stem("figure1", "synthetic-agents") + ".png"
    for name in (
        "report.html",
        "table2.md",
        "table2.tex",
        "table2.csv",
        figure,
        "ranking.png",
        "cost.md",
        "records.jsonl",
        "rollouts.jsonl",
        "calibration.txt",
    ):
        assert (tmp_path / name).is_file(), name
    assert "SYNTHETIC" in (tmp_path / "report.html").read_text()
    assert "SYNTHETIC" in (tmp_path / "table2.md").read_text()
    assert (tmp_path / "records.jsonl").read_text().count('"synthetic": true') == 120


def test_demo_fails_loudly_on_a_mislabel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claim that invented ids are caught as `information`: the BFCL scorer says `dependency`, so the
    # calibration must fail and the demo must exit 1 naming the rollouts.
    wrong = dataclasses.replace(mutations.BY_NAME["invent_id"])
    original = wrong.propose

    def propose(*args: object) -> mutations.Mutation | None:
        m = original(*args)  # type: ignore[arg-type]
        return None if m is None else dataclasses.replace(m, expected=FailureLabel.INFORMATION)

    monkeypatch.setitem(mutations.BY_NAME, "invent_id", dataclasses.replace(wrong, propose=propose))  # type: ignore[arg-type]
    assert main(["demo", "--out", str(tmp_path), "--tasks", "40", "--resamples", "100"]) == 1
    err = capsys.readouterr().err
    assert "CALIBRATION FAILED" in err
    assert "expected information" in err
    assert "got dependency" in err


def test_demo_rejects_a_nonpositive_task_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--tasks", "0"])
    assert exit_info.value.code == 2
    assert "must be >= 1" in capsys.readouterr().err


def test_demo_rejects_more_tasks_than_bfcl_has(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--tasks", "5000", "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert "--tasks 5000: BFCL's base category has 200 tasks" in err
    assert "Traceback" not in err
    assert not out.exists()  # refused before anything was written


def test_demo_out_that_is_a_file_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    assert main(["demo", "--out", str(afile), "--tasks", "2", "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert f"{afile}: --out must be a folder" in err
    assert "Traceback" not in err
    assert afile.read_text() == "keep me"


def test_demo_rejects_a_negative_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--out", str(tmp_path / "demo"), "--tasks", "2", "--seed", "-1"])
    assert exit_info.value.code == 2
    assert "must be >= 0, got -1" in capsys.readouterr().err
    assert not (tmp_path / "demo").exists()


def test_demo_out_refuses_a_run_directory_it_did_not_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text("{}\n")  # somebody's run directory: never replaced silently
    assert main(["demo", "--out", str(run), "--tasks", "2", "--resamples", "50"]) == 2
    assert "was not written by prefix-exec (it holds records.jsonl)" in capsys.readouterr().err
    assert (run / "records.jsonl").read_text() == "{}\n"
    ours = tmp_path / "demo"
    assert main(["demo", "--out", str(ours), "--tasks", "2", "--resamples", "50"]) == 0
    listed = [entry["name"] for entry in json.loads((ours / "files.json").read_text())]
    assert {"rollouts.jsonl", "records.jsonl", "calibration.txt", "report.html"} <= set(listed)
    assert main(["demo", "--out", str(ours), "--tasks", "2", "--resamples", "50"]) == 0  # its own: rewritten
