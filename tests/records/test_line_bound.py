"""records.line_bound: a rollout or record row past the written-line bound is cut to fit (texts first, the calls'
arguments only when needed), noted in its metadata, and read back by the run's own reader (issue 45, item 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from prefix_exec.records.jsonl import MAX_LINE_CHARS, iter_json_lines
from prefix_exec.records.line_bound import MAX_WRITTEN_BYTES, MIN_KEPT_CHARS, NOTE, bounded_line


def rollout_row(answers: list[str], arguments: str = "sam") -> dict[str, Any]:
    """A rollout row whose transcript holds ``answers`` (one assistant message each, with a tool call) and one
    action whose ``username`` argument is ``arguments``."""
    transcript: list[dict[str, Any]] = [{"role": "user", "content": "log in"}]
    for i, answer in enumerate(answers):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "login", "arguments": '{"username": "sam"}'}}
        transcript += [{"role": "assistant", "content": answer, "tool_calls": [call]}]
    action = {"name": "login", "arguments": {"username": arguments}, "turn": 0, "raw": '{"username": "sam"}'}
    return {
        "kind": "rollout",
        "dataset": "d",
        "task_id": "t",
        "model": "m",
        "method": "react",
        "trial": 0,
        "actions": [action],
        "transcript": transcript,
        "metadata": {"method": "react"},
    }


def test_a_row_under_the_bound_is_written_as_it_is() -> None:
    row = rollout_row(["a" * 5_000] * 3)
    before = json.dumps(row)
    line = bounded_line(row)
    assert line is not None and json.loads(line) == json.loads(before) and NOTE not in row["metadata"]


def test_many_answers_of_a_million_characters_fit_and_read_back(tmp_path: Path) -> None:
    """Real size: 70 answers of 1,000,000 characters (the per-answer cut), some with text JSON escapes, some
    not ASCII: 75 MB as written before, past the 64 MiB readers take; now one line under the bound."""
    answers = ["x" * 1_000_000] * 50 + ["é\n" * 500_000] * 10 + ['"\\' * 500_000] * 10
    row = rollout_row(answers)
    assert len(json.dumps(row, ensure_ascii=False).encode()) > MAX_LINE_CHARS
    line = bounded_line(row)
    assert line is not None and len(line.encode()) <= MAX_WRITTEN_BYTES
    (tmp_path / "rollouts.jsonl").write_text(line + "\n", encoding="utf-8")
    [(_, back)] = list(iter_json_lines(tmp_path / "rollouts.jsonl"))
    note = back["metadata"][NOTE]
    assert note["bound"] == MAX_WRITTEN_BYTES and note["bytes"] > MAX_LINE_CHARS
    assert note["texts_cut"] == 70 and note["arguments_cut"] is False
    kept = [m["content"] for m in back["transcript"][1:]]
    assert all(text.endswith("more characters cut by prefix-exec: line_bound]") for text in kept)
    assert [text[:10] for text in kept] == [text[:10] for text in answers]  # each answer's start is kept
    assert note["characters_cut"] == sum(len(a) for a in answers) - sum(len(k.split("... [")[0]) for k in kept)
    assert back["actions"] == row["actions"]  # replay's input is untouched


def test_arguments_are_cut_only_when_texts_are_not_enough() -> None:
    row = rollout_row(["short answer"], arguments="y" * 200_000)
    line = bounded_line(row, 100_000)
    assert line is not None and len(line.encode()) <= 100_000
    back = json.loads(line)
    assert back["metadata"][NOTE]["arguments_cut"] is True
    assert back["actions"][0]["arguments"]["username"].startswith("y" * MIN_KEPT_CHARS)


def test_a_row_of_numbers_cannot_be_made_to_fit() -> None:
    row = rollout_row([])
    row["metadata"]["numbers"] = list(range(50_000))
    assert bounded_line(row, 100_000) is None


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 30_000), min_size=1, max_size=12),
    alphabet=st.sampled_from(["x", "é", "\n", '"', "\u0001", "日本"]),
    limit=st.integers(20_000, 400_000),
)
def test_a_cut_line_fits_and_keeps_each_texts_start(lengths: list[int], alphabet: str, limit: int) -> None:
    answers = [alphabet * n for n in lengths]
    row = rollout_row(answers)
    line = bounded_line(row, limit)
    if line is None:  # only when even texts of MIN_KEPT_CHARS would not fit
        assert len(answers) * MIN_KEPT_CHARS * 6 > limit // 2
        return
    assert len(line.encode()) <= limit
    back = json.loads(line)
    for original, kept in zip(answers, (m["content"] for m in back["transcript"][1:]), strict=True):
        assert kept == original or (kept.startswith(original[: len(kept.split("... [")[0])]) and len(kept) > 0)
