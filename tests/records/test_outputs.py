"""records.outputs: an output that is an input, a special file, or a link is refused or never written through."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from prefix_exec.errors import InputError
from prefix_exec.records import outputs


def test_an_input_by_path_symlink_or_hard_link_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("input\n")
    (tmp_path / "soft.jsonl").symlink_to(source)
    os.link(source, tmp_path / "hard.jsonl")
    (tmp_path / "sub").mkdir()
    for out in ("in.jsonl", "soft.jsonl", "hard.jsonl", "sub/../in.jsonl"):
        with pytest.raises(InputError) as info:
            outputs.write_text(tmp_path / out, "output", [source])
        assert "also an input of this command" in info.value.message
        assert str(source) in info.value.message  # both paths named: the output as the error's path
        assert info.value.path == str(tmp_path / out)
    # an input given through a symlink is found from its target too
    with pytest.raises(InputError):
        outputs.check_file(source, [tmp_path / "soft.jsonl"])
    assert source.read_text() == "input\n"


def test_special_files_are_refused_without_being_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    (tmp_path / "dir").mkdir()
    (tmp_path / "to-fifo").symlink_to(fifo)
    kinds = {"fifo": "a FIFO", "sock": "a socket", "dir": "a folder", "to-fifo": "a FIFO"}
    try:
        for name, kind in kinds.items():
            with pytest.raises(InputError) as info:
                outputs.write_text(tmp_path / name, "x")  # a FIFO opened for writing would block here
            assert f"--out is {kind}, not a regular file" in info.value.message
        with pytest.raises(InputError, match="a character device"):
            outputs.check_file("/dev/null", option="--out")
    finally:
        server.close()


def test_text_is_renamed_into_place_so_other_names_keep_theirs(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "er" / "out.md"
    assert outputs.write_text(out, "first \udcff") == out  # parents made; a lone surrogate escaped, not fatal
    assert out.read_text() == "first \\udcff"
    os.link(out, tmp_path / "other-name")
    outputs.write_text(out, "second")
    assert out.read_text() == "second"
    assert (tmp_path / "other-name").read_text() == "first \\udcff"  # the old inode was not written in place
    assert sorted(p.name for p in out.parent.iterdir()) == ["out.md"]  # no temporary file left behind


def test_a_symlink_output_writes_its_target(tmp_path: Path) -> None:
    target = tmp_path / "target.md"
    target.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    assert outputs.write_text(link, "new") == target
    assert link.is_symlink() and target.read_text() == "new"


def test_a_failed_rename_leaves_the_target_and_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()  # a folder appeared at the name after the checks: the rename fails
    (target / "x").write_text("kept")
    with pytest.raises(InputError, match="cannot write"):
        outputs.write_new(target, b"new")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"] and (target / "x").read_text() == "kept"


def test_an_interrupted_write_leaves_the_target_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while a file is written: the hidden temporary once stayed, and a report folder holding it was
    then refused as not ours."""
    target = tmp_path / "report.md"
    target.write_text("old")

    def interrupted(descriptor: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        outputs.write_new(target, b"new")
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]
    assert target.read_text() == "old"


def test_inputs_inside_a_folder_are_found_by_name_link_or_inode(tmp_path: Path) -> None:
    source = tmp_path / "records.jsonl"
    source.write_text("r\n")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "plain.txt").write_text("not an input")
    (folder / "sub").mkdir()
    known = outputs.Inputs.of([source, folder / "in.jsonl", tmp_path / "missing.jsonl"])
    assert known.inside(folder) == []
    os.link(source, folder / "summary.json")
    (folder / "figure1.svg").symlink_to(source)
    (folder / "in.jsonl").write_text("i\n")
    known = outputs.Inputs.of([source, folder / "in.jsonl"])
    assert known.inside(folder) == [
        (folder / "figure1.svg", source),
        (folder / "in.jsonl", folder / "in.jsonl"),
        (folder / "summary.json", source),
    ]
