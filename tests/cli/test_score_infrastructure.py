"""Infrastructure failures in the score commands (issue 43): BFCL's inference crashes, tau2's infrastructure_error and
an AgentDojo run that the model server ended are the system's, so every score command leaves them out of the records
by default (counted and listed, the same words everywhere), or writes them under the label 'infrastructure' with
--keep-infrastructure-failures, whatever the number of workers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.records.infrastructure import LABEL
from prefix_exec.scoring.pool import dispatch as pool_dispatch

#: What BFCL writes for an entry whose inference crashed (the text of a vLLM 500, as BFCL v4 logs it).
CRASH = "Error during inference: Error code: 500 - {'object': 'error', 'message': 'Internal Server Error'}"
AGENTDOJO = Path(__file__).resolve().parents[1] / "data" / "agentdojo"


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def crashed_file(shared_data: Path, tmp_path: Path) -> Path:
    """glyphh's miss_func results with three entries' results replaced by inference crashes."""
    pytest.importorskip("bfcl_eval")
    source = shared_data / "bfcl" / "glyphh-ada-1.1" / "BFCL_v4_multi_turn_miss_func_result.json"
    lines = source.read_text(encoding="utf-8").splitlines()[:6]
    changed = []
    for number, line in enumerate(lines):
        row = json.loads(line)
        if number in (1, 3, 4):
            row["result"] = CRASH
        changed.append(json.dumps(row))
    folder = tmp_path / "glyphh-ada-1.1"
    folder.mkdir()
    path = folder / source.name
    path.write_text("\n".join(changed) + "\n", encoding="utf-8")
    return path


def test_bfcl_inference_crashes_are_left_out_by_default(
    crashed_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.jsonl"
    assert main(["score", "bfcl", str(crashed_file), "--out", str(out)]) == 0  # not an error: the system's
    assert [r["task_id"] for r in rows(out)] == [f"multi_turn_miss_func_{i}" for i in (1, 3, 7)]
    err = capsys.readouterr().err
    assert "infrastructure: 3 rollouts ended by an infrastructure failure (the system's, not the agent's) left" in err
    assert "N = 3 without them, 6 with them" in err
    assert "bfcl/multi_turn_miss_func_0 (glyphh-ada-1.1, FC, trial 0), bfcl/multi_turn_miss_func_2 (" in err
    assert "scored 3 rollouts" in err and "3 ended by an infrastructure failure left out (listed above)" in err


@pytest.mark.parametrize("workers", ["1", "2"])
def test_bfcl_keeps_them_under_their_own_label(
    crashed_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    workers: str,
) -> None:
    """With 2 workers every rollout is replayed in a worker (its record comes back as a line): the same records."""
    monkeypatch.setattr(pool_dispatch, "REPLAY_HERE", False)
    kept = tmp_path / "k.jsonl"
    argv = ["score", "bfcl", str(crashed_file), "--out", str(kept), "--keep-infrastructure-failures"]
    assert main([*argv, "--workers", workers]) == 0
    err = capsys.readouterr().err
    assert "3 rollouts ended by an infrastructure failure (the system's, not the agent's) kept under the label" in err
    assert "N = 6 with them, 3 without them" in err
    if workers == "2":
        left = tmp_path / "left.jsonl"
        assert main(["score", "bfcl", str(crashed_file), "--out", str(left), "--workers", workers]) == 0
        assert len(rows(left)) == 3
        assert "3 rollouts ended by an infrastructure failure" in capsys.readouterr().err
    records = rows(kept)
    assert len(records) == 6
    crashed = [r for r in records if "infrastructure" in r.get("metadata", {})]
    assert [r["task_id"] for r in crashed] == [f"multi_turn_miss_func_{i}" for i in (0, 2, 4)]
    for record in crashed:  # the replay is as before (FED 1: no call); the label is the system's, not the agent's
        assert record["fed"] == 1 and record["metadata"]["infrastructure"] == CRASH
        assert record["label"] == LABEL and record["reason"].endswith(CRASH)
        assert record["verdicts"][0]["label"] == "precondition"  # what the check said of the missing call
    assert all(r["label"] != LABEL for r in records if r not in crashed)


def test_a_tau2_simulation_ended_by_infrastructure_is_left_out(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("tau2")
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text(encoding="utf-8"))
    data["simulations"] = data["simulations"][:3]
    data["simulations"][1]["termination_reason"] = "infrastructure_error"
    ended = data["simulations"][1]["task_id"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    assert main(["score", "tau", str(path), "--out", str(out)]) == 0
    assert len(rows(out)) == 2
    err = capsys.readouterr().err
    assert "infrastructure: 1 rollout ended by an infrastructure failure" in err
    assert f"tau3/airline/{ended} (gpt-4.1, " in err
    kept = tmp_path / "k.jsonl"
    assert main(["score", "tau", str(path), "--out", str(kept), "--keep-infrastructure-failures"]) == 0
    marked = [r for r in rows(kept) if "infrastructure" in r["metadata"]]
    assert [(r["task_id"], r["label"]) for r in marked] == [(f"airline/{ended}", LABEL)]


def test_an_agentdojo_run_the_model_server_ended(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """AgentDojo writes the pipeline's exception as the run's ``error``: a 500 from the model server is the
    system's, and score transcripts treats it as score bfcl treats BFCL's crash."""
    lines = (AGENTDOJO / "invariant-shape.jsonl").read_text(encoding="utf-8").splitlines()
    conversation = json.loads(lines[1])
    conversation["error"] = "InternalServerError: Error code: 500 - {'message': 'upstream overloaded'}"
    log = tmp_path / "runs.jsonl"
    log.write_text("\n".join([lines[0], json.dumps(conversation), *lines[2:]]) + "\n", encoding="utf-8")
    tools = str(AGENTDOJO / "tools.json")
    identity = ["--task-id-field", "metadata.suite_name,metadata.name", "--success-field", "metadata.success"]
    out = tmp_path / "o.jsonl"
    assert main(["score", "transcripts", str(log), "--tools", tools, *identity, "--out", str(out)]) == 0
    assert [r["task_id"] for r in rows(out)] == [
        "workspace/user_task_3[without attack]",
        "workspace/user_task_7[without attack]",
        "banking/user_task_1[without attack]",
    ]
    err = capsys.readouterr().err
    assert "1 rollout ended by an infrastructure failure (the system's, not the agent's) left out" in err
    assert "slack/user_task_3[without attack] (gpt-4o-2024-05-13, " in err
    kept = tmp_path / "k.jsonl"
    argv = ["score", "transcripts", str(log), "--tools", tools, *identity, "--keep-infrastructure-failures"]
    assert main([*argv, "--out", str(kept)]) == 0
    labels = [(r["task_id"].split("/")[0], r["label"]) for r in rows(kept)]
    assert labels == [("slack", LABEL), ("workspace", "dependency"), ("workspace", "schema"), ("banking", None)]


@pytest.mark.parametrize("command", ["bfcl", "tau", "transcripts", "custom", "traces", "inspect", "toolsandbox"])
def test_every_score_command_has_the_option_with_one_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["score", command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--keep-infrastructure-failures count the rollouts an infrastructure failure ended" in text
