"""``score tau`` refuses a results file of another domain (its tools are not the domain's), one file at a time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main

MEDICAL = Path(__file__).resolve().parents[1] / "data" / "tau-medical" / "medical_bare-list.json"


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def airline_file(shared_data: Path, tmp_path: Path) -> Path:
    """The real gpt-4.1 airline file cut to its first two simulations."""
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text(encoding="utf-8"))
    data["simulations"] = data["simulations"][:2]
    path = tmp_path / "airline.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_file_of_another_domain_is_refused_and_skipped_under_keep_going(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    medical = MEDICAL
    good = airline_file(shared_data, tmp_path)
    out = tmp_path / "o.jsonl"
    assert main(["score", "tau", str(medical), "--domain", "airline", "--model", "m", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "medical_bare-list.json: the file's tools are not airline's: 7 of its 8 tool names are unknown" in err
    assert "get_patient_record" in err and not out.exists()
    command = ["score", "tau", str(medical), str(good), "--domain", "airline", "--model", "m", "--keep-going"]
    assert main([*command, "--out", str(out)]) == 2
    assert len(records(out)) == 2
    err = capsys.readouterr().err
    assert f"prefix-exec: skipped {medical}: {medical}: the file's tools are not airline's" in err
    assert "1 could not be scored" in err


def test_an_airline_file_with_two_invented_tools_is_scored_with_a_note(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = airline_file(shared_data, tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    renamed = 0
    for simulation in data["simulations"]:
        for message in simulation["messages"]:
            for call in message.get("tool_calls") or ():
                if call["name"] == "get_user_details":
                    call["name"], renamed = "lookup_customer", renamed + 1
    assert renamed
    path.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "o.jsonl"
    assert main(["score", "tau", str(path), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "airline.json: note: 1 of its" in err and "(lookup_customer): calls of them are schema failures" in err
    assert any(r["label"] == "schema" for r in records(out))
