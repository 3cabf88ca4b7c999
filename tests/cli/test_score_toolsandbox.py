"""``prefix-exec score toolsandbox`` end to end on the shared ToolSandbox run folders."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from prefix_exec.cli import main


def _records(path: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {row["task_id"]: row for row in rows}


def test_scores_a_run_folder(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "records.jsonl"
    run = shared_data / "toolsandbox/run_public"
    assert main(["score", "toolsandbox", str(run), "--out", str(out), "--model", "scripted", "--method", "react"]) == 0
    rows = _records(out)
    assert len(rows) == 20
    assert {(row["dataset"], row["model"], row["method"]) for row in rows.values()} == {
        ("toolsandbox", "scripted", "react")
    }
    labels = Counter(row["label"] for row in rows.values())
    assert labels == Counter(
        {None: 6, "schema": 5, "precondition": 4, "dependency": 2, "information": 2, "state_consistency": 1}
    )
    wifi = rows["find_days_till_holiday_wifi_off"]
    assert (wifi["T"], wifi["fed"], wifi["success"]) == (5, 2, 0)
    assert wifi["reason"] == "ConnectionError: Wifi is not enabled [setting off]"
    assert wifi["metadata"]["similarity"] == 0.8


def test_environment_faults_are_counted_or_skipped(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "records.jsonl"
    folder = str(shared_data / "toolsandbox/insufficient")
    assert main(["score", "toolsandbox", folder, "--success-if-unknown", "0", "--out", str(out)]) == 0
    assert "1 scored rollouts hit an environment fault" in capsys.readouterr().err
    row = _records(out)["find_current_city_insufficient_information"]
    assert row["label"] == "information"
    assert row["metadata"]["environment_faults"][0]["depth"] == 1
    code = main(
        [
            "score",
            "toolsandbox",
            folder,
            "--success-if-unknown",
            "0",
            "--environment-faults",
            "skip",
            "--keep-going",
            "--overwrite",
            "--out",
            str(out),
        ]
    )
    assert code == 2
    # --overwrite replaced the first run's records with a new, empty file; the run wrote no record, so that
    # empty file is removed (scoring._drop_if_empty; an empty file the user had made before is kept)
    assert not out.exists()
    assert "environment fault, not the agent's" in capsys.readouterr().err


def test_scenario_list_and_unscorable_folders(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = tmp_path / "chosen.txt"
    chosen.write_text("get_wifi\ncellular_off\n")
    out = tmp_path / "records.jsonl"
    run = str(shared_data / "toolsandbox/run_public")
    assert main(["score", "toolsandbox", run, "--scenarios", str(chosen), "--out", str(out)]) == 0
    assert sorted(_records(out)) == ["cellular_off", "get_wifi"]
    # an abort without a summary cannot be explained: exit 2 with the reason, never a traceback
    unknown = str(shared_data / "toolsandbox/unknown_tool")
    assert main(["score", "toolsandbox", unknown, "--overwrite", "--out", str(out)]) == 2
    assert "aborted" in capsys.readouterr().err


def test_resume_keeps_finished_records(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "records.jsonl"
    run = str(shared_data / "toolsandbox/run_public")
    assert main(["score", "toolsandbox", run, "--out", str(out)]) == 0
    first = out.read_text()
    assert main(["score", "toolsandbox", run, "--out", str(out), "--resume"]) == 0
    assert out.read_text() == first
    assert len(first.splitlines()) == 20
