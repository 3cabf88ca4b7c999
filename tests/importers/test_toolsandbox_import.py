"""Importing ToolSandbox run folders: pairing, names, arguments, turns, fallbacks, aborts and minefields."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.envs.toolsandbox import HEURISTIC_NOTE, recorded_environment
from prefix_exec.errors import InputError
from prefix_exec.importers.toolsandbox.importer import (
    ImportOptions,
    calls_from_conversation,
    calls_from_execution_context,
    read_result_summary,
    read_toolsandbox,
    scenario_dirs,
)
from prefix_exec.importers.trials import TrialRule
from prefix_exec.replay import replay
from prefix_exec.scoring.numbering import Numbering, rollout_digest
from prefix_exec.trajectory import FailureLabel, Rollout, Skipped


def _rollouts(paths: list[Path], **options: Any) -> dict[str, Rollout]:
    out = {}
    for unit in read_toolsandbox(paths, ImportOptions(**options)):
        assert isinstance(unit, Rollout), unit
        out[unit.task_id] = unit
    return out


def test_parallel_replies_are_paired_by_call_id_not_position(shared_data: Path) -> None:
    context = shared_data / "toolsandbox/cellular/trajectories/send_message_with_contact_content_cellular_off"
    calls = calls_from_execution_context(context / "execution_context.json").calls
    # rows 26 (set_cellular, id ...666611) and 27 (send, id ...1fa51c) were answered in the other order
    assert [c.name for c in calls[5:7]] == ["set_cellular_service_status", "send_message_with_phone_number"]
    assert calls[5].call_id == "call_18666611"
    assert calls[5].observation is not None
    assert calls[5].observation.error is False
    assert calls[5].observation.content == "None"
    assert calls[6].observation is not None
    assert calls[6].observation.error is True
    assert calls[6].observation.content == "ConnectionError: Cellular service is not enabled"


def test_arguments_are_the_literal_parameters_and_never_executed(shared_data: Path) -> None:
    context = shared_data / "toolsandbox/cellular/trajectories/send_message_with_contact_content_cellular_off"
    calls = calls_from_execution_context(context / "execution_context.json").calls
    assert calls[0].arguments == {"name": "Fredrik Thordendal"}
    assert calls[3].arguments == {"on": "yes"}
    assert calls[5].arguments == {"on": True}
    assert calls[0].raw is not None
    assert calls[0].raw.startswith("call_77159d5f_parameters = ")


def test_turns_count_only_user_messages_the_agent_saw(shared_data: Path) -> None:
    run = shared_data / "toolsandbox/run_public"
    rollouts = _rollouts([run])
    assert [a.turn for a in rollouts["update_contact_relationship_with_relationship_multiple_user_turn"].actions] == [
        0,
        1,
        1,
        1,
    ]
    # five few-shot user rows (visible only to the user simulator) precede turn 0 twice over here
    assert {a.turn for a in rollouts["send_message_with_contact_content_cellular_off_multiple_user_turn"].actions} == {
        1
    }


def _row(index: int, sender: str, recipient: str, content: str, **extra: Any) -> dict[str, Any]:
    row = {
        "sandbox_message_index": index,
        "sender": sender,
        "recipient": recipient,
        "content": content,
        "openai_tool_call_id": None,
        "openai_function_name": None,
        "conversation_active": True,
        "tool_call_exception": None,
        "tool_trace": None,
        "visible_to": None,
    }
    row.update(extra)
    return row


def _write_context(folder: Path, rows: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "execution_context.json").write_text(json.dumps({"_dbs": {"SANDBOX": rows}}))
    return folder


def test_scrambled_tool_names_resolve_to_the_real_tool(tmp_path: Path) -> None:
    code = (
        "c1_parameters = {'on': True}\n"
        "c1_response = set_cellular_service_status(**c1_parameters)\n"
        "print(repr(c1_response))"
    )
    trace = json.dumps({"tool_name": "set_wifi_status", "arguments": {"on": False}, "result": None})
    rows = [
        _row(0, "USER", "AGENT", "Turn on cellular"),
        _row(1, "AGENT", "EXECUTION_ENVIRONMENT", code, openai_tool_call_id="c1", openai_function_name="settings_0"),
        _row(2, "EXECUTION_ENVIRONMENT", "AGENT", "None", openai_tool_call_id="c1", openai_function_name="settings_0"),
        # unparseable code: the tool trace names the tool and gives the arguments
        _row(
            3, "AGENT", "EXECUTION_ENVIRONMENT", "garbled", openai_tool_call_id="c2", openai_function_name="settings_1"
        ),
        _row(4, "EXECUTION_ENVIRONMENT", "AGENT", "None", openai_tool_call_id="c2", tool_trace=[trace]),
        # no code and no trace: only the agent-facing name is left
        _row(
            5, "AGENT", "EXECUTION_ENVIRONMENT", "garbled", openai_tool_call_id="c3", openai_function_name="settings_2"
        ),
    ]
    calls = calls_from_execution_context(_write_context(tmp_path / "s", rows) / "execution_context.json").calls
    assert [c.name for c in calls] == ["set_cellular_service_status", "set_wifi_status", "settings_2"]
    assert calls[1].arguments == {"on": False}
    assert calls[2].observation is None  # no reply recorded


def test_call_without_reply_cannot_be_judged(tmp_path: Path) -> None:
    code = "c1_parameters = {}\nc1_response = get_wifi_status(**c1_parameters)\nprint(repr(c1_response))"
    rows = [_row(0, "USER", "AGENT", "hi"), _row(1, "AGENT", "EXECUTION_ENVIRONMENT", code, openai_tool_call_id="c1")]
    _write_context(tmp_path / "trajectories" / "s", rows)
    (tmp_path / "trajectories" / "s" / "conversation.json").write_text("[]")
    (rollout,) = _rollouts([tmp_path], success_if_unknown=1).values()
    with pytest.raises(Exception, match="no recorded reply"):
        replay(rollout, recorded_environment(rollout))


def _conversation_only_run(shared_data: Path, tmp_path: Path) -> Path:
    source = shared_data / "toolsandbox/run_public"
    run = tmp_path / "agent_gpt-4o-2024-05-13_user_gpt-4o-2024-05-13_07_03_2024_00_17_44"
    shutil.copy(source / "result_summary.json", run.mkdir() or run / "result_summary.json")
    for folder in (source / "trajectories").iterdir():
        if (folder / "conversation.json").is_file():
            (run / "trajectories" / folder.name).mkdir(parents=True)
            shutil.copy(folder / "conversation.json", run / "trajectories" / folder.name)
    return run


def test_conversation_fallback_agrees_with_the_execution_context_and_says_it_is_heuristic(
    shared_data: Path, tmp_path: Path
) -> None:
    exact = _rollouts([shared_data / "toolsandbox/run_public"])
    units = list(read_toolsandbox([_conversation_only_run(shared_data, tmp_path)]))
    skipped = [u for u in units if isinstance(u, Skipped)]
    # the aborted scenario has no conversation.json; the summary still lists it
    assert [s.where.rsplit(": ", 1)[-1] for s in skipped] == ["search_relationship_with_phone_number"]
    fallback = [u for u in units if isinstance(u, Rollout)]
    assert len(fallback) == 19
    for rollout in fallback:
        assert rollout.metadata["source"] == "conversation"
        assert rollout.model == "gpt-4o-2024-05-13"  # from the tool_sandbox run folder name
        guess, truth = (replay(r, recorded_environment(r)) for r in (rollout, exact[rollout.task_id]))
        assert (guess.T, guess.fed, guess.label, guess.success) == (truth.T, truth.fed, truth.label, truth.success)
        assert all(HEURISTIC_NOTE in verdict.notes for verdict in guess.verdicts)


def _summary_run(tmp_path: Path, shared_data: Path, scenario: str, **row: Any) -> Path:
    """A run folder holding one real scenario's trajectory and a summary row we control."""
    source = shared_data / "toolsandbox/run_public"
    run = tmp_path / "run"
    shutil.copytree(source / "trajectories" / scenario, run / "trajectories" / scenario)
    base = {
        "name": scenario,
        "categories": ["SINGLE_TOOL_CALL"],
        "similarity": 0,
        "exception_type": None,
        "traceback": None,
        "milestone_mapping": {},
        "minefield_mapping": {},
    }
    base.update(row)
    (run / "result_summary.json").write_text(json.dumps({"per_scenario_results": [base]}))
    return run


def test_infrastructure_abort_is_an_environment_fault_not_an_extra_failing_call(
    shared_data: Path, tmp_path: Path
) -> None:
    run = _summary_run(
        tmp_path, shared_data, "get_wifi", exception_type="RateLimitError", traceback="openai.RateLimitError: 429"
    )
    (rollout,) = _rollouts([run]).values()
    assert len(rollout.actions) == 1
    assert rollout.metadata["environment_faults"] == [{"depth": None, "error": "run aborted with RateLimitError"}]
    # the model API's 429: an infrastructure failure, left out of the records by default (records.infrastructure)
    assert rollout.metadata["infrastructure"] == "the run aborted with openai.RateLimitError: 429"
    record = replay(rollout, recorded_environment(rollout))
    assert record.executable
    assert record.success == 0


def test_an_abort_of_the_environment_that_is_not_the_model_apis_is_no_infrastructure_failure(
    shared_data: Path, tmp_path: Path
) -> None:
    run = _summary_run(
        tmp_path, shared_data, "get_wifi", exception_type="AssertionError", traceback="AssertionError: bad state"
    )
    (rollout,) = _rollouts([run]).values()
    assert rollout.metadata["environment_faults"] == [{"depth": None, "error": "run aborted with AssertionError"}]
    assert "infrastructure" not in rollout.metadata


def test_undecodable_arguments_abort_is_a_schema_failure_at_the_attempted_call(
    shared_data: Path, tmp_path: Path
) -> None:
    traceback = "Traceback ...\njson.decoder.JSONDecodeError: Expecting value: line 1 column 2 (char 1)"
    run = _summary_run(tmp_path, shared_data, "get_wifi", exception_type="JSONDecodeError", traceback=traceback)
    (rollout,) = _rollouts([run]).values()
    record = replay(rollout, recorded_environment(rollout))
    assert (record.T, record.fed, record.label) == (2, 2, FailureLabel.SCHEMA)
    assert rollout.actions[-1].parse_error == "json.decoder.JSONDecodeError: Expecting value: line 1 column 2 (char 1)"


def test_unknown_tool_abort_names_the_attempted_tool(shared_data: Path) -> None:
    rollouts = _rollouts([shared_data / "toolsandbox/run_public"])
    attempted = rollouts["search_relationship_with_phone_number"].actions[-1]
    assert attempted.name == "lookup_contact_by_phone"
    assert rollouts["search_relationship_with_phone_number"].metadata["aborted_with"] == "KeyError"


def test_minefield_is_located_at_the_last_call_issued_by_its_snapshot(shared_data: Path, tmp_path: Path) -> None:
    # calls of find_days_till_holiday_wifi_off sit at rows 16, 18, 20, 22, 24
    for snapshot, depth in [(15, 0), (16, 1), (17, 1), (19, 2), (24, 5), (99, 5)]:
        run = _summary_run(
            tmp_path / str(snapshot),
            shared_data,
            "find_days_till_holiday_wifi_off",
            minefield_mapping={"0": [snapshot, 1.0], "1": [16, 0.0]},
        )
        (rollout,) = _rollouts([run]).values()
        assert rollout.metadata["minefield_hits"] == [{"depth": depth, "minefield": 0, "similarity": 1.0}]
        record = replay(rollout, recorded_environment(rollout))
        # the sandbox's own first rejection is call 2 (wifi off); a minefield before it wins
        assert record.fed == min(max(depth, 1), 2)


def test_success_threshold(shared_data: Path) -> None:
    run = shared_data / "toolsandbox/run_public"
    strict, loose = _rollouts([run]), _rollouts([run], success_threshold=0.6)
    assert strict["modify_contact_with_message_recency"].success == 0  # similarity 0.68
    assert loose["modify_contact_with_message_recency"].success == 1
    assert sum(r.success or 0 for r in strict.values()) == 13
    assert sum(r.success or 0 for r in loose.values()) == 16  # + 0.8, 0.68, 0.67


def test_scenario_filter_and_single_scenario_folder_use_the_runs_summary(shared_data: Path) -> None:
    run = shared_data / "toolsandbox/run_public"
    chosen = _rollouts([run], scenarios=frozenset({"get_wifi", "cellular_off"}))
    assert sorted(chosen) == ["cellular_off", "get_wifi"]
    (single,) = _rollouts([run / "trajectories" / "get_wifi"]).values()
    assert single.success == 1 and single.metadata["categories"] == [
        "SINGLE_TOOL_CALL",
        "SINGLE_USER_TURN",
        "NO_DISTRACTION_TOOLS",
    ]


def test_summary_rows_and_minefields_are_read(shared_data: Path) -> None:
    results = read_result_summary(shared_data / "toolsandbox/run_public/result_summary.json")
    assert len(results) == 20
    assert results["find_days_till_holiday_insufficient_information"].minefields == ((0, 18, 1.0),)
    assert results["search_relationship_with_phone_number"].exception_type == "KeyError"


def test_missing_success_is_skipped_unless_told(shared_data: Path) -> None:
    (unit,) = read_toolsandbox([shared_data / "toolsandbox/wifi"])
    assert isinstance(unit, Skipped)
    assert "--success-if-unknown" in unit.error


def test_bad_inputs_raise_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a folder"):
        scenario_dirs(tmp_path / "missing")
    with pytest.raises(InputError, match="trajectories"):
        scenario_dirs(tmp_path)
    (tmp_path / "result_summary.json").write_text("{")
    with pytest.raises(InputError, match="not valid JSON"):
        read_result_summary(tmp_path / "result_summary.json")
    _write_context(tmp_path / "trajectories" / "s", [])
    (tmp_path / "trajectories" / "s" / "execution_context.json").write_text('{"_dbs": {}}')
    (tmp_path / "result_summary.json").write_text('{"per_scenario_results": []}')
    (unit,) = read_toolsandbox([tmp_path])
    assert isinstance(unit, Skipped)
    assert "_dbs.SANDBOX" in unit.error


def test_repeated_runs_of_one_agent_become_trials(shared_data: Path, tmp_path: Path) -> None:
    # ToolSandbox names no trial: two run folders of one agent are numbered by input order (scoring.numbering);
    # the same folder read twice is one rollout twice, left for scoring to refuse as a duplicate.
    run = shared_data / "toolsandbox/run_public"
    again = tmp_path / "copy" / run.name  # the model is read from the folder's name: the same agent
    shutil.copytree(run, again)
    only = ImportOptions(scenarios=frozenset({"get_wifi"}))
    units = [u for u in read_toolsandbox([run, again, run], only) if isinstance(u, Rollout)]
    assert [(u.trial, u.trial_given) for u in units] == [(0, False)] * 3
    numbering = Numbering()
    numbered = [numbering.number(u) for u in units]
    assert [u.trial for u in numbered] == [0, 1, 0]
    assert numbered[1].metadata["trial_note"].startswith("trial 1 by input order: the input names no trial")
    assert rollout_digest(numbered[2]) == rollout_digest(units[0])


def test_a_trial_field_reads_the_scenarios_summary_row(shared_data: Path) -> None:
    run = shared_data / "toolsandbox/run_public"
    fixed = _rollouts([run], scenarios=frozenset({"get_wifi"}), trials=TrialRule(fixed=4))
    assert (fixed["get_wifi"].trial, fixed["get_wifi"].trial_given) == (4, True)
    by_row = _rollouts([run], scenarios=frozenset({"get_wifi"}), trials=TrialRule(field="turn_count"))
    summary = json.loads((run / "result_summary.json").read_text())
    (row,) = [r for r in summary["per_scenario_results"] if r["name"] == "get_wifi"]
    assert by_row["get_wifi"].trial == row["turn_count"]
    (missing,) = read_toolsandbox(
        [run], ImportOptions(scenarios=frozenset({"get_wifi"}), trials=TrialRule(field="run"))
    )
    assert isinstance(missing, Skipped)
    assert "field 'run': missing" in missing.error


def test_listed_scenarios_found_nowhere_are_reported(shared_data: Path) -> None:
    units = list(
        read_toolsandbox(
            [shared_data / "toolsandbox/run_public"], ImportOptions(scenarios=frozenset({"get_wifi", "nope"}))
        )
    )
    assert [u.task_id for u in units if isinstance(u, Rollout)] == ["get_wifi"]
    (missing,) = [u for u in units if isinstance(u, Skipped)]
    assert missing.where == "scenario nope"
    assert "found in none" in missing.error


def test_minefield_source_is_recorded(shared_data: Path) -> None:
    (summary,) = _rollouts([shared_data / "toolsandbox/run_public/trajectories/get_wifi"]).values()
    (fallback,) = _rollouts([shared_data / "toolsandbox/insufficient"], success_if_unknown=0).values()
    assert summary.metadata["minefield_source"] == "result_summary.json"
    assert fallback.metadata["minefield_source"] == "conversation.json"


@pytest.mark.parametrize("function", ["x", {"name": "get_wifi_status", "arguments": {"a": 1}}])
def test_malformed_conversation_tool_calls_are_input_errors(tmp_path: Path, function: Any) -> None:
    folder = tmp_path / "scenario"
    folder.mkdir()
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": function}]},
    ]
    (folder / "conversation.json").write_text(json.dumps(messages))
    with pytest.raises(InputError, match="tool call 'c1'"):
        calls_from_conversation(folder / "conversation.json")


@pytest.mark.parametrize(
    ("arguments", "parse_error"),
    [
        ("[1, 2]", "arguments must be a JSON object, got list"),
        ('"x"', "arguments must be a JSON object, got str"),
        ("{oops", "arguments are not JSON: Expecting property name enclosed in double quotes at column 2"),
        ('{"a": 1}', None),
    ],
)
def test_conversation_arguments_go_through_the_shared_decoder(
    tmp_path: Path, arguments: str, parse_error: str | None
) -> None:
    """A JSON value that is not an object is the model's schema failure (it used to be read as {})."""
    folder = tmp_path / "scenario"
    folder.mkdir()
    call = {"id": "c1", "type": "function", "function": {"name": "get_wifi_status", "arguments": arguments}}
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [call]}]
    (folder / "conversation.json").write_text(json.dumps(messages))
    (action,) = calls_from_conversation(folder / "conversation.json").calls
    assert (action.parse_error, action.raw) == (parse_error, arguments)
    assert action.arguments == ({} if parse_error else {"a": 1})
