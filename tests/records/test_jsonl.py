"""JSONL edge cases: text UTF-8 cannot hold, JSON Python cannot parse, files that are not files."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from prefix_exec.errors import InputError
from prefix_exec.records import jsonl
from prefix_exec.records.jsonl import JsonlWriter, completed_keys, iter_json_lines


def unit(task: str, **extra: object) -> dict[str, object]:
    return {"dataset": "d", "task_id": task, "model": "m", "method": "x", "trial": 0, **extra}


def test_lone_surrogates_are_escaped_and_read_back_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    row = unit("t\ud800", arguments={"k\udfff": "v\ud83d"}, text="ok é")
    with JsonlWriter(path, append=False) as out:
        out.write(row)
        out.write(unit("plain", text="é"))
    raw = path.read_bytes()
    raw.decode("utf-8")  # valid UTF-8 on disk
    assert b"\\ud800" in raw
    assert "é".encode() in raw  # escaped only where needed
    assert [data for _, data in iter_json_lines(path)] == [row, unit("plain", text="é")]


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("[" * 200_000 + "]" * 200_000, "nested too deeply"),
        ('{"T": ' + "9" * 5000 + "}", "digits"),
        ('{"a": ' * 5000 + "1" + "}" * 5000, "nested too deeply"),
    ],
)
def test_json_python_cannot_hold_is_an_error_naming_the_line(tmp_path: Path, line: str, fragment: str) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(unit("good")) + "\n" + line + "\n" + json.dumps(unit("after")) + "\n")
    with pytest.raises(InputError) as caught:
        list(iter_json_lines(path))
    assert caught.value.line == 2
    assert fragment in caught.value.message
    rows = list(iter_json_lines(path, tolerant=True))
    assert [n for n, d in rows if isinstance(d, InputError)] == [2]
    assert [d["task_id"] for _, d in rows if isinstance(d, dict)] == ["good", "after"]


def test_an_over_long_line_is_one_bad_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_CHARS", 1000)
    path = tmp_path / "rows.jsonl"
    path.write_text(
        json.dumps(unit("good"))
        + "\n"
        + json.dumps(unit("big", pad="x" * 5000))
        + "\n"
        + json.dumps(unit("after"))
        + "\n"
    )
    rows = list(iter_json_lines(path, tolerant=True))
    assert [(n, type(d).__name__) for n, d in rows] == [(1, "dict"), (2, "InputError"), (3, "dict")]
    assert "longer than" in rows[1][1].message


def test_a_line_that_is_not_utf8_is_that_lines_error_only(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    good, after = json.dumps(unit("good")).encode(), json.dumps(unit("after")).encode()
    path.write_bytes(good + b"\n" + b'{"task_id": "\xff\xfe"}\n' + after + b"\n")
    rows = list(iter_json_lines(path, tolerant=True))
    assert [(n, type(d).__name__) for n, d in rows] == [(1, "dict"), (2, "InputError"), (3, "dict")]
    error = rows[1][1]
    assert (error.line, Path(error.path)) == (2, path)
    assert "not UTF-8 text (invalid start byte at byte 13 of the line)" in error.message
    with pytest.raises(InputError) as info:  # not tolerant: the first bad line is the error
        list(iter_json_lines(path))
    assert info.value.line == 2


def test_devices_and_fifos_are_refused_without_reading(tmp_path: Path) -> None:
    link = tmp_path / "zero.jsonl"
    link.symlink_to("/dev/zero")
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for path in (link, fifo):
        with pytest.raises(InputError, match="not a regular file"):
            list(iter_json_lines(path))
        with pytest.raises(InputError, match="not a regular file"):
            completed_keys(path)
    with pytest.raises(InputError, match="directory"):
        list(iter_json_lines(tmp_path))


def test_resume_onto_a_rollouts_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.jsonl"
    path.write_text(json.dumps(unit("t", kind="rollout")) + "\n")
    assert completed_keys(path) == {("d", "t", "m", "x", 0)}  # the runner's own rollouts log
    with pytest.raises(InputError, match="rollout row, not a record") as caught:
        completed_keys(path, kind="record")
    assert caught.value.line == 1
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(unit("t", kind="record")) + "\n" + json.dumps(unit("u")) + "\n")
    assert completed_keys(records, kind="record") == {("d", "t", "m", "x", 0), ("d", "u", "m", "x", 0)}


def test_resume_onto_an_output_with_a_line_that_is_not_utf8_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_bytes(json.dumps(unit("good")).encode() + b"\n\xff\xfe\n")
    with pytest.raises(InputError) as info:
        completed_keys(path)
    assert info.value.line == 2
    assert info.value.message.startswith("cannot resume: not UTF-8 text")


def test_a_byte_order_mark_opening_the_file_is_skipped(tmp_path: Path) -> None:
    # RFC 8259 lets a reader ignore a BOM; Windows tools (PowerShell 5's utf8) write one, and json.loads
    # refused the first record for it ("Unexpected UTF-8 BOM (decode using utf-8-sig)").
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\r\n{"b": 2}\r\n')
    assert list(iter_json_lines(path)) == [(1, {"a": 1}), (2, {"b": 2})]


def test_a_byte_order_mark_inside_the_file_is_that_lines_error(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'{"a": 1}\n\xef\xbb\xbf{"b": 2}\n')
    rows = list(iter_json_lines(path, tolerant=True))
    assert rows[0] == (1, {"a": 1}) and isinstance(rows[1][1], InputError)


def _failure(task: str, error: str) -> str:
    return json.dumps({"dataset": "d", "task_id": task, "model": "m", "method": "react", "trial": 0, "error": error})


def test_latest_by_unit_passes_over_lines_no_reader_takes(tmp_path: Path) -> None:
    # a failures.jsonl beside the records `metrics` reads: a line nested 100,000 deep ended `metrics` in a
    # RecursionError traceback, and a line that is not UTF-8 lost the whole file
    path = tmp_path / "failures.jsonl"
    lines = [
        _failure("a", "first").encode(),
        b"[" * 100_000 + b"]" * 100_000,
        b'{"task_id": "\xff\xfe"}',
        ('{"dataset": "d", "task_id": "b", "model": "m", "method": "react", "trial": ' + "9" * 5000 + "}").encode(),
        _failure("a", "latest").encode(),
        _failure("c", "only").encode(),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    found = jsonl.latest_by_unit(path)
    assert list(found.values()) == [_failure("a", "latest") + "\n", _failure("c", "only") + "\n"]
    assert jsonl.latest_by_unit(tmp_path / "absent.jsonl") == {}


def test_latest_by_unit_refuses_a_fifo_unopened(tmp_path: Path) -> None:
    path = tmp_path / "failures.jsonl"
    os.mkfifo(path)
    # a writer that opens the FIFO only once a reader has: before the fix, the reader then saw no line at all
    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                return
            except OSError:
                stop.wait(0.01)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        with pytest.raises(InputError, match="not a regular file"):
            jsonl.latest_by_unit(path)
    finally:
        stop.set()
        writer.join()
