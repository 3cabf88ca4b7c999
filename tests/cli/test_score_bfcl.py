"""``prefix-exec score bfcl``: result files, --ground-truth, --sample stratified-200, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval")

from prefix_exec.cli import main
from prefix_exec.envs.bfcl.sample import stratified_200


def rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_ground_truth_on_the_stratified_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gt.jsonl"
    assert main(["score", "bfcl", "--ground-truth", "--sample", "stratified-200", "--out", str(out)]) == 0
    records = rows(out)
    assert sorted(r["task_id"] for r in records) == sorted(stratified_200())
    # the old name 'paper' is no longer a choice
    old = tmp_path / "old.jsonl"
    with pytest.raises(SystemExit) as stopped:
        main(["score", "bfcl", "--ground-truth", "--sample", "paper", "--out", str(old)])
    assert stopped.value.code == 2
    assert "argument --sample: invalid choice: 'paper'" in capsys.readouterr().err
    assert not old.exists()
    assert all(r["success"] == 1 and r["fed"] == r["T"] + 1 for r in records)


def test_result_file_with_flags(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    source = shared_data / "bfcl" / "glyphh-ada-1.1" / "BFCL_v4_multi_turn_miss_func_result.json"
    assert main(["score", "bfcl", str(source), "--out", str(out), "--model", "M", "--method", "X"]) == 0
    records = rows(out)
    assert len(records) == 200
    assert {(r["model"], r["method"]) for r in records} == {("M", "X")}
    assert any(r["success"] == 0 for r in records)
    assert any(r["success"] == 1 for r in records)


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "x.jsonl")
    assert main(["score", "bfcl", "--out", out]) == 2
    bad = tmp_path / "results.json"
    bad.write_text("{}\n")
    assert main(["score", "bfcl", str(bad), "--out", out]) == 2
    assert "category" in capsys.readouterr().err


def test_prompting_y_is_bfcls_by_default_and_ours_on_request(shared_data: Path, tmp_path: Path) -> None:
    source = shared_data / "bfcl" / "airev-agent-0.8b" / "BFCL_v4_multi_turn_base_result.json"
    default, decoded = tmp_path / "bfcl.jsonl", tmp_path / "decoded.jsonl"
    assert main(["score", "bfcl", str(source), "--out", str(default)]) == 0
    assert main(["score", "bfcl", str(source), "--prompting-y", "decoded", "--out", str(decoded)]) == 0
    # every airev turn is one string, which BFCL iterates by character: Y 0 throughout by BFCL's checker
    assert sum(r["success"] for r in rows(default)) == 0
    assert sorted(r["task_id"] for r in rows(decoded) if r["success"]) == ["multi_turn_base_133", "multi_turn_base_182"]
    # the prefix replay is the same under both readings
    assert [(r["fed"], r["T"]) for r in rows(default)] == [(r["fed"], r["T"]) for r in rows(decoded)]


def test_lone_surrogates_in_fc_prompting_and_folder_names_are_escaped(tmp_path: Path) -> None:
    # A non-UTF-8 folder name decodes (surrogateescape) to a lone surrogate in the model name.
    folder = Path(os.fsdecode(bytes(tmp_path) + b"/m\xff-FC"))
    folder.mkdir()
    fc = {"id": "multi_turn_base_1", "result": [[[{"ls": json.dumps({"a": "\ud800"})}]]]}
    prompting = {"id": "multi_turn_base_3", "result": [["[ls(a='\ud800')]"]]}
    (folder / "BFCL_v4_multi_turn_base_result.json").write_text(
        json.dumps(fc) + "\n" + json.dumps(prompting) + "\n", encoding="utf-8"
    )
    out = tmp_path / "r.jsonl"
    assert main(["score", "bfcl", str(folder), "--out", str(out), "--model", "x\udcff"]) == 0
    records = rows(out)
    assert [r["task_id"] for r in records] == ["multi_turn_base_1", "multi_turn_base_3"]
    assert {r["model"] for r in records} == {"x\udcff"}
    assert records[0]["actions"][0]["arguments"] == {"a": "\ud800"}
    assert main(["score", "bfcl", str(folder), "--out", str(tmp_path / "r2.jsonl")]) == 0
    assert {r["model"] for r in rows(tmp_path / "r2.jsonl")} == {"m\udcff"}
