"""Transcripts in every form: detection, files and wrappers, call ids as harnesses write them, each reader's
own fields, and the same conversations read from examples/transcripts in every form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.errors import InputError
from prefix_exec.importers.transcripts import (
    READERS,
    Identity,
    Transcript,
    TranscriptFile,
    read_batch,
    transcript_of,
)
from prefix_exec.importers.transcripts.formats import detect
from prefix_exec.records.codec import call_to_json
from prefix_exec.trajectory import Observation, Skipped

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "transcripts"
#: Each example file and the form it holds.
FORMS = {
    "openai-chat.jsonl": "openai-chat",
    "openai-responses.jsonl": "openai-responses",
    "anthropic.jsonl": "anthropic",
    "langchain.json": "langchain",
    "tau-bench.json": "tau-bench",
}
IDENTITY = Identity({}, {"model": "m"}, {"method": "default", "trial": 0, "dataset": "d"})


def read(path: Path, *, format: str | None = None, tolerant: bool = False) -> list[Transcript | InputError]:
    return list(TranscriptFile(path, IDENTITY, format=format, tolerant=tolerant))


def transcripts(path: Path, **options: Any) -> list[Transcript]:
    got = read(path, **options)
    assert all(isinstance(t, Transcript) for t in got), got
    return [t for t in got if isinstance(t, Transcript)]


def calls(transcript: Transcript) -> list[dict[str, Any]]:
    """The actions as records keep them, without the observation's error flag (a form may have none)."""
    rows = [call_to_json(a) for a in transcript.rollout.actions]
    for row in rows:
        row.get("observation", {}).pop("error", None)
    return rows


# -- the same conversations in every form ---------------------------------------------------------------


@pytest.mark.parametrize("name", list(FORMS))
def test_every_form_of_the_examples_reads_as_the_chat_file(name: str) -> None:
    """Same actions (names, arguments, turns, ids, replies), same identity and Y, in every form."""
    want = transcripts(EXAMPLES / "openai-chat.jsonl")
    file = TranscriptFile(EXAMPLES / name, IDENTITY, tolerant=False)
    got = [t for t in file if isinstance(t, Transcript)]
    assert file.format == FORMS[name] and file.read == len(got) == 7
    assert {t.format for t in got} == {FORMS[name]}
    for mine, chat in zip(got, want, strict=True):
        assert (mine.rollout.task_id, mine.rollout.success) == (chat.rollout.task_id, chat.rollout.success)
        assert calls(mine) == calls(chat)


def test_error_flags_are_read_where_the_form_has_one() -> None:
    """cancel-2's second call was refused: Chat, Responses and tau-bench have no flag, Anthropic and LangChain
    flag it (as the example converter sets them), and flag the others as not errors where the form says so."""
    flags = {}
    for name in FORMS:
        cancel_2 = transcripts(EXAMPLES / name)[1].rollout
        flags[name] = [a.observation.error if a.observation else "none" for a in cancel_2.actions]
    assert flags == {
        "openai-chat.jsonl": [None, None, None],
        "openai-responses.jsonl": [None, None, None],
        "tau-bench.json": [None, None, None],
        "anthropic.jsonl": [None, True, None],
        "langchain.json": [False, True, False],
    }


def test_the_transcript_keeps_every_message() -> None:
    (first, *_) = transcripts(EXAMPLES / "openai-chat.jsonl")
    transcript = first.rollout.transcript
    assert transcript is not None
    assert [m["role"] for m in transcript] == ["system", "user", *["assistant", "tool"] * 3, "assistant"]
    assert transcript[2]["tool_calls"] == [
        {"id": "call_a1", "name": "find_order", "arguments": '{"email": "sam@example.com"}'}
    ]
    assert transcript[3] == {"role": "tool", "tool_call_id": "call_a1", "content": '{"order_id": "O-1001"}'}


# -- detection -------------------------------------------------------------------------------------------


def chat(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"task_id": "t", "success": 1, "messages": list(messages), **fields}


def use(call_id: str, name: str = "f", **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def result(call_id: str, content: Any = "ok", **more: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **more}


@pytest.mark.parametrize(
    ("record", "found"),
    [
        ({"traj": []}, ("tau-bench", True)),
        (chat({"type": "human", "data": {"content": "hi"}}), ("langchain", True)),
        (chat({"role": "assistant", "content": [use("a")]}), ("anthropic", True)),
        (chat({"role": "user", "content": "hi"}, system="be brief"), ("anthropic", True)),
        (chat({"role": "user", "content": "hi"}, tools=[{"name": "f", "input_schema": {}}]), ("anthropic", True)),
        (chat({"role": "assistant", "tool_calls": []}), ("openai-chat", True)),
        (chat({"role": "tool", "tool_call_id": "a"}), ("openai-chat", True)),
        (chat({"role": "system", "content": "s"}), ("openai-chat", True)),
        (chat({"role": "user", "content": "hi"}), ("openai-chat", False)),  # plain text reads the same
        ({"input": [{"type": "function_call"}]}, ("openai-responses", True)),
        ({"input": "hi", "output": []}, ("openai-responses", True)),
        ({"input": "What is 2 + 2?", "target": "4"}, (None, False)),  # a data set's sample, not a transcript
        ({"messages": "hi"}, (None, False)),
        ([], (None, False)),
    ],
)
def test_the_shape_of_a_record_says_its_form(record: Any, found: tuple[str | None, bool]) -> None:
    assert detect(record) == found


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


ANTHROPIC = chat(
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": [use("a", x=1)]},
    {"role": "user", "content": [result("a")]},
)
PLAIN = chat({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"})
CHAT = chat({"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]})


def test_the_first_record_that_shows_a_form_decides_the_file(tmp_path: Path) -> None:
    """Plain-text records before it read the same either way; a later record of another form is an error for
    that record only (the file holds one form)."""
    path = write(tmp_path / "t.jsonl", [PLAIN, ANTHROPIC, PLAIN, CHAT, ANTHROPIC])
    file = TranscriptFile(path, IDENTITY, tolerant=True)
    got = list(file)
    assert file.format == "anthropic"
    assert [type(t).__name__ for t in got] == ["Transcript", "Transcript", "Transcript", "InputError", "Transcript"]
    error = got[3]
    assert isinstance(error, InputError)
    assert error.line == 4
    assert "the record is OpenAI Chat, but the file's first records are Anthropic Messages (line 2)" in error.message
    assert "--format" in (error.hint or "")


def test_format_forces_a_form_and_says_when_a_record_is_of_another(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", [PLAIN, ANTHROPIC])
    plain, anthropic = read(path, format="openai-chat", tolerant=True)
    assert isinstance(plain, Transcript) and plain.format == "openai-chat"
    assert isinstance(anthropic, InputError)
    assert "read as OpenAI Chat (--format), but the record is Anthropic Messages" in anthropic.message
    with pytest.raises(InputError, match="unknown transcript format 'xml'"):
        TranscriptFile(path, IDENTITY, format="xml", tolerant=False)


@pytest.mark.parametrize(
    ("document", "found", "hint"),
    [
        ({"tasks": [], "simulations": [{"id": "s"}]}, "an object with keys tasks, simulations", "score tau"),
        ({"eval": {}, "samples": []}, "an object with keys eval, samples", "score inspect"),
        ([{"role": "user", "content": "hi"}], "a list of 1 items (objects with a role", "a bare list of messages"),
        ({"role": "user", "content": "hi"}, "an object with keys role, content", "one message, not a conversation"),
        ({"messages": {"a": 1}}, "an object with keys messages", "'messages' must be a list"),
        (42, "a number", "force a form with --format"),
        ({"data": [1, 2]}, "an object with keys data", "force a form with --format"),
    ],
)
def test_a_file_of_no_transcript_form_says_what_it_found_and_what_is_read(
    tmp_path: Path, document: Any, found: str, hint: str
) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError) as info:
        read(path)
    assert f"found {found}" in info.value.message
    for label in (r.label for r in READERS.values()):
        assert label in info.value.message
    assert hint in (info.value.hint or "")


def test_a_json_file_that_is_not_utf8_is_an_input_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b"\xff\xfe[" + json.dumps(CHAT).encode() + b"]")
    with pytest.raises(InputError) as info:
        read(path)
    assert info.value.path is not None and Path(info.value.path) == path
    assert "not UTF-8 text" in info.value.message


def test_a_jsonl_record_of_no_form_before_any_form_is_known_is_its_own_error(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", [{"task_id": "x", "success": 1}, CHAT, {"task_id": "y", "success": 1}])
    first, good, third = read(path, tolerant=True)
    assert isinstance(first, InputError) and "not a transcript in any form read here" in first.message
    assert isinstance(good, Transcript)
    assert isinstance(third, InputError) and third.detail() == "field 'messages': missing"  # read as the file's form
    assert third.hint is not None and third.hint.startswith('read as OpenAI Chat, whose records are {"messages"')


# -- files: JSONL, lists, wrappers -------------------------------------------------------------------------


def keys(items: list[Transcript]) -> list[tuple[str, str]]:
    return [(t.rollout.task_id, t.rollout.metadata["source"]) for t in items]


def test_jsonl_a_json_list_and_jsonl_named_json_read_the_same(tmp_path: Path) -> None:
    rows = [{**CHAT, "task_id": f"t{i}"} for i in range(3)]
    jsonl = transcripts(write(tmp_path / "a.jsonl", rows))
    (tmp_path / "b.json").write_text(json.dumps(rows))
    listed = transcripts(tmp_path / "b.json")
    lines = transcripts(write(tmp_path / "c.json", rows))  # JSON Lines in a .json file
    assert (
        [t.rollout.actions for t in jsonl] == [t.rollout.actions for t in listed] == [t.rollout.actions for t in lines]
    )
    assert keys(jsonl) == [("t0", "a.jsonl:1"), ("t1", "a.jsonl:2"), ("t2", "a.jsonl:3")]
    assert keys(listed) == [("t0", "b.json[0]"), ("t1", "b.json[1]"), ("t2", "b.json[2]")]
    assert keys(lines) == [("t0", "c.json:1"), ("t1", "c.json:2"), ("t2", "c.json:3")]
    (tmp_path / "one.json").write_text(json.dumps(rows[0]))
    assert keys(transcripts(tmp_path / "one.json")) == [("t0", "one.json")]


def test_objects_that_wrap_lists_are_read_list_by_list(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    rows = [{**CHAT, "task_id": f"t{i}"} for i in range(3)]
    wrapper = {"version": 2, "tags": ["a"], "splits": {"train": rows[:2], "test": rows[2:]}, "meta": {"n": 3}}
    path.write_text(json.dumps(wrapper))
    assert keys(transcripts(path)) == [
        ("t0", "w.json:splits.train[0]"),
        ("t1", "w.json:splits.train[1]"),
        ("t2", "w.json:splits.test[0]"),
    ]
    path.write_text(json.dumps({"data": [rows[0], {"task_id": "bad"}]}))
    good, bad = read(path, tolerant=True)
    assert isinstance(good, Transcript)
    assert isinstance(bad, InputError) and bad.field == "data[1].messages"


# -- call ids as harnesses write them ------------------------------------------------------------------


def openai_call(call_id: str, name: str = "f") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_an_id_reused_after_its_reply_pairs_in_order() -> None:
    """tau-bench's gpt-4o run reuses ids this way: each reply comes before the id is used again."""
    record = chat(
        {"role": "assistant", "tool_calls": [openai_call("x", "f")]},
        {"role": "tool", "tool_call_id": "x", "content": "first"},
        {"role": "assistant", "tool_calls": [openai_call("x", "g")]},
        {"role": "tool", "tool_call_id": "x", "content": "second"},
    )
    actions = transcript_of(record, IDENTITY, path="t.jsonl").rollout.actions
    assert [(a.name, a.call_id, a.observation) for a in actions] == [
        ("f", "x", Observation("first")),
        ("g", "x", Observation("second")),
    ]


@pytest.mark.parametrize(
    ("messages", "field", "fragment"),
    [
        (  # two calls waiting under one id: the reply could answer either
            [
                {"role": "assistant", "tool_calls": [openai_call("x", "f"), openai_call("x", "g")]},
                {"role": "tool", "tool_call_id": "x", "content": "?"},
            ],
            "messages[1].tool_call_id",
            "could answer 2 calls with the id 'x' (actions 1, 2)",
        ),
        (  # a second reply to an answered call
            [
                {"role": "assistant", "tool_calls": [openai_call("x")]},
                {"role": "tool", "tool_call_id": "x", "content": "1"},
                {"role": "tool", "tool_call_id": "x", "content": "2"},
            ],
            "messages[2].tool_call_id",
            "the call with the id 'x' was already answered",
        ),
    ],
)
def test_a_reply_that_could_belong_to_two_calls_or_none_is_refused(
    messages: list[dict[str, Any]], field: str, fragment: str
) -> None:
    with pytest.raises(InputError) as info:
        transcript_of(chat(*messages), IDENTITY, path="t.jsonl", line=3)
    assert (info.value.line, info.value.field) == (3, field)
    assert fragment in info.value.message


def test_two_calls_with_one_id_are_fine_while_nothing_answers_them() -> None:
    record = chat({"role": "assistant", "tool_calls": [openai_call("x", "f"), openai_call("x", "g")]})
    actions = transcript_of(record, IDENTITY, path="t.jsonl").rollout.actions
    assert [(a.name, a.observation) for a in actions] == [("f", None), ("g", None)]


def test_a_batch_reads_a_file_as_its_records_are_read_one_by_one(tmp_path: Path) -> None:
    """read_batch (a worker's reading of a whole file) gives each record's rollout as reading the file does, the
    record of another form as its unreadable unit (--keep-going) or the error that stops the reading, and the
    file's note. Oracle: TranscriptFile read record by record."""
    path = write(tmp_path / "t.jsonl", [PLAIN, ANTHROPIC, PLAIN, CHAT, ANTHROPIC])
    units, error, note = read_batch(str(path), IDENTITY, None, True)
    oracle = TranscriptFile(path, IDENTITY, tolerant=True)
    expected = list(oracle)
    assert (
        error is None
        and note == oracle.note() == f"prefix-exec: note: {path}: 4 conversations read as Anthropic Messages (detected)"
    )
    assert len(units) == len(expected) == 5
    for unit, want in zip(units, expected, strict=True):
        if isinstance(want, InputError):
            assert isinstance(unit, Skipped) and unit.where == f"{path}:4" and "first records are" in unit.error
        else:
            assert not isinstance(unit, Skipped) and unit() == want.rollout
    units, error, note = read_batch(str(path), IDENTITY, None, False)
    assert len(units) == 3 and note is None
    assert isinstance(error, InputError) and error.line == 4
    assert read_batch(str(tmp_path / "t.jsonl"), IDENTITY, "anthropic", True)[2] == (
        f"prefix-exec: note: {path}: 4 conversations read as Anthropic Messages (--format)"
    )
