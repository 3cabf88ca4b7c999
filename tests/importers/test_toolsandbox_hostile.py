"""Malformed ToolSandbox run folders (issue 14): each shape is one skipped scenario naming its field, and the good
scenario beside it is still scored. Every input is built here."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.envs.toolsandbox.calls import parse_call_code
from prefix_exec.importers.toolsandbox import rows as toolsandbox_rows
from prefix_exec.importers.toolsandbox.importer import read_toolsandbox
from prefix_exec.trajectory import Rollout, Skipped

CODE = "c1_parameters = {'on': True}\nc1_response = set_wifi_status(**c1_parameters)\nprint(repr(c1_response))"


def row(index: Any, sender: str, recipient: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "sandbox_message_index": index,
        "sender": sender,
        "recipient": recipient,
        "content": content,
        "openai_tool_call_id": None,
        "tool_call_exception": None,
        "visible_to": None,
        **extra,
    }


def good_rows() -> list[dict[str, Any]]:
    return [
        row(0, "USER", "AGENT", "Turn on wifi"),
        row(1, "AGENT", "EXECUTION_ENVIRONMENT", CODE, openai_tool_call_id="c1"),
        row(2, "EXECUTION_ENVIRONMENT", "AGENT", "None", openai_tool_call_id="c1"),
    ]


def summary_row(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "categories": ["SINGLE_TOOL_CALL"],
        "similarity": 1.0,
        "exception_type": None,
        "traceback": None,
        "minefield_mapping": {},
        **extra,
    }


def run(
    tmp_path: Path,
    bad_rows: Any = None,
    bad_summary: dict[str, Any] | None = None,
    bad_text: str | None = None,
    conversation: Any = None,
) -> dict[str, Rollout | Skipped]:
    """A run folder with the scenario ``good`` and the scenario ``bad``, returned by scenario name."""
    for name, rows in (("good", good_rows()), ("bad", bad_rows if bad_rows is not None else good_rows())):
        folder = tmp_path / "trajectories" / name
        folder.mkdir(parents=True)
        if name == "bad" and conversation is not None:
            (folder / "conversation.json").write_text(json.dumps(conversation))
        elif name == "bad" and bad_text is not None:
            (folder / "execution_context.json").write_text(bad_text)
        else:
            (folder / "execution_context.json").write_text(json.dumps({"_dbs": {"SANDBOX": rows}}))
    rows = [summary_row("good"), {**summary_row("bad"), **(bad_summary or {})}]
    (tmp_path / "result_summary.json").write_text(json.dumps({"per_scenario_results": rows}))
    units = list(read_toolsandbox([tmp_path]))
    return {
        ("good" if u.task_id == "good" else "bad") if isinstance(u, Rollout) else Path(u.where).name: u for u in units
    }


def skipped(units: dict[str, Rollout | Skipped], *words: str) -> None:
    good, bad = units["good"], units["bad"]
    assert isinstance(good, Rollout)
    assert good.success == 1
    assert len(good.actions) == 1
    assert isinstance(bad, Skipped), bad
    for word in words:
        assert word in bad.error, bad.error


def test_an_unhashable_call_id_is_a_skipped_scenario(tmp_path: Path) -> None:
    rows = good_rows()
    rows[1]["openai_tool_call_id"] = ["c", 1]
    skipped(run(tmp_path, rows), "openai_tool_call_id", "must be a string")


def test_a_string_sandbox_message_index_is_a_skipped_scenario(tmp_path: Path) -> None:
    rows = good_rows()
    rows[1]["sandbox_message_index"] = "1"
    skipped(run(tmp_path, rows, {"minefield_mapping": {"0": [1, 0.5]}}), "sandbox_message_index")


def test_an_integer_visible_to_is_a_skipped_scenario(tmp_path: Path) -> None:
    rows = good_rows()
    rows[0]["visible_to"] = 7
    skipped(run(tmp_path, rows), "visible_to", "list of roles")


def test_a_non_object_details_entry_is_a_skipped_scenario(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "hi", "user_details": ["not", "an", "object"]}]
    skipped(run(tmp_path, conversation=messages), "user_details", "expected an object")


def test_an_integer_exception_type_is_a_skipped_scenario(tmp_path: Path) -> None:
    skipped(run(tmp_path, bad_summary={"exception_type": 3}), "exception_type", "per_scenario_results[1]")


def test_an_integer_traceback_is_a_skipped_scenario(tmp_path: Path) -> None:
    skipped(run(tmp_path, bad_summary={"exception_type": "KeyError", "traceback": 12}), "traceback")


def test_a_minefield_mapping_that_is_not_an_object_is_a_skipped_scenario(tmp_path: Path) -> None:
    skipped(run(tmp_path, bad_summary={"minefield_mapping": [[0, 1]]}), "minefield_mapping")
    (tmp_path / "again").mkdir()
    skipped(run(tmp_path / "again", bad_summary={"minefield_mapping": {"x": "y"}}), "minefield_mapping.x")


def test_text_for_categories_or_similarity_is_a_skipped_scenario(tmp_path: Path) -> None:
    skipped(run(tmp_path, bad_summary={"categories": 5}), "categories")
    (tmp_path / "again").mkdir()
    skipped(run(tmp_path / "again", bad_summary={"similarity": "high"}), "similarity", "expected a number")


def test_a_parser_memory_error_is_a_skipped_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = toolsandbox_rows.json.load

    def load(handle: Any) -> Any:
        if "/bad/" in handle.name:
            raise MemoryError
        return real(handle)

    monkeypatch.setattr(toolsandbox_rows.json, "load", load)
    skipped(run(tmp_path), "too large to read into memory")


def test_a_5000_digit_integer_is_a_skipped_scenario(tmp_path: Path) -> None:
    text = json.dumps({"_dbs": {"SANDBOX": good_rows()}}).replace(
        '"sandbox_message_index": 1', '"sandbox_message_index": ' + "9" * 5000
    )
    skipped(run(tmp_path, bad_text=text), "not readable JSON", "digits")


def test_deep_json_is_a_skipped_scenario(tmp_path: Path) -> None:
    skipped(run(tmp_path, bad_text='{"_dbs": ' + "[" * 100_000 + "]" * 100_000 + "}"), "nested too deeply")


def test_deep_or_huge_literal_arguments_in_call_code_read_as_no_arguments(tmp_path: Path) -> None:
    rows = good_rows()
    rows[1]["content"] = CODE.replace("{'on': True}", "{'on': " + "[" * 5000 + "]" * 5000 + "}")
    units = run(tmp_path, rows)
    bad = units["bad"]
    assert isinstance(bad, Rollout)
    assert bad.actions[0].name == "set_wifi_status"
    assert bad.actions[0].arguments == {}


def test_a_non_list_tool_trace_or_tool_calls_is_a_skipped_scenario(tmp_path: Path) -> None:
    rows = good_rows()
    rows[2]["tool_trace"] = 5
    rows[1]["content"] = "garbled"  # the name then comes from the trace
    skipped(run(tmp_path, rows), "tool_trace must be a list")
    (tmp_path / "again").mkdir()
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": 3}]
    skipped(run(tmp_path / "again", conversation=messages), "tool_calls", "expected a list")


def test_an_unhashable_tool_call_id_in_the_conversation_is_a_skipped_scenario(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": {"a": 1}, "content": "x"}]
    skipped(run(tmp_path, conversation=messages), "tool_call_id", "must be a string")


def test_a_text_minefield_similarity_is_a_skipped_scenario(tmp_path: Path) -> None:
    messages = [
        {
            "role": "user",
            "content": "hi",
            "user_details": {"minefield_matches": [{"minefield_index": 0, "minefield_similarity": "1"}]},
        }
    ]
    skipped(run(tmp_path, conversation=messages), "minefield_similarity", "expected a number")


def test_call_code_is_read_in_linear_time() -> None:
    # The old backtracking pattern took 45 s on 317 KB; this is 3 MB of its worst case and a bound 1000x above
    # the linear reader's time, so load cannot make it flaky.
    hostile = "a_parameters = " * 200_000 + "\nb"
    started = time.process_time()
    assert parse_call_code(hostile) is None
    assert parse_call_code(CODE) == ("c1", "{'on': True}", "set_wifi_status")
    assert time.process_time() - started < 10.0
