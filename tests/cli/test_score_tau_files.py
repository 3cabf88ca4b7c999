"""Real-world tau results files (issue 15): the forms public harnesses write, each built here from the gpt-4.1
fixtures; every file of ``../shared/data/tau/leaderboard`` is read in ``test_score_tau_leaderboard.py``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.records.codec import read_records


def _file(
    shared_data: Path, tmp_path: Path, change: Callable[[dict[str, Any]], Any], *, count: int = 2, bare: bool = False
) -> Path:
    """The first ``count`` gpt-4.1 airline simulations, changed in place by ``change``; ``bare``: only the list."""
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text(encoding="utf-8"))
    data["simulations"] = data["simulations"][:count]
    change(data)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data["simulations"] if bare else data), encoding="utf-8")
    return path


def _score(path: Path, tmp_path: Path, *extra: str) -> tuple[int, list[Any], list[dict[str, Any]]]:
    out = tmp_path / "r.jsonl"
    code = main(["score", "tau", str(path), "--out", str(out), "--overwrite", *extra])
    report = Path(f"{out}.consistency.json")
    consistency = json.loads(report.read_text(encoding="utf-8")) if report.exists() else []
    return code, list(read_records(out)) if out.exists() else [], consistency


def test_a_bare_list_of_simulations_is_read_with_domain_and_model(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(shared_data, tmp_path, lambda data: None, bare=True)
    assert main(["score", "tau", str(path), "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "does not say its domain" in err
    assert "--domain airline" in err
    assert "Traceback" not in err
    assert main(["score", "tau", str(path), "--domain", "airline", "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "--model" in capsys.readouterr().err  # a bare list names no agent model either
    code, records, _ = _score(path, tmp_path, "--domain", "airline", "--model", "m")
    assert code == 0
    assert len(records) == 2
    assert {r.model for r in records} == {"m"}
    assert {(r.dataset, r.metadata["domain"]) for r in records} == {("tau3", "airline")}
    assert all(r.task_id.startswith("airline/") for r in records)


def test_domain_over_a_file_that_names_one_is_decided_by_its_tools(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(shared_data, tmp_path, lambda data: None)
    assert main(["score", "tau", str(path), "--domain", "retail", "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--domain retail, but the file's tools are airline's, as it says: 2 of its 4 tool names" in err
    assert not (tmp_path / "x.jsonl.consistency.json").exists()  # a refused file writes no consistency report


def _renamed_domain(name: str) -> Callable[[dict[str, Any]], Any]:
    def change(data: dict[str, Any]) -> None:
        data["info"]["environment_info"]["domain_name"] = name

    return change


@pytest.mark.parametrize("name", ["airline_tighter_policy", "airline-relaxed"])
def test_a_policy_variant_is_read_as_its_domain_with_a_note(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = _file(shared_data, tmp_path, _renamed_domain(name))
    code, records, _ = _score(path, tmp_path)
    assert code == 0
    assert len(records) == 2
    assert all(r.task_id.startswith("airline/") for r in records)
    assert f"note: domain '{name}' read as airline, a policy variant of it" in capsys.readouterr().err


def test_domain_overrides_a_name_replay_does_not_know(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(shared_data, tmp_path, _renamed_domain("airline_v2_strict"))
    assert _score(path, tmp_path, "--domain", "airline")[0] == 0
    assert "note: read as --domain airline (the file says airline_v2_strict)" in capsys.readouterr().err
    unknown = _file(shared_data, tmp_path, _renamed_domain("medical"))
    out = tmp_path / "m.jsonl"
    assert main(["score", "tau", str(unknown), "--out", str(out), "--keep-going"]) == 2
    err = capsys.readouterr().err
    assert "tau domain 'medical' is not supported" in err
    assert "telecom and mock" not in err  # the hint fits the name
    assert "--domain airline|retail" in err
    assert not Path(f"{out}.consistency.json").exists()  # every file refused: no empty report


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda sim: sim.pop("task_id"), "input error: field 'task_id' is missing"),
        (lambda sim: sim.update(reward_info=None), "unscorable: reward_info is null"),
        (lambda sim: sim["reward_info"].pop("reward"), "unscorable: reward_info.reward is missing"),
    ],
    ids=["no task_id", "reward_info null", "no reward"],
)
def test_a_simulation_without_task_id_or_reward_is_one_reported_unit(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, reason: str
) -> None:
    path = _file(shared_data, tmp_path, lambda data: change(data["simulations"][1]))
    code, _, _ = _score(path, tmp_path)
    err = capsys.readouterr().err
    assert code == 2
    assert reason in err
    assert "simulations[1]" in err
    assert "Traceback" not in err
    code, records, _ = _score(path, tmp_path, "--keep-going")
    err = capsys.readouterr().err
    assert code == 2
    assert len(records) == 1
    assert f"skipped {path}: simulations[1]: {reason}" in err


def test_swapped_task_ids_are_task_mismatch_entries_and_clean_files_have_none(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = _file(shared_data, tmp_path, lambda data: None, count=20)
    code, records, consistency = _score(clean, tmp_path)
    assert code == 0
    assert len(records) == 20
    assert not [e for e in consistency if e["kind"] == "task_mismatch"]

    def swap(data: dict[str, Any]) -> None:
        first, second = data["simulations"][:2]
        first["task_id"], second["task_id"] = second["task_id"], first["task_id"]

    swapped = _file(shared_data, tmp_path, swap)
    code, records, consistency = _score(swapped, tmp_path)
    flagged = [e for e in consistency if e["kind"] == "task_mismatch"]
    assert len(records) == 2
    assert len(flagged) == 2
    assert {e["task_id"] for e in flagged} == {r.task_id for r in records}
    assert "does not fit its task" in flagged[0]["replay_reason"]
    assert "[task_mismatch]" in capsys.readouterr().err


def _merge_dependent_pair(data: dict[str, Any]) -> dict[str, Any]:
    """The first simulation whose next assistant call uses an id first shown by the previous call's result,
    with those two calls logged in one assistant message (as a harness logging sequential steps does)."""
    for simulation in data["simulations"]:
        messages = simulation["messages"]
        for i, message in enumerate(messages):
            calls = message.get("tool_calls") or []
            if message["role"] != "assistant" or len(calls) != 1 or i + 2 >= len(messages):
                continue
            result, following = messages[i + 1], messages[i + 2]
            nxt = following.get("tool_calls") or []
            if result["role"] != "tool" or following["role"] != "assistant" or len(nxt) != 1:
                continue
            if i + 3 >= len(messages) or messages[i + 3]["role"] != "tool":
                continue
            before = json.dumps(messages[: i + 1])
            values = [str(v) for v in (nxt[0].get("arguments") or {}).values() if isinstance(v, str)]
            if any(v in str(result["content"]) and v not in before for v in values):
                message["tool_calls"] = calls + nxt
                messages[i + 1 : i + 3] = [result, messages[i + 3]]  # both tool messages after the one message
                data["simulations"] = [simulation]
                return data
    raise AssertionError("no dependent pair of calls in the fixture")


def test_parallel_calls_sequential_lets_a_call_use_its_siblings_result(shared_data: Path, tmp_path: Path) -> None:
    path = _file(shared_data, tmp_path, _merge_dependent_pair, count=20)
    _, (parallel,), _ = _score(path, tmp_path)
    _, (sequential,), _ = _score(path, tmp_path, "--parallel-calls", "sequential")
    assert parallel.label is not None
    assert parallel.label.value == "information"  # the documented default rule
    assert sequential.fed > parallel.fed


def test_resuming_an_output_of_the_layout_before_the_pooling_is_refused(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Old records (tau3-airline, task 18) do not match the new ids (airline/18): --resume would score every
    simulation again beside them, so it is refused before anything is written."""
    from prefix_exec.records.codec import record_to_json
    from prefix_exec.trajectory import PrefixRecord

    out = tmp_path / "old.jsonl"
    line = json.dumps(record_to_json(PrefixRecord("tau3-airline", "18", "gpt-4.1", "llm_agent", 0, 1, 2, 1)))
    out.write_text(line + "\n", encoding="utf-8")
    results = str(shared_data / "tau" / "gpt-4.1_airline_1trial.json")
    assert main(["score", "tau", results, "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "before tau3 was pooled (dataset tau3-airline, task 18)" in err
    assert "--overwrite" in err
    assert "Traceback" not in err
    assert out.read_text(encoding="utf-8") == line + "\n"  # untouched
