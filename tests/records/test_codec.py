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


# ---------------------------------------------------------------------------------------------- absent Y


def _record(success: int | None, trial: int = 0, **metadata: object) -> PrefixRecord:
    return PrefixRecord("d", "t", "m", "x", trial, T=2, fed=1, success=success, metadata=dict(metadata))


def test_a_record_without_y_round_trips_as_success_null(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    write_records(path, [_record(None), _record(1, 1), _record(0, 2)])
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["success"] for r in rows] == [None, 1, 0]  # written as JSON null, never 0
    assert '"success": null' in path.read_text().splitlines()[0]
    assert [r.success for r in read_records(path)] == [None, 1, 0]
    assert [r.success for r in read_metric_rows([path])] == [None, 1, 0]


def test_files_written_before_y_could_be_absent_read_as_before(tmp_path: Path) -> None:
    """0/1 (and JSON true/false, 1.0) read as they always did; the 0 that ``score traces`` wrote with
    ``metadata.success_given`` false before Y could be absent was a placeholder, and reads as absent."""
    rows = [
        record_to_json(_record(1, 0)),
        record_to_json(_record(0, 1)),
        dict(record_to_json(_record(0, 2)), success=True),
    ]
    rows.append(record_to_json(_record(0, 3, success_given=True)))
    rows.append(record_to_json(_record(0, 4, success_given=False, trace_id="ab")))
    rows.append(record_to_json(_record(1, 5, success_given=False)))  # a 1 is a recorded Y whatever the flag says
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [r.success for r in read_records(path)] == [1, 0, 1, 0, None, 1]
    assert [r.success for r in read_metric_rows([path])] == [1, 0, 1, 0, None, 1]


def test_a_row_without_the_success_key_is_still_an_error(tmp_path: Path) -> None:
    row = record_to_json(_record(1))
    del row["success"]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(row) + "\n")
    for read in (lambda: list(read_records(path)), lambda: read_metric_rows([path])):
        with pytest.raises(InputError, match="missing") as caught:
            read()
        assert (caught.value.field, caught.value.line) == ("success", 1)
        assert "null when Y was not recorded" in (caught.value.hint or "")


def test_a_rollout_whose_y_is_absent_says_so_and_round_trips(tmp_path: Path) -> None:
    absent = Rollout("d", "t", "m", "x", success=None, success_absent=True)
    pending = Rollout("d", "t", "m", "x", success=None)  # Y still to compute (BFCL): no flag written
    assert rollout_to_json(absent)["success_absent"] is True and "success_absent" not in rollout_to_json(pending)
    write_rollouts(tmp_path / "r.jsonl", [absent, pending, ROLLOUT])
    assert list(read_rollouts(tmp_path / "r.jsonl")) == [absent, pending, ROLLOUT]
    row = dict(rollout_to_json(absent), success=1)
    (tmp_path / "bad.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError, match="success_absent") as caught:
        list(read_rollouts(tmp_path / "bad.jsonl"))
    assert caught.value.field == "success_absent"
