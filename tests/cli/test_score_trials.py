"""Identity that cannot collide: --trial and --trial-field on every ``score`` command, rollouts of one task numbered
as trials in input order (or refused with --unique-task), duplicates only of the same rollout."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def tau_file(shared_data: Path, tmp_path: Path, name: str, simulations: list[dict[str, Any]] | None = None) -> Path:
    """A copy of the real gpt-4.1 airline file holding ``simulations`` (default: its first two)."""
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text(encoding="utf-8"))
    data["simulations"] = simulations if simulations is not None else data["simulations"][:2]
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def conversation(task: str, reply: str, **identity: Any) -> dict[str, Any]:
    """A transcript of one ``lookup`` call answered by ``reply``, with its own tools list."""
    return {
        "task_id": task,
        "success": 1,
        "model": "gpt-x",
        **identity,
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
        "messages": [
            {"role": "user", "content": "find it"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": reply},
            {"role": "assistant", "content": "done"},
        ],
    }


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# ------------------------------------------------------------------ --trial / --trial-field on every command


def custom(tmp: Path, shared: Path) -> list[str]:
    source = Path(__file__).resolve().parents[2] / "examples" / "ticketing"
    rows = [json.loads(line) for line in (source / "rollouts.jsonl").read_text().splitlines()[:2]]
    for row in rows:
        row["metadata"] = {"run": 3}
    return ["custom", "--tools", str(source / "tools.yaml"), str(write_jsonl(tmp / "rollouts.jsonl", rows))]


def transcripts(tmp: Path, shared: Path) -> list[str]:
    return ["transcripts", str(write_jsonl(tmp / "t.jsonl", [conversation("a", "1", metadata={"run": 3})]))]


def tau(tmp: Path, shared: Path) -> list[str]:
    data = json.loads((shared / "tau" / "gpt-4.1_airline_1trial.json").read_text(encoding="utf-8"))
    simulations = data["simulations"][:1]
    simulations[0]["run"] = 3
    return ["tau", str(tau_file(shared, tmp, "airline.json", simulations))]


def bfcl(tmp: Path, shared: Path) -> list[str]:
    source = shared / "bfcl" / "glyphh-ada-1.1" / "BFCL_v4_multi_turn_base_result.json"
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()[:2]]
    for row in rows:
        row["metadata"] = {"run": 3}
    folder = tmp / "glyphh-ada-1.1"
    folder.mkdir()
    return ["bfcl", str(write_jsonl(folder / source.name, rows))]


def toolsandbox(tmp: Path, shared: Path) -> list[str]:
    # ToolSandbox keeps nothing like a trial: the field is read from the scenario's summary row
    (tmp / "only.txt").write_text("get_wifi\n")
    return ["toolsandbox", str(shared / "toolsandbox" / "run_public"), "--scenarios", str(tmp / "only.txt")]


COMMANDS: dict[str, tuple[Callable[[Path, Path], list[str]], str, int]] = {
    # command, the field --trial-field names in its input, the trial it holds there
    "custom": (custom, "metadata.run", 3),
    "transcripts": (transcripts, "metadata.run", 3),
    "tau": (tau, "run", 3),
    "bfcl": (bfcl, "metadata.run", 3),
    "toolsandbox": (toolsandbox, "turn_count", 3),
}


@pytest.mark.parametrize("name", [*COMMANDS, "inspect"])
def test_trial_and_trial_field_on_every_score_command(
    name: str, shared_data: Path, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    if name == "bfcl":
        pytest.importorskip("bfcl_eval")
    if name == "inspect":
        log, _ = request.getfixturevalue("inspect_bfcl")
        command, field, held = ["inspect", str(log)], "epoch", 1
    else:
        make, field, held = COMMANDS[name]
        command = make(tmp_path, shared_data)
    score = ["score", *command]
    assert main([*score, "--trial", "7", "--out", str(tmp_path / "fixed.jsonl")]) == 0
    fixed = records(tmp_path / "fixed.jsonl")
    assert fixed and {r["trial"] for r in fixed} == {7}
    assert main([*score, "--trial-field", field, "--out", str(tmp_path / "field.jsonl")]) == 0
    assert {r["trial"] for r in records(tmp_path / "field.jsonl")} == {held}
    capsys.readouterr()
    assert main([*score, "--trial-field", "no.such.field", "--out", str(tmp_path / "missing.jsonl")]) == 2
    assert "field 'no.such.field'" in capsys.readouterr().err
    assert main([*score, "--trial", "1", "--trial-field", field, "--out", str(tmp_path / "both.jsonl")]) == 2
    assert "give --trial or --trial-field, not both" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ two tau2 files


def two_runs(shared_data: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Two results files, each with a run of airline task 13 by gpt-4.1 recorded as trial 0: the real gpt-4.1 run,
    and the real run of the same task by a fine-tuned gpt-4.1, filed as gpt-4.1's second run."""
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text(encoding="utf-8"))
    other = json.loads(
        (shared_data / "tau" / "leaderboard" / "ft-gpt-4.1-sft_airline.json").read_text(encoding="utf-8")
    )
    first = [s for s in data["simulations"] if s["task_id"] == "13"]
    second = [s for s in other["simulations"] if s["task_id"] == "13"]
    assert len(first) == len(second) == 1 and first[0]["trial"] == second[0]["trial"] == 0
    return tau_file(shared_data, tmp_path, "run1.json", first), tau_file(shared_data, tmp_path, "run2.json", second)


def test_two_tau2_files_with_a_run_of_one_task_are_two_trials(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run1, run2 = two_runs(shared_data, tmp_path)
    out = tmp_path / "tau.jsonl"
    assert main(["score", "tau", str(run1), str(run2), "--out", str(out)]) == 0
    first, second = records(out)
    assert (first["task_id"], first["trial"], second["task_id"], second["trial"]) == ("airline/13", 0, "airline/13", 1)
    assert "trial_note" not in first["metadata"]
    assert second["metadata"]["trial_note"] == (
        "trial 1 by input order: the input names trial 0, which an earlier, different rollout of this task has"
    )
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("prefix-exec: trials:")]
    assert "1 rollout(s) of 1 task(s)" in line and "task airline/13 trial 0 -> 1 from run2.json" in line
    consistency = json.loads(Path(f"{out}.consistency.json").read_text())
    assert {entry["trial"] for entry in consistency} <= {0, 1}
    # metrics reads both: one task, two trials
    assert main(["metrics", str(out), "--resamples", "200", "--format", "json"]) == 0
    # --resume numbers them the same way: both kept, nothing scored twice
    assert main(["score", "tau", str(run1), str(run2), "--out", str(out), "--resume"]) == 0
    assert "2 already in the output were kept" in capsys.readouterr().err
    assert [(r["trial"], r["metadata"]["simulation_id"]) for r in records(out)] == [
        (0, first["metadata"]["simulation_id"]),
        (1, second["metadata"]["simulation_id"]),
    ]


def test_unique_task_refuses_them_naming_both(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run1, run2 = two_runs(shared_data, tmp_path)
    out = tmp_path / "tau.jsonl"
    assert main(["score", "tau", str(run1), str(run2), "--unique-task", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        "task airline/13 (model gpt-4.1, method llm_agent, trial 0) from run2.json: a different rollout has this "
        "dataset, task, model, method and trial: task airline/13 (model gpt-4.1, method llm_agent, trial 0) from "
        "run1.json" in err
    )
    assert "prefix-exec: trials:" not in err


def test_the_same_file_twice_is_a_duplicate(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run1, _ = two_runs(shared_data, tmp_path)
    out = tmp_path / "tau.jsonl"
    assert main(["score", "tau", str(run1), str(run1), "--keep-going", "--out", str(out)]) == 2
    assert len(records(out)) == 1
    err = capsys.readouterr().err
    assert "from run1.json: duplicate: the input holds this rollout twice" in err
    assert "prefix-exec: trials:" not in err


# --------------------------------------------------------------------------- transcripts without trials


def test_transcripts_without_trials_become_trials_in_input_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [conversation("a", "1"), conversation("a", "2"), conversation("b", "1"), conversation("a", "3")],
    )
    out = tmp_path / "o.jsonl"
    assert main(["score", "transcripts", str(path), "--out", str(out)]) == 0
    assert [(r["task_id"], r["trial"]) for r in records(out)] == [("a", 0), ("a", 1), ("b", 0), ("a", 2)]
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("prefix-exec: trials:")]
    assert line.startswith("prefix-exec: trials: 2 rollout(s) of 1 task(s)")
    assert "(2 naming no trial, 0 naming one already taken)" in line
    assert "task a trial 0 -> 1 from t.jsonl:2; task a trial 0 -> 2 from t.jsonl:4" in line
    # --unique-task: an error naming both lines
    assert main(["score", "transcripts", str(path), "--unique-task", "--out", str(tmp_path / "u.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "task a (model gpt-x, method default, trial 0) from t.jsonl:2: a different rollout" in err
    assert "task a (model gpt-x, method default, trial 0) from t.jsonl:1." in err
    # a trial the conversation names is kept
    named = write_jsonl(tmp_path / "n.jsonl", [conversation("a", "1", trial=4), conversation("a", "2", trial=2)])
    assert main(["score", "transcripts", str(named), "--out", str(tmp_path / "n-out.jsonl")]) == 0
    assert [r["trial"] for r in records(tmp_path / "n-out.jsonl")] == [4, 2]


def test_a_canonical_file_given_twice_is_a_duplicate_not_a_trial(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [json.loads(line) for line in (ticketing / "rollouts.jsonl").read_text().splitlines()[:2]]
    for row in rows:
        del row["trial"]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(path, copy)
    out = tmp_path / "o.jsonl"
    args = ["score", "custom", "--tools", str(ticketing / "tools.yaml"), str(path), str(copy), "--out", str(out)]
    assert main([*args, "--keep-going"]) == 2  # canonical rows say nothing of where they were read
    assert len(records(out)) == 2
    assert capsys.readouterr().err.count("duplicate: the input holds this rollout twice") == 2
