"""Every command that writes refuses an output that is one of its inputs, never writes a special file, and
``--overwrite`` removes only files it can prove it wrote (issue 29, item 5)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostile_outputs import ROW as RECORD
from prefix_exec.cli import main

TEXT = "".join(json.dumps({**RECORD, "task_id": f"t{i}", "method": m}) + "\n" for i in range(3) for m in ("a", "b"))
REPORT = ("--resamples", "20", "--no-plots", "--format", "md")


def records(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEXT)
    return path


def test_metrics_out_equal_to_its_input_by_path_symlink_or_hard_link_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = records(tmp_path / "r.jsonl")
    (tmp_path / "soft.jsonl").symlink_to(source)
    os.link(source, tmp_path / "hard.jsonl")
    for out in ("r.jsonl", "soft.jsonl", "hard.jsonl"):
        assert main(["metrics", str(source), "--resamples", "20", "--out", str(tmp_path / out)]) == 2
        err = capsys.readouterr().err
        assert f"{tmp_path / out}: --out is also an input of this command ({source})" in err
        assert "Traceback" not in err
    assert source.read_text() == TEXT


def test_metrics_out_fifo_is_refused_without_writing_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = records(tmp_path / "r.jsonl")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that a command opening it would not block this test
    try:
        assert main(["metrics", str(source), "--resamples", "20", "--out", str(fifo)]) == 2
        assert "--out is a FIFO, not a regular file; refusing to write it" in capsys.readouterr().err
        assert os.read(reader, 100) == b""  # nothing was written, and no writer holds the pipe
    finally:
        os.close(reader)


def test_metrics_out_fifo_without_a_reader_ends_at_once(tmp_path: Path) -> None:
    source = records(tmp_path / "r.jsonl")
    os.mkfifo(tmp_path / "fifo")
    command = [sys.executable, "-m", "prefix_exec", "metrics", str(source), "--resamples", "20", "--out", "fifo"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "--out is a FIFO" in done.stderr


def test_report_into_a_folder_whose_manifest_lists_the_input_keeps_the_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    source = records(out / "in.jsonl")
    data = source.read_bytes()
    proof = {"name": "in.jsonl", "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    for manifest in (["in.jsonl"], [proof]):  # as an older prefix-exec wrote it, and with a matching hash
        (out / "files.json").write_text(json.dumps(manifest))
        for extra in ((), ("--overwrite",)):
            assert main(["report", str(source), "--out", str(out), *REPORT, *extra]) == 2
            err = capsys.readouterr().err
            assert f"{out}: --out holds an input of this command, {source}" in err
            assert source.read_text() == TEXT
            assert sorted(p.name for p in out.iterdir()) == ["files.json", "in.jsonl"]


def test_report_overwrite_never_replaces_an_input_named_like_its_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    source = records(out / "summary.json")
    assert main(["report", str(source), "--out", str(out), *REPORT, "--overwrite"]) == 2
    assert "holds an input of this command" in capsys.readouterr().err
    assert source.read_text() == TEXT
    # a hard link or symlink to an input elsewhere, under one of the report's names, is refused the same way
    elsewhere = records(tmp_path / "r.jsonl")
    source.unlink()
    for make in (os.link, os.symlink):
        make(elsewhere, out / "report.html")
        assert main(["report", str(elsewhere), "--out", str(out), *REPORT, "--overwrite"]) == 2
        assert f"holds an input of this command, {elsewhere} (as report.html)" in capsys.readouterr().err
        (out / "report.html").unlink()
    assert elsewhere.read_text() == TEXT


def test_report_via_a_run_directory_refuses_an_out_holding_its_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    records(run / "records.jsonl")
    assert main(["report", str(run), "--out", str(run), *REPORT, "--overwrite"]) == 2
    assert "holds an input of this command" in capsys.readouterr().err
    assert main(["report", str(run), "--out", str(run / "report"), *REPORT]) == 0  # a folder beside them is fine
    assert (run / "records.jsonl").read_text() == TEXT


@pytest.mark.parametrize(
    "theirs",
    [["a.csv", "b.csv"], [{"name": "a.csv"}], [], [{"name": "a.csv", "bytes": 1, "sha256": "0" * 64, "x": 1}]],
    ids=["names", "objects", "empty", "extra-key"],
)
def test_a_users_own_files_json_is_no_manifest_and_is_never_replaced_unasked(
    tmp_path: Path, theirs: list[object], capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder holding only a files.json that is no list of our entries: the file is the user's, so the
    folder is not ours (it once was taken as ours, and the file replaced, without --overwrite)."""
    source = records(tmp_path / "r.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    text = json.dumps(theirs)
    (out / "files.json").write_text(text)
    assert main(["report", str(source), "--out", str(out), *REPORT]) == 2
    assert "was not written by prefix-exec (it holds files.json)" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["files.json"]
    assert (out / "files.json").read_text() == text


def test_overwrite_removes_only_files_whose_content_proves_them_ours(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = records(tmp_path / "r.jsonl")
    out = tmp_path / "out"
    assert main(["report", str(source), "--out", str(out), *REPORT]) == 0
    manifest = json.loads((out / "files.json").read_text())
    assert {"table2.md", "report.html", "summary.json"} <= {e["name"] for e in manifest}
    for entry in manifest:
        data = (out / entry["name"]).read_bytes()
        assert entry == {"name": entry["name"], "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    # someone edits a listed file and lists their own: neither is ours any more, so neither is removed
    (out / "labels.md").write_text("my notes on the labels")
    (out / "mine.txt").write_text("mine")
    listed = [*manifest, {"name": "mine.txt", "bytes": 4, "sha256": "0" * 64}]
    (out / "files.json").write_text(json.dumps(listed))
    assert main(["report", str(source), "--out", str(out), *REPORT]) == 2
    assert "was not written by prefix-exec (it holds labels.md, mine.txt)" in capsys.readouterr().err
    # --overwrite: the proven files go (table2.csv, from an earlier --format, is not rewritten now) and the rest stay
    (out / "table2.csv").write_text("a,b\n")
    data = (out / "table2.csv").read_bytes()
    proven = {"name": "table2.csv", "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (out / "files.json").write_text(json.dumps([*listed, proven]))
    assert main(["report", str(source), "--out", str(out), *REPORT, "--format", "csv", "--overwrite"]) == 0
    assert (out / "mine.txt").read_text() == "mine"
    assert not (out / "table2.md").exists()  # proven ours, not written this time: removed
    assert (out / "table2.csv").read_text() != "a,b\n"


def test_overwrite_replaces_a_link_at_one_of_its_names_and_never_writes_through_it(tmp_path: Path) -> None:
    source = records(tmp_path / "r.jsonl")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").symlink_to(victim)
    (out / "table2.md").symlink_to(victim)
    assert main(["report", str(source), "--out", str(out), *REPORT, "--overwrite"]) == 0
    assert victim.read_text() == "precious"
    assert not (out / "summary.json").is_symlink() and (out / "summary.json").is_file()


def test_sample_out_equal_to_its_labels_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = tmp_path / "labels.json"
    text = json.dumps({"a": ["x"], "b": ["y"], "c": ["x"]})
    labels.write_text(text)
    assert main(["sample", str(labels), "-n", "2", "--out", str(labels)]) == 2
    assert "also an input of this command" in capsys.readouterr().err
    assert labels.read_text() == text


def test_score_consistency_equal_to_an_input_or_the_output_is_refused_before_scoring(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_bytes((ticketing / "rollouts.jsonl").read_bytes())
    before = rollouts.read_bytes()
    out = tmp_path / "out.jsonl"
    base = ["score", "custom", "--tools", str(ticketing / "tools.yaml"), str(rollouts), "--out", str(out)]
    for target in (rollouts, out):
        assert main([*base, "--consistency", str(target)]) == 2
        assert "--consistency is also an input of this command" in capsys.readouterr().err
        assert not out.exists()  # refused before a record was written
    assert rollouts.read_bytes() == before


def test_guard_record_folder_refuses_its_hooks_file_and_special_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    hooks = folder / "tools.json"
    hooks.write_text("tools: {}\n")
    assert main(["guard", "--record", str(folder), "--hooks", str(hooks), "--", "true"]) == 2
    assert "--record is also an input of this command" in capsys.readouterr().err
    assert hooks.read_text() == "tools: {}\n"
    hooks.unlink()
    os.mkfifo(folder / "rollouts.jsonl")
    assert main(["guard", "--record", str(folder), "--", "true"]) == 2
    assert "--record is a FIFO, not a regular file" in capsys.readouterr().err


def test_run_refuses_a_run_directory_whose_files_are_its_grid_or_special(tmp_path: Path) -> None:
    from prefix_exec.errors import InputError
    from prefix_exec.runner.run_dir import GRID_COPY, LOCK, RECORDS, check_run_files

    out = tmp_path / "run"
    out.mkdir()
    grid = out / RECORDS
    grid.write_text("")  # an empty file is a valid (empty) TOML grid
    with pytest.raises(InputError, match="--out is also an input of this command"):
        check_run_files(out, grid)
    check_run_files(out, out / GRID_COPY)  # a run is resumed from its own copy of the grid
    grid.unlink()
    os.mkfifo(out / LOCK)
    with pytest.raises(InputError, match="--out is a FIFO"):
        check_run_files(out, tmp_path / "grid.toml")
