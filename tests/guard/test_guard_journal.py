"""The append-only journal (``--record DIR``) and its folder: each call is one appended line whatever the
connection's length, the derived files are the lines the live connection makes, and nothing planted in the folder
is followed, read or waited on (issue 45, item 4)."""

from __future__ import annotations

import itertools
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.errors import InputError
from prefix_exec.guard.bounds import HEAD_CHARS, RESULT_CHARS
from prefix_exec.guard.journal import Journal
from prefix_exec.guard.log import ConnectionLog
from prefix_exec.guard.shadow import Shadow
from prefix_exec.trajectory import Observation, ToolCall

TOOLS = [
    {"name": "create_note", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "append_note", "inputSchema": {"type": "object", "properties": {"note_id": {"type": "string"}}}},
]
SIDE = "tools:\n  create_note: {produces: {note: note_id}}\n  append_note: {refs: {note_id: note}}\n"


def connection(tmp_path: Path, sid: str) -> tuple[Shadow, ConnectionLog]:
    side = tmp_path / "side.yaml"
    side.write_text(SIDE)
    shadow = Shadow(tmp_path / "tools.json", hooks=side)
    shadow.begin_listing()
    assert shadow.add_page({"tools": TOOLS})
    return shadow, ConnectionLog(sid, method="guard-enforce", info={"session": sid, "mode": "enforce"})


def play(shadow: Shadow, log: ConnectionLog, name: str, result: Any, **arguments: Any) -> None:
    call = ToolCall(name, arguments, call_id=str(len(log.actions)))
    verdict = shadow.check(call)
    if verdict.accepted:
        verdict = shadow.settle(call, Observation(result))
    log.add(ToolCall(name, arguments, call_id=call.call_id, observation=Observation(result)), verdict, {})


def journal_file(folder: Path) -> Path:
    (path,) = (folder / "journal").iterdir()
    return path


def test_each_call_appends_one_line_and_the_derived_files_are_the_live_lines(tmp_path: Path) -> None:
    folder = tmp_path / "record"
    journal = Journal(folder, secrets=["hunter2-secret"])
    shadow, log = connection(tmp_path, "s-1")
    sizes = []
    play(shadow, log, "append_note", "?", note_id="N-9")  # refused: FED 1
    for i in range(30):
        play(shadow, log, "create_note", {"note_id": f"N-{i}"}, text=f"hunter2-secret {i}")
        journal.update(log.snapshot("notes", None))
        sizes.append(journal_file(folder).stat().st_size)
        if i == 0:
            first = journal_file(folder).read_bytes()
    growth = [b - a for a, b in itertools.pairwise(sizes[1:])]
    assert max(growth) - min(growth) < 8  # one line per call, the same size however long the connection
    assert journal_file(folder).read_bytes().startswith(first)  # append-only: what was written is never rewritten
    assert not (folder / "rollouts.jsonl").exists()  # derived at close, not per call
    log.end("the client closed the session")
    journal.update(log.snapshot("notes", None))
    journal.close()
    rollout, record = (folder / "rollouts.jsonl").read_text(), (folder / "records.jsonl").read_text()
    live = log.snapshot("notes", None).lines()
    assert json.loads(record)["fed"] == 1 and json.loads(record)["T"] == 31
    assert "hunter2-secret" not in rollout + record + journal_file(folder).read_text()
    assert json.loads(rollout)["actions"][1:] == [
        {**a, "arguments": {"text": a["arguments"]["text"].replace("hunter2-secret", "***")}}
        for a in json.loads(live[0])["actions"][1:]
    ]
    # Derived again from the journal, by the command a user runs after a kill: the same files.
    assert main(["guard", "--rebuild", str(folder)]) == 0
    assert (folder / "rollouts.jsonl").read_text() == rollout and (folder / "records.jsonl").read_text() == record


def test_two_guards_in_one_folder_keep_each_others_lines_and_earlier_runs(tmp_path: Path) -> None:
    folder = tmp_path / "record"
    folder.mkdir()
    (folder / "rollouts.jsonl").write_text('{"dataset": "old", "task_id": "earlier run"}\n')
    first, second = Journal(folder), Journal(folder)
    for journal, sid in ((first, "a"), (second, "b"), (first, "c")):
        shadow, log = connection(tmp_path, sid)
        play(shadow, log, "create_note", {"note_id": "N-1"}, text="x")
        journal.update(log.snapshot("notes", None))
    first.add_tools(TOOLS)
    threads = [threading.Thread(target=j.close) for j in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = [json.loads(line) for line in (folder / "rollouts.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == ["a", "b", "c", "earlier run"]
    assert len((folder / "records.jsonl").read_text().splitlines()) == 3
    assert [t["name"] for t in json.loads((folder / "tools.json").read_text())["tools"]] == [
        "create_note",
        "append_note",
    ]


def test_a_result_over_the_bound_is_kept_truncated_with_its_size_and_hash(tmp_path: Path) -> None:
    import hashlib

    folder = tmp_path / "record"
    journal = Journal(folder)
    shadow, log = connection(tmp_path, "big")
    huge = "é" * (RESULT_CHARS + 10)
    for _ in range(3):
        play(shadow, log, "create_note", huge, text="x")
    journal.update(log.snapshot("notes", None))
    journal.close()
    (rollout,) = [json.loads(line) for line in (folder / "rollouts.jsonl").read_text().splitlines()]
    (record,) = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    kept = rollout["actions"][0]["observation"]["content"]
    digest = hashlib.sha256(huge.encode()).hexdigest()
    assert kept.startswith("é" * HEAD_CHARS) and digest in kept and len(kept) < HEAD_CHARS + 300
    cut = record["metadata"]["guard"]["calls"][0]["truncated"]
    assert cut == {"chars": len(huge), "bytes": len(huge.encode()), "sha256": digest}
    assert (folder / "rollouts.jsonl").stat().st_size < 100_000


def plant(kind: str, path: Path, outside: Path) -> None:
    if kind == "link":
        path.symlink_to(outside)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_bytes(b'{"a": "\xff\xfe"}\n')


@pytest.mark.parametrize("kind", ["link", "fifo", "folder", "not-utf8"])
@pytest.mark.parametrize("name", ["rollouts.jsonl", "records.jsonl", "tools.json", ".guard.lock", "journal"])
def test_anything_planted_at_one_of_our_names_is_refused_unread(tmp_path: Path, kind: str, name: str) -> None:
    folder, outside = tmp_path / "record", tmp_path / "outside.jsonl"
    folder.mkdir()
    outside.write_text('{"canary": "outside content"}\n')
    plant(kind, folder / name, outside)
    if (name == "journal" and kind == "folder") or (name == ".guard.lock" and kind == "not-utf8"):
        journal = Journal(folder)  # a journal folder, and a lock file whatever it holds, are ours to use
        shadow, log = connection(tmp_path, "s")
        play(shadow, log, "create_note", {"note_id": "N-1"}, text="x")
        journal.update(log.snapshot("notes", None))
        journal.close()
        assert len((folder / "rollouts.jsonl").read_text().splitlines()) == 1
    else:
        with pytest.raises(InputError) as raised:
            Journal(folder)
        assert name in raised.value.describe() and "record folder" in raised.value.describe()
    assert outside.read_text() == '{"canary": "outside content"}\n'  # never written through
    assert not (tmp_path / "outside.jsonl.tmp").exists()
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 10_000_000:
            assert b"canary" not in path.read_bytes(), path  # never read into the record


def test_a_fifo_planted_after_start_never_hangs_the_guard(tmp_path: Path) -> None:
    folder = tmp_path / "record"
    journal = Journal(folder)
    shadow, log = connection(tmp_path, "s")
    play(shadow, log, "create_note", {"note_id": "N-1"}, text="x")
    journal.update(log.snapshot("notes", None))
    os.mkfifo(folder / "rollouts.jsonl")
    done = threading.Event()
    thread = threading.Thread(target=lambda: (journal.close(), done.set()), daemon=True)
    thread.start()
    assert done.wait(30), "close hung on a FIFO"
    assert journal_file(folder).read_text().count('"action"') == 1  # the journal is whole


def test_a_link_in_place_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "record").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError, match="not a link"):
        Journal(tmp_path / "record")
    assert list((tmp_path / "elsewhere").iterdir()) == []
