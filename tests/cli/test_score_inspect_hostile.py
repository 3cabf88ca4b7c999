"""``score inspect`` on files that are not inspect logs: each is exit 2 with one message naming the file, never a
traceback, a hang or an output file; with ``--keep-going`` each is listed and the run still ends with exit 2."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

from hostile_files import FIFO, ZERO, write_case_file
from prefix_exec.cli import main

HOSTILE = {
    "empty": "",
    "not-json": "hello",
    "html": "<!doctype html><html></html>",
    "json-list": "[1, 2, 3]",
    "json-object": json.dumps({"version": 2, "status": "success"}),
    "wrong-types": json.dumps({"version": 2, "status": 7, "eval": [], "samples": "x"}),
    "deep": "[" * 5000 + "]" * 5000,
    "huge-int": '{"version": ' + "9" * 5000 + "}",
    "surrogate": '{"eval": "\\ud800"}',
    "fifo": FIFO,
    "dev-zero": ZERO,
}


@pytest.mark.parametrize("suffix", [".json", ".eval"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_file_that_is_not_a_log_is_exit_2(
    name: str, suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"{name}{suffix}"
    write_case_file(path, HOSTILE[name])
    out = tmp_path / "out.jsonl"
    assert main(["score", "inspect", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{path.name}:" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_a_zip_that_is_not_a_log_and_keep_going(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / "fake.eval"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("header.json", "{not json")
        handle.writestr("samples/1_epoch_1.json", "[]")
    other = tmp_path / "other.json"
    other.write_text("{}", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["score", "inspect", str(archive), str(other), "--out", str(out), "--keep-going"]) == 2
    err = capsys.readouterr().err
    assert "fake.eval: not a readable inspect log" in err
    assert "other.json: not a readable inspect log" in err
    assert "scored 0 rollouts" in err
    assert "2 could not be scored" in err
    assert "Traceback" not in err


def test_a_folder_without_logs_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    assert main(["score", "inspect", str(tmp_path), "--out", str(tmp_path / "out.jsonl")]) == 2
    assert "no inspect logs (.eval or .json) in this folder" in capsys.readouterr().err


def test_without_inspect_ai_the_extra_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # as if not installed
    log = tmp_path / "run.eval"
    log.write_text("x", encoding="utf-8")
    assert main(["score", "inspect", str(log), "--out", str(tmp_path / "out.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "this command needs inspect_ai, which is not installed" in err
    assert "pip install 'prefix-exec[inspect]'" in err
