from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefix_exec.analysis.rows import read_metric_rows
from prefix_exec.errors import InputError
from prefix_exec.records.codec import (
    read_records,
    read_rollouts,
    record_to_json,
    rollout_to_json,
    write_records,
    write_rollouts,
)
from prefix_exec.records.jsonl import JsonlWriter, completed_keys
from prefix_exec.trajectory import (
    CallCost,
    FailureLabel,
    Observation,
    PrefixRecord,
    Rollout,
    ToolCall,
    Verdict,
)

ROLLOUT = Rollout(
    dataset="bfcl",
    task_id="multi_turn_base_0",
    model="gpt",
    method="react",
    trial=2,
    success=1,
    actions=(
        ToolCall("cd", {"folder": "docs"}, call_id="c1", turn=0, observation=Observation({"ok": 1}, False)),
        ToolCall("<unparsed>", {}, turn=1, raw="[cd(folder=", parse_error="unexpected EOF"),
    ),
    transcript=({"role": "user", "content": "hi"},),
    cost=(CallCost("executor", 10, 5, 2, 0.5, "gpt"),),
    metadata={"category": "base"},
)


def test_rollouts_round_trip(tmp_path):
    path = tmp_path / "r.jsonl"
    write_rollouts(path, [ROLLOUT, ROLLOUT])
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(r["schema_version"] == 1 and r["kind"] == "rollout" for r in rows)
    assert list(read_rollouts(path)) == [ROLLOUT, ROLLOUT]


def test_records_round_trip(tmp_path):
    rec = PrefixRecord(
        "bfcl",
        "t",
        "gpt",
        "react",
        0,
        T=2,
        fed=2,
        success=1,
        verdicts=(
            Verdict.accept({"x": 1}, notes=("soft",)),
            Verdict.reject([FailureLabel.INFORMATION, FailureLabel.DEPENDENCY], "bad id"),
        ),
        actions=ROLLOUT.actions,
    )
    path = tmp_path / "rec.jsonl"
    write_records(path, [rec])
    row = json.loads(path.read_text())
    assert row["label"] == "dependency"
    assert row["reason"] == "bad id"
    assert row["verdicts"][1] == {
        "step": 2,
        "tool": "<unparsed>",
        "accepted": False,
        "label": "dependency",
        "causes": ["dependency", "information"],
        "reason": "bad id",
    }
    assert list(read_records(path)) == [rec]
    assert read_metric_rows([path])[0].fed == 2


def test_errors_name_file_line_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = rollout_to_json(ROLLOUT)
    bad = dict(good, actions=[{"name": "cd", "arguments": "folder=docs"}])
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError) as info:
        list(read_rollouts(path))
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), 3, "actions[0].arguments")
    assert f"{path}:3: field 'actions[0].arguments': expected dict" in err.describe()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ('{"kind": "rollout", "dataset": "d", "model": "m", "method": "x"}', "field 'task_id': missing"),
        ('{"kind": "rollout", "schema_version": 99}', "unsupported version 99"),
        ('{"dataset": "d", "task_id": "t", "model": "m", "method": "x", "success": 2}', "must be 0 or 1"),
        ('{"dataset": "d", "task_id": "t", "model": "m", "method": "x", "trial": true}', "expected int"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_malformed_rows_say_what_is_wrong(tmp_path, text, fragment):
    path = tmp_path / "x.jsonl"
    path.write_text(text + "\n")
    with pytest.raises(InputError, match=fragment) as info:
        list(read_rollouts(path))
    assert info.value.line == 1


def test_metric_rows_check_depth_ranges(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(
        json.dumps({"dataset": "d", "task_id": "t", "model": "m", "method": "x", "T": 2, "fed": 4, "success": 1}) + "\n"
    )
    with pytest.raises(InputError, match=r"field 'fed': must lie in 1..T\+1"):
        read_metric_rows([path])


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        list(read_rollouts(tmp_path / "nope.jsonl"))


def test_resume_cuts_a_torn_line_and_counts_only_complete_rows(tmp_path):
    path = tmp_path / "out.jsonl"
    rec = PrefixRecord("d", "t1", "m", "x", 0, T=1, fed=2, success=1)
    full = json.dumps(record_to_json(rec))
    path.write_text(full + "\n" + full[:25])  # killed mid-write
    assert completed_keys(path) == {("d", "t1", "m", "x", 0)}
    with JsonlWriter(path, append=True) as out:
        out.write(record_to_json(PrefixRecord("d", "t2", "m", "x", 0, T=1, fed=2, success=1)))
    assert [r.task_id for r in read_records(path)] == ["t1", "t2"]


def test_call_cost_waits_round_trip_and_are_left_out_when_zero(tmp_path: Path) -> None:
    plain = CallCost(role="executor", prompt_tokens=3, latency_s=0.5)
    waited = CallCost(role="planner", latency_s=0.5, queue_s=1.25, backoff_s=2.0)
    rollout = Rollout(dataset="d", task_id="t", model="m", method="react", actions=(), success=0, cost=(plain, waited))
    row = rollout_to_json(rollout)
    assert sorted(row["cost"][0]) == sorted(
        ["role", "prompt_tokens", "completion_tokens", "reasoning_tokens", "latency_s", "model"]
    )
    assert (row["cost"][1]["queue_s"], row["cost"][1]["backoff_s"]) == (1.25, 2.0)
    write_rollouts(tmp_path / "r.jsonl", [rollout])
    assert next(iter(read_rollouts(tmp_path / "r.jsonl"))).cost == (plain, waited)


def test_a_horizon_beyond_max_t_is_an_input_error_not_an_allocation(tmp_path: Path) -> None:
    row = {
        "dataset": "d",
        "task_id": "t",
        "model": "m",
        "method": "x",
        "success": 1,
        "kind": "record",
        "T": 10**18,
        "fed": 1,
    }
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(row) + "\n")
    for read in (lambda: read_metric_rows([path]), lambda: list(read_records(path))):
        with pytest.raises(InputError) as caught:
            read()
        assert caught.value.field == "T"
        assert caught.value.line == 1
        assert "beyond" in caught.value.message
    row["T"] = 1e18  # a float is no count either
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError, match="expected int"):
        read_metric_rows([path])


def test_verdict_notes_must_be_text(tmp_path: Path) -> None:
    record = record_to_json(
        PrefixRecord(
            "d",
            "t",
            "m",
            "x",
            0,
            T=1,
            fed=2,
            success=1,
            verdicts=(Verdict.accept(notes=("fine",)),),
            actions=(ToolCall("a", {}),),
        )
    )
    record["verdicts"][0]["notes"] = ["fine", {"html": "<b>"}]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(InputError) as caught:
        list(read_records(path))
    assert caught.value.field == "verdicts[0].notes[1]"
    assert caught.value.line == 1
