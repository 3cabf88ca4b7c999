"""`score` file safety: an input is never the output, one writer per output, no empty output after a
failure, output-side OS errors are exit-2 messages and a resume after them is exact."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from prefix_exec.cli import main
from prefix_exec.records import jsonl
from prefix_exec.scoring.run import hold_lock


def score(ticketing: Path, rollouts: Path, out: Path, *extra: str) -> int:
    return main(["score", "custom", "--tools", str(ticketing / "tools.yaml"), str(rollouts), "--out", str(out), *extra])


def test_output_equal_to_an_input_is_refused_and_the_input_kept(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rollouts = tmp_path / "x.jsonl"
    rollouts.write_bytes((ticketing / "rollouts.jsonl").read_bytes())
    before = rollouts.read_bytes()
    assert score(ticketing, rollouts, rollouts, "--overwrite") == 2
    assert "also an input" in capsys.readouterr().err
    link = tmp_path / "link.jsonl"
    link.symlink_to(rollouts)
    assert score(ticketing, rollouts, link, "--overwrite") == 2
    assert rollouts.read_bytes() == before


def test_a_second_writer_of_one_output_is_refused(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "records.jsonl"
    with hold_lock(out):  # another score --resume holding the file
        assert score(ticketing, ticketing / "rollouts.jsonl", out, "--resume") == 2
    assert "another prefix-exec process" in capsys.readouterr().err
    assert score(ticketing, ticketing / "rollouts.jsonl", out, "--resume") == 0
    assert len(out.read_text().splitlines()) == len((ticketing / "rollouts.jsonl").read_text().splitlines())


def test_a_failed_score_leaves_no_empty_output(ticketing: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"dataset": "ticketing"}\n')
    out = tmp_path / "out" / "records.jsonl"
    assert score(ticketing, bad, out) == 2
    assert not out.exists()
    assert score(ticketing, bad, out, "--keep-going") == 2
    assert not out.exists()


def test_overwrite_replaces_the_output_and_another_name_of_it_keeps_its_records(
    ticketing: Path, tmp_path: Path
) -> None:
    out = tmp_path / "records.jsonl"
    assert score(ticketing, ticketing / "rollouts.jsonl", out) == 0
    before = out.read_bytes()
    other = tmp_path / "kept.jsonl"
    os.link(out, other)  # a hard link: the same file under another name
    one = tmp_path / "one.jsonl"
    one.write_text((ticketing / "rollouts.jsonl").read_text().splitlines()[0] + "\n")
    assert score(ticketing, one, out, "--overwrite") == 0
    assert len(out.read_text().splitlines()) == 1
    assert other.read_bytes() == before  # replaced, not written into
    # A symlink output: its target is replaced, the link stays a link.
    link = tmp_path / "link.jsonl"
    link.symlink_to(other)
    assert score(ticketing, one, link, "--overwrite") == 0
    assert link.is_symlink() and len(other.read_text().splitlines()) == 1


def test_a_failed_score_keeps_an_empty_output_it_did_not_create(ticketing: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"dataset": "ticketing"}\n')
    made = tmp_path / "made-by-the-user.jsonl"
    made.touch()
    link = tmp_path / "link.jsonl"
    link.symlink_to(made)
    assert score(ticketing, bad, made) == 2
    assert made.exists()
    assert score(ticketing, bad, link, "--keep-going") == 2
    assert link.is_symlink() and made.exists()


def test_resume_onto_a_rollouts_file_is_refused(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes((ticketing / "rollouts.jsonl").read_bytes())
    assert score(ticketing, ticketing / "rollouts.jsonl", out, "--resume") == 2
    assert "rollout row, not a record" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["directory", "device"])
def test_an_output_that_is_not_a_file_is_exit_2(
    ticketing: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "folder"
    if kind == "directory":
        out.mkdir()
    else:
        out.symlink_to("/dev/null")
    assert score(ticketing, ticketing / "rollouts.jsonl", out, "--overwrite") == 2
    err = capsys.readouterr().err
    assert "not a regular file" in err
    assert "Traceback" not in err


def test_a_full_disk_is_exit_2_and_the_resume_is_exact(
    ticketing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = tmp_path / "clean.jsonl"
    assert score(ticketing, ticketing / "rollouts.jsonl", clean) == 0
    out = tmp_path / "records.jsonl"
    real_write = jsonl.JsonlWriter.write_line  # every record's way to the file (a worker's line, or write's)
    calls = {"n": 0}

    def full_after_two(self: jsonl.JsonlWriter, line: str, *, sync: bool = True) -> int:
        calls["n"] += 1
        if calls["n"] == 3:
            self._fh.write(line[:40])  # a torn line, as a full disk leaves it
            self._fh.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        return real_write(self, line, sync=sync)

    monkeypatch.setattr(jsonl.JsonlWriter, "write_line", full_after_two)
    assert score(ticketing, ticketing / "rollouts.jsonl", out) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err
    assert "--resume" in err
    assert "Traceback" not in err
    monkeypatch.setattr(jsonl.JsonlWriter, "write_line", real_write)
    assert score(ticketing, ticketing / "rollouts.jsonl", out, "--resume") == 0
    assert out.read_text() == clean.read_text()


def test_an_unwritable_output_folder_is_exit_2(
    ticketing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def read_only(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))

    monkeypatch.setattr(Path, "mkdir", read_only)
    assert score(ticketing, ticketing / "rollouts.jsonl", tmp_path / "ro" / "records.jsonl") == 2
    err = capsys.readouterr().err
    assert "Read-only file system" in err
    assert "writable folder" in err
