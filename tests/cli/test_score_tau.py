"""``prefix-exec score tau`` end to end on the real gpt-4.1 airline and retail results files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.records.codec import read_records


def files(shared_data: Path) -> list[str]:
    return [f for _, f in domain_files(shared_data)]


def domain_files(shared_data: Path) -> list[tuple[str, str]]:
    return [(d, str(shared_data / "tau" / f"gpt-4.1_{d}_1trial.json")) for d in ("airline", "retail")]


def test_score_tau_writes_one_record_per_simulation(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tau.jsonl"
    assert main(["score", "tau", *files(shared_data), "--out", str(out), "--method", "ReAct"]) == 0
    records = list(read_records(out))
    assert len(records) == 60
    assert {r.dataset for r in records} == {"tau3"}  # one pooled dataset, as in the paper
    assert Counter(r.metadata["domain"] for r in records) == Counter({"airline": 20, "retail": 40})
    assert {(r.model, r.method) for r in records} == {("gpt-4.1", "ReAct")}
    assert sum(r.success for r in records) == 10 + 34  # the recorded rewards of 1.0
    assert json.loads((tmp_path / "tau.jsonl.consistency.json").read_text()) == []
    err = capsys.readouterr().err
    assert "20/50 of the paper's tasks" in err
    assert "40/114 of the paper's tasks" in err
    assert "agrees with every recorded error flag" in err

    # --resume keeps what is there and scores nothing twice
    assert main(["score", "tau", *files(shared_data), "--out", str(out), "--method", "ReAct", "--resume"]) == 0
    assert len(list(read_records(out))) == 60

    # metrics: the pooled tau3 condition is the main row, over the distinct domain-qualified tasks
    ids = {
        d: [str(s["task_id"]) for s in json.loads(Path(f).read_text())["simulations"]]
        for d, f in domain_files(shared_data)
    }
    colliding = set(ids["airline"]) & set(ids["retail"])
    assert colliding == {"18", "26", "32", "45"}  # bare ids would merge these four pairs of tasks
    summary = tmp_path / "summary.json"
    assert main(["metrics", str(out), "--format", "json", "--resamples", "200", "--out", str(summary)]) == 0
    doc = json.loads(summary.read_text())
    (pooled,) = doc["conditions"]
    assert pooled["dataset"] == "tau3"
    assert pooled["N"] == len(ids["airline"]) + len(ids["retail"]) == 60
    assert pooled["n_tasks"] == len({(d, t) for d, ts in ids.items() for t in ts}) == 60
    assert len(set(ids["airline"]) | set(ids["retail"])) == 56  # what a merge of the bare ids would give
    assert pooled["success"]["point"] == pytest.approx(44 / 60)
    # the per-domain rows are an extra view, each with its own bootstrap
    domains = {c["dataset"]: c for c in doc["per_domain"]}
    assert {d: (c["N"], c["n_tasks"]) for d, c in domains.items()} == {
        "tau3-airline": (20, 20),
        "tau3-retail": (40, 40),
    }
    assert domains["tau3-airline"]["success"]["point"] == pytest.approx(10 / 20)
    assert domains["tau3-retail"]["success"]["point"] == pytest.approx(34 / 40)


def test_score_tau_reports_disagreements(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file whose recorded error flag contradicts the environment shows up in the consistency report."""
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text())
    simulation = next(s for s in data["simulations"] if s["task_id"] == "25")
    tool = next(m for m in simulation["messages"] if m["role"] == "tool" and m["error"])
    tool["error"] = False  # pretend the failing booking had been accepted
    data["simulations"] = [simulation]
    path = tmp_path / "skewed.json"
    path.write_text(json.dumps(data))
    consistency = tmp_path / "c.json"
    out = tmp_path / "r.jsonl"
    assert main(["score", "tau", str(path), "--out", str(out), "--consistency", str(consistency)]) == 0
    (entry,) = json.loads(consistency.read_text())
    assert (entry["task_id"], entry["depth"], entry["kind"]) == ("airline/25", 5, "env-skew")
    assert (entry["recorded_error"], entry["replay_accepted"], entry["replay_label"]) == (False, False, "precondition")
    assert "1 disagreement(s)" in capsys.readouterr().err


def _skewed(shared_data: Path, tmp_path: Path) -> Path:
    """Airline task 25 and 13, with task 25's failing booking recorded as accepted (one env-skew entry)."""
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text())
    simulations = [s for s in data["simulations"] if s["task_id"] in ("25", "13")]
    skewed = next(s for s in simulations if s["task_id"] == "25")
    tool = next(m for m in skewed["messages"] if m["role"] == "tool" and m["error"])
    tool["error"] = False
    data["simulations"] = simulations
    path = tmp_path / "skewed.json"
    path.write_text(json.dumps(data))
    return path


def test_resume_keeps_the_disagreements_of_kept_records(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _skewed(shared_data, tmp_path)
    out, consistency = tmp_path / "r.jsonl", tmp_path / "c.json"
    command = ["score", "tau", str(path), "--out", str(out), "--consistency", str(consistency)]
    assert main(command) == 0
    first = json.loads(consistency.read_text())
    assert [e["task_id"] for e in first] == ["airline/25"]
    capsys.readouterr()

    # nothing left to score: the kept records are compared again, not forgotten
    assert main([*command, "--resume"]) == 0
    assert json.loads(consistency.read_text()) == first
    err = capsys.readouterr().err
    assert "1 disagreement(s)" in err
    assert "agrees" not in err

    # one record missing (a killed run): the report covers the kept record and the newly scored one
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(line for line in lines if '"task_id": "airline/25"' not in line))
    assert main([*command, "--resume"]) == 0
    assert json.loads(consistency.read_text()) == first
    assert len(list(read_records(out))) == 2


def test_nothing_compared_is_not_agreement(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text())
    data["simulations"] = data["simulations"][:1]
    for message in data["simulations"][0]["messages"]:
        message.pop("error", None)  # a writer that records no error flags
    path = tmp_path / "noflags.json"
    path.write_text(json.dumps(data))
    assert main(["score", "tau", str(path), "--out", str(tmp_path / "r.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "no call with a recorded error flag to compare" in err
    assert "agrees" not in err


def test_score_tau_regrade(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text())
    data["simulations"] = data["simulations"][:3]
    data["simulations"][0]["reward_info"]["db_check"]["db_match"] = False  # was True
    path = tmp_path / "three.json"
    path.write_text(json.dumps(data))
    assert main(["score", "tau", str(path), "--out", str(tmp_path / "r.jsonl"), "--regrade"]) == 0
    err = capsys.readouterr().err
    assert "regrade: 2/3 recorded DB checks reproduced" in err
    assert "recorded db_match=False, recomputed db_match=True" in err


def _two(shared_data: Path, tmp_path: Path, break_second: Any) -> Path:
    """The first two airline simulations, the second one broken by ``break_second(data, simulation)``."""
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text())
    data["simulations"] = data["simulations"][:2]
    break_second(data, data["simulations"][1])
    path = tmp_path / "two.json"
    path.write_text(json.dumps(data))
    return path


def _first_calls(simulation: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in simulation["messages"] if m["role"] == "assistant" and m.get("tool_calls"))


BREAKS: dict[str, Any] = {
    "messages": lambda data, sim: sim.update(messages=["hello", 3]),
    "tool_calls": lambda data, sim: _first_calls(sim).update(tool_calls="zzz"),
    "initial_state": lambda data, sim: next(t for t in data["tasks"] if t["id"] == sim["task_id"]).update(
        initial_state="bad"
    ),
    "unknown task": lambda data, sim: sim.update(task_id="9999"),
}


@pytest.mark.parametrize("broken", BREAKS)
def test_a_malformed_simulation_is_exit_2_and_skipped_with_keep_going(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    path = _two(shared_data, tmp_path, BREAKS[broken])
    out = tmp_path / "r.jsonl"
    assert main(["score", "tau", str(path), "--out", str(out), "--regrade"]) == 2
    err = capsys.readouterr().err
    assert "prefix-exec: error:" in err
    assert "Traceback" not in err

    assert main(["score", "tau", str(path), "--out", str(out), "--overwrite", "--regrade", "--keep-going"]) == 2
    err = capsys.readouterr().err
    assert len(list(read_records(out))) == 1
    assert "prefix-exec: skipped" in err
    assert "regrade: 1/1 recorded DB checks reproduced" in err  # the skipped simulation is not regraded


def test_regrade_does_not_count_a_missing_db_check_as_reproduced(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _two(shared_data, tmp_path, lambda data, sim: sim["reward_info"].pop("db_check"))
    assert main(["score", "tau", str(path), "--out", str(tmp_path / "r.jsonl"), "--regrade"]) == 0
    err = capsys.readouterr().err
    assert "regrade: 1/1 recorded DB checks reproduced; 1 simulation(s) record no db_check, not compared" in err


def test_score_tau_bad_input_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.json"
    path.write_text(
        json.dumps(
            {
                "info": {"environment_info": {"domain_name": "telecom"}, "agent_info": {"llm": "m"}},
                "tasks": [],
                "simulations": [],
            }
        )
    )
    assert main(["score", "tau", str(path), "--out", str(tmp_path / "r.jsonl")]) == 2
    assert "not supported" in capsys.readouterr().err


def test_keep_going_skips_an_unreadable_file(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    out = tmp_path / "r.jsonl"
    airline = files(shared_data)[0]
    assert main(["score", "tau", str(broken), airline, "--out", str(out), "--keep-going"]) == 2
    assert len(list(read_records(out))) == 20
    assert "skipped" in capsys.readouterr().err


def test_keep_going_skips_a_file_of_a_domain_replay_does_not_model(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    airline = files(shared_data)[0]
    data = json.loads(Path(airline).read_text(encoding="utf-8"))
    data["info"]["environment_info"]["domain_name"] = "telecom"
    telecom = tmp_path / "telecom.json"
    telecom.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    assert main(["score", "tau", str(telecom), airline, "--out", str(out), "--keep-going", "--regrade"]) == 2
    assert len(list(read_records(out))) == 20  # the airline file's simulations, all scored
    err = capsys.readouterr().err
    assert f"skipped {telecom}: tau domain 'telecom' is not supported" in err
    assert "regrade: 20/20 recorded DB checks reproduced" in err
    assert main(["score", "tau", str(telecom), airline, "--out", str(tmp_path / "strict.jsonl")]) == 2
    assert not (tmp_path / "strict.jsonl").exists()  # without --keep-going the batch stops before writing


def test_the_command_freezes_what_it_loaded_and_main_does_not(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The prefix-exec command's own process freezes what it loaded before scoring (tau2, the domains, the
    files), so full collections no longer walk it; main() in a caller's process leaves the collector alone."""
    import gc

    from prefix_exec.cli import common

    frozen: list[int] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(1))
    args = ["score", "tau", files(shared_data)[0], "--out", str(tmp_path / "a.jsonl")]
    assert main(args) == 0 and frozen == []
    monkeypatch.setattr(common, "COMMAND_PROCESS", True)
    assert main([*args[:-1], str(tmp_path / "b.jsonl")]) == 0 and frozen == [1]
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
