"""``score transcripts``: every form of examples/transcripts scores the same, the
published tau-bench file is read whole, and the command says which form it read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "transcripts"
TAU_BENCH = ROOT / "tests" / "data" / "tau-bench"
FILES = ["openai-chat.jsonl", "openai-responses.jsonl", "anthropic.jsonl", "langchain.json", "tau-bench.json"]
#: What examples/transcripts scores to on its tools.json: (task, T, FED, label, Y), the same in every form.
EXPECTED = [
    ("cancel-1", 3, 4, None, 1),
    ("cancel-2", 3, 2, "schema", 1),  # the reason is not in the enum
    ("status-3", 3, 4, None, 1),  # two parallel calls, then a second user turn
    ("status-4", 2, 2, "schema", 0),  # track_package is not a tool
    ("faq-5", 1, 2, None, 1),  # no tool call: executable on a spec that is only a tools list
    ("cancel-6", 2, 1, "dependency", 0),  # refused by the shop ("Error: ... not found"): the recorded outcome
    ("email-7", 1, 1, "schema", 0),  # body is required
]


def published() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((TAU_BENCH / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    return data


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def scored(path: Path) -> list[tuple[Any, ...]]:
    return [(r["task_id"], r["T"], r["fed"], r["label"], r["success"]) for r in rows(path)]


@pytest.mark.parametrize("name", FILES)
def test_the_same_conversations_score_the_same_in_every_form(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    argv = ["score", "transcripts", str(EXAMPLES / name), "--tools", str(EXAMPLES / "tools.json")]
    assert main([*argv, "--model", "gpt-4o-mini", "--out", str(out)]) == 0
    assert scored(out) == EXPECTED
    assert {r["dataset"] for r in rows(out)} == {"tools"}  # the spec's name (its file's stem)
    assert "7 conversations read as" in capsys.readouterr().err


@pytest.mark.parametrize("name", FILES)
def test_without_the_error_pattern_only_a_forms_own_flag_refuses(name: str, tmp_path: Path) -> None:
    """cancel-6's refusals are flagged in the Anthropic and LangChain forms (as those frameworks record a tool
    that raised) and plain text elsewhere: with --no-error-pattern only the flag still rejects the call."""
    out = tmp_path / "out.jsonl"
    argv = ["score", "transcripts", str(EXAMPLES / name), "--tools", str(EXAMPLES / "tools.json")]
    assert main([*argv, "--model", "m", "--no-error-pattern", "--out", str(out)]) == 0
    flagged = name in ("anthropic.jsonl", "langchain.json")
    want = [
        r if r[0] != "cancel-6" else (("cancel-6", 2, 1, "dependency", 0) if flagged else ("cancel-6", 2, 3, None, 0))
        for r in EXPECTED
    ]
    assert scored(out) == want


@pytest.mark.parametrize("name", [f for f in FILES if f != "tau-bench.json"])
def test_each_forms_own_tools_list_serves_as_the_spec(name: str, tmp_path: Path) -> None:
    """Anthropic's input_schema tools and Responses' flat function tools check the same schemas."""
    out = tmp_path / "own.jsonl"
    assert main(["score", "transcripts", str(EXAMPLES / name), "--out", str(out)]) == 0
    assert scored(out) == EXPECTED
    assert {r["dataset"] for r in rows(out)} == {"transcripts"}
    assert all("spec_note" in r["metadata"] for r in rows(out))


def test_the_published_tau_bench_file_scores_all_200_conversations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As published, with the tools of its repository and the model the file does not name."""
    out = tmp_path / "tau-bench.jsonl"
    argv = ["score", "transcripts", str(TAU_BENCH / "gpt-4o-airline.json"), "--out", str(out)]
    assert main([*argv, "--tools", str(TAU_BENCH / "airline-tools.json"), "--model", "gpt-4o"]) == 0
    got = rows(out)
    assert len(got) == 200
    assert [r["success"] for r in got] == [int(r["reward"]) for r in published()]  # Y = reward
    assert sum(r["T"] for r in got if not r["no_tool"]) == 1164
    no_tool = [r for r in got if r["no_tool"]]
    assert len(no_tool) == 18 and all(r["executable"] for r in no_tool)
    for record, conversation in zip(got, published(), strict=True):  # FED never after the first Error reply
        replies = [m["content"] for m in conversation["traj"] if m["role"] == "tool"]
        first = next((k + 1 for k, text in enumerate(replies) if text.startswith("Error")), None)
        assert first is None or record["fed"] <= first
    assert "200 conversations read as tau-bench results (detected)" in capsys.readouterr().err
    required = tmp_path / "required.jsonl"
    tools = ["--tools", str(TAU_BENCH / "airline-tools.json"), "--model", "gpt-4o", "--require-tools"]
    assert main(["score", "transcripts", str(TAU_BENCH / "gpt-4o-airline.json"), *tools, "--out", str(required)]) == 0
    assert [(r["fed"], r["label"]) for r in rows(required) if r["no_tool"]] == [(1, "precondition")] * 18
    assert main([*argv, "--overwrite"]) == 2  # the record names no model: one error per conversation
    err = capsys.readouterr().err
    assert "no model: the conversation has none of model, metadata.model" in err
    assert "--model NAME" in err


def test_score_openai_its_old_name_is_an_unknown_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "openai.jsonl"
    with pytest.raises(SystemExit) as stopped:
        main(["score", "openai", str(EXAMPLES / "anthropic.jsonl"), "--out", str(out)])
    assert stopped.value.code == 2
    assert "argument BENCHMARK: invalid choice: 'openai'" in capsys.readouterr().err
    assert not out.exists()
    assert main(["score", "transcripts", str(EXAMPLES / "anthropic.jsonl"), "--out", str(out)]) == 0
    assert scored(out) == EXPECTED
    assert {r["dataset"] for r in rows(out)} == {"transcripts"}


def test_format_forces_the_form(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    argv = ["score", "transcripts", str(EXAMPLES / "anthropic.jsonl"), "--out", str(out), "--keep-going"]
    assert main([*argv, "--format", "openai-chat"]) == 2
    err = capsys.readouterr().err
    assert "read as OpenAI Chat (--format), but the record is Anthropic Messages" in err
    assert "hint: drop --format" in err
    assert main([*argv, "--format", "anthropic", "--overwrite"]) == 0
    assert "7 conversations read as Anthropic Messages (--format)" in capsys.readouterr().err


def test_a_file_of_no_transcript_form_is_an_input_error_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"info": {}, "tasks": [], "simulations": [{"id": "s1", "messages": []}]}))
    assert main(["score", "transcripts", str(path), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "not a transcript in any form read here: found an object with keys info, tasks, simulations" in err
    assert "hint: this looks like a tau2 results file: prefix-exec score tau FILE" in err
    assert "Traceback" not in err


def test_a_bad_own_tools_list_names_its_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = {"task_id": "t", "model": "m", "success": 1, "messages": [], "tools": [{"function": {"name": 5}}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps([record]))
    assert main(["score", "transcripts", str(path), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "field '[0].tools[0].function.name': expected string, got number" in capsys.readouterr().err


def test_a_file_of_plain_text_conversations_says_how_many_it_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Messages without a tool call show no form decisively (Chat and Anthropic read them alike): they are read
    as Chat, and the note counts them instead of saying that none was read."""
    path = tmp_path / "plain.jsonl"
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    path.write_text(json.dumps({"task_id": "t", "model": "m", "success": 1, "messages": messages, "tools": []}) + "\n")
    out = tmp_path / "o.jsonl"
    assert main(["score", "transcripts", str(path), "--out", str(out)]) == 0
    assert [r["no_tool"] for r in rows(out)] == [True]
    err = capsys.readouterr().err
    assert "1 conversation read as OpenAI Chat" in err
    assert "no conversation read" not in err


def test_keep_going_scores_the_files_after_one_that_is_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"messages":\n')
    good = tmp_path / "good.jsonl"
    record = {"task_id": "t", "model": "m", "success": 1, "messages": [{"role": "user", "content": "hi"}], "tools": []}
    good.write_text(json.dumps(record) + "\n")
    out = tmp_path / "o.jsonl"
    assert main(["score", "transcripts", str(broken), str(good), "--out", str(out), "--keep-going"]) == 2
    assert [r["task_id"] for r in rows(out)] == ["t"]
    err = capsys.readouterr().err
    assert "broken.json:2: not valid JSON" in err and "could not be scored" in err
    assert main(["score", "transcripts", str(broken), str(good), "--out", str(out), "--overwrite"]) == 2
    assert "error: " in capsys.readouterr().err  # without --keep-going the first bad file stops the command


def test_a_conversation_with_no_tool_call_and_no_tools_list_is_one_allowed_no_tool_action(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25 item 4: a Q&A conversation with neither calls nor a tools list is scored (on an empty list, which
    allows finishing without a tool), and fails with --require-tools; one with calls but no list is refused."""
    path = tmp_path / "qa.jsonl"
    messages = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
    path.write_text(json.dumps({"task_id": "q", "model": "m", "success": 1, "messages": messages}) + "\n")
    out = tmp_path / "o.jsonl"
    assert main(["score", "transcripts", str(path), "--out", str(out)]) == 0
    [row] = rows(out)
    assert (row["T"], row["fed"], row["no_tool"]) == (1, 2, True)
    strict = tmp_path / "strict.jsonl"
    assert main(["score", "transcripts", str(path), "--require-tools", "--out", str(strict)]) == 0
    [row] = rows(strict)
    assert (row["T"], row["fed"]) == (1, 1)
    calls = tmp_path / "calls.jsonl"
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    turn = [{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": [call]}]
    calls.write_text(json.dumps({"task_id": "c", "model": "m", "success": 0, "messages": turn}) + "\n")
    capsys.readouterr()
    assert main(["score", "transcripts", str(calls), "--out", str(tmp_path / "c.jsonl")]) == 2
    assert "carries no 'tools' list" in capsys.readouterr().err
