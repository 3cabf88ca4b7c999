"""ToolSandbox over its recorded execution: the labelling table, the session, and every fixture's FED/label."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefix_exec.envs.base import Environment, Session
from prefix_exec.envs.toolsandbox import (
    EXCEPTION_RULES,
    HEURISTIC_NOTE,
    RecordedSession,
    ScenarioFacts,
    classify_exception,
    recorded_environment,
    split_exception,
)
from prefix_exec.errors import ReplayError
from prefix_exec.importers.toolsandbox.importer import ImportOptions, read_toolsandbox
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel, Observation, PrefixRecord, Rollout, Skipped, ToolCall

S, D, P, C, INFO = (
    FailureLabel.SCHEMA,
    FailureLabel.DEPENDENCY,
    FailureLabel.PRECONDITION,
    FailureLabel.STATE_CONSISTENCY,
    FailureLabel.INFORMATION,
)

# scenario -> (T, FED, label, Y), derived by hand from the fixtures' execution_context.json and
# result_summary.json. FED = T + 1 means fully executable; T = 1 with no actions is the no-tool rollout.
RUN_PUBLIC = {
    "add_contact_with_name_and_phone_number": (2, 1, S, 1),
    "add_reminder_content_and_date_and_time": (3, 1, S, 1),
    "cellular_off": (1, 2, None, 1),
    "find_days_till_holiday_insufficient_information": (2, 2, INFO, 0),  # minefield at snapshot 18 = call 2
    "find_days_till_holiday_wifi_off": (5, 2, P, 0),
    "get_wifi": (1, 2, None, 1),
    "modify_contact_with_message_recency": (4, 4, D, 0),
    "modify_reminder_with_recency_latest": (6, 3, S, 0),
    "remove_contact_by_phone": (3, 1, D, 1),
    "remove_contact_by_phone_no_search_contacts_insufficient_information": (1, 2, None, 1),
    "search_message_with_recency_latest": (2, 3, None, 1),
    "search_phone_number_with_name": (1, 2, None, 1),
    "search_relationship_with_phone_number": (1, 1, S, 0),  # agent abort: KeyError, unknown tool
    "search_reminder_with_recency_upcoming_insufficient_information": (1, 1, INFO, 0),  # snapshot 17 = call 1
    "send_message_with_contact_content_cellular_off": (4, 2, P, 1),
    "send_message_with_contact_content_cellular_off_multiple_user_turn": (4, 5, None, 1),
    "turn_on_cellular_low_battery_mode": (4, 4, C, 1),
    "turn_on_location_low_battery_mode": (1, 1, P, 0),
    "turn_on_wifi_low_battery_mode": (3, 1, P, 1),
    "update_contact_relationship_with_relationship_multiple_user_turn": (4, 3, S, 1),  # ValueError: no update
}
# The single-scenario folders have no result_summary.json; they are scored with --success-if-unknown 0.
SINGLES = {
    "bad_ref": (2, 1, D),  # NoDataError on a made-up person_id
    "cellular": (10, 2, S),  # TypeError: missing 'content'
    "insufficient": (1, 1, INFO),  # minefield hit; the call itself failed for a missing RAPID_API_KEY
    "wifi": (1, 1, P),  # ConnectionError: Wifi is not enabled
}


def _score(paths: list[Path], **options: object) -> dict[str, PrefixRecord]:
    records = {}
    for unit in read_toolsandbox(paths, ImportOptions(**options)):  # type: ignore[arg-type]
        assert isinstance(unit, Rollout), unit
        records[unit.task_id] = replay(unit, recorded_environment(unit))
    return records


@pytest.fixture(scope="module")
def run_public(shared_data: Path) -> dict[str, PrefixRecord]:
    return _score([shared_data / "toolsandbox" / "run_public"])


@pytest.mark.parametrize("name", sorted(RUN_PUBLIC))
def test_run_public_scenario_gives_hand_derived_fed_and_label(run_public: dict[str, PrefixRecord], name: str) -> None:
    T, fed, label, success = RUN_PUBLIC[name]
    record = run_public[name]
    assert (record.T, record.fed, record.label, record.success) == (T, fed, label, success)


def test_run_public_agrees_with_the_independent_oracle(shared_data: Path, run_public: dict[str, PrefixRecord]) -> None:
    expected = json.loads((shared_data / "toolsandbox" / "run_public" / "expected.json").read_text())
    assert set(run_public) == set(expected)
    for name, oracle in expected.items():
        record = run_public[name]
        aborted = oracle["run_aborted_with"] is not None
        assert record.T == max(oracle["n_recorded_tool_calls"] + aborted, 1), name
        assert record.success == int(oracle["similarity_is_1"]), name
        hits = record.metadata["minefield_hits"]
        if oracle["first_rejected_call_index"] is not None:
            # the environment rejected this call: FED sits there, with the recorded exception type
            assert record.fed == oracle["first_rejected_call_index"], name
            assert record.reason is not None
            assert split_exception(record.reason)[0].rsplit(".", 1)[-1] == oracle["exception_type"], name
        elif hits:
            # not rejected by the sandbox, but the call hit a minefield: an information failure there
            assert record.fed == min(hit["depth"] for hit in hits), name
            assert record.label is INFO, name
        else:
            assert record.executable, name
    assert sum(r.executable for r in run_public.values()) == 6


@pytest.mark.parametrize("folder", sorted(SINGLES))
def test_single_scenario_folders_give_expected_fed_and_label(shared_data: Path, folder: str) -> None:
    (record,) = _score([shared_data / "toolsandbox" / folder], success_if_unknown=0).values()
    assert (record.T, record.fed, record.label) == SINGLES[folder]
    assert record.metadata["success_assumed"] is True


def test_environment_fault_is_flagged_never_the_agents_label(shared_data: Path) -> None:
    (record,) = _score([shared_data / "toolsandbox" / "insufficient"], success_if_unknown=0).values()
    verdict = record.verdicts[0]
    # the RAPID_API_KEY PermissionError is not the agent's: only the minefield hit (information) is a cause
    assert verdict.causes == (INFO,)
    assert any(note.startswith("environment fault (missing API key)") for note in verdict.notes)
    assert record.metadata["environment_faults"] == [{"depth": 1, "error": str(record.actions[0].observation.content)}]  # type: ignore[union-attr]


def test_unknown_tool_abort_without_summary_is_skipped_with_reason(shared_data: Path) -> None:
    (unit,) = read_toolsandbox([shared_data / "toolsandbox" / "unknown_tool"], ImportOptions(success_if_unknown=0))
    assert isinstance(unit, Skipped)
    assert "aborted" in unit.error
    assert "result_summary.json" in unit.error


@pytest.mark.parametrize(
    ("text", "label", "rule"),
    [
        ("TypeError: missing a required argument: 'phone_number'", S, "wrong type or arguments"),
        ("TypeError: Parameter 'on' is of type '<class 'str'>', but expected '<class 'bool'>'.", S, None),
        ("ValueError: No update information given.", S, "bad value"),
        ("json.decoder.JSONDecodeError: Expecting value: line 1 column 1", S, "parse error"),
        ("KeyError: \"Agent tool call agent_facing_tool_name='x' is not a known allowed tool.\"", S, "unknown tool"),
        ("polars.exceptions.NoDataError: No db entry matching person_id='+1' found", D, "missing reference"),
        ("ConnectionError: Cellular service is not enabled", P, "setting off"),
        ("ConnectionError: Wifi is not enabled", P, "setting off"),
        ("PermissionError: Location service cannot be turned on in low battery mode", P, "setting forbids"),
        ("PermissionError: Location service is not enabled.", P, "setting forbids"),
        ("ValueError: cellular already enabled", C, "already in that state"),
        ("ValueError: wifi already disabled", C, "already in that state"),
        ("polars.exceptions.DuplicateError: duplicate person_id", C, "duplicate"),
        ("PermissionError: Please provide 'RAPID_API_KEY' in environment variable.", None, "missing API key"),
        ("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='x')", None, "network"),
        ("RuntimeError: Conversion failed", None, "remote API"),
        ("ZeroDivisionError: division by zero", S, "unmapped exception type"),
    ],
)
def test_labelling_table(text: str, label: FailureLabel | None, rule: str | None) -> None:
    found = classify_exception(text)
    assert found.label is label
    if rule is not None:
        assert found.name == rule


def test_split_exception_keeps_module_qualified_type() -> None:
    assert split_exception("polars.exceptions.NoDataError: No db: entry") == (
        "polars.exceptions.NoDataError",
        "No db: entry",
    )
    assert split_exception("KeyError") == ("KeyError", "")


def test_every_rule_is_reachable() -> None:
    # a rule shadowed by an earlier one would be dead documentation
    samples = {
        "missing API key": "PermissionError: RAPID_API_KEY",
        "network": "urllib3.exceptions.ReadTimeoutError: x",
        "remote API": "RuntimeError: Conversion failed",
        "unknown tool": "KeyError: 'is not a known allowed tool'",
        "parse error": "SyntaxError: bad",
        "wrong type or arguments": "TypeError: x",
        "missing reference": "NoDataError: x",
        "setting off": "ConnectionError: x",
        "setting forbids": "PermissionError: x",
        "duplicate": "DuplicateError: x",
        "already in that state": "ValueError: already there",
        "bad value": "ValueError: x",
    }
    assert set(samples) == {rule.name for rule in EXCEPTION_RULES}
    for name, text in samples.items():
        assert classify_exception(text).name == name


def _call(content: object, error: bool | None, name: str = "tool") -> ToolCall:
    return ToolCall(name=name, observation=Observation(content, error))


def test_session_replays_recorded_outcomes_and_forks_independently() -> None:
    session = RecordedSession(ScenarioFacts())
    assert isinstance(session, Session)
    assert session.step(_call("ok", False)).accepted
    fork = session.fork()
    rejected = fork.step(_call("TypeError: bad", True))
    assert rejected.label is S
    assert rejected.result == "TypeError: bad"
    assert fork.position == 2
    assert session.position == 1


def test_session_refuses_a_call_it_has_no_record_of() -> None:
    with pytest.raises(ReplayError, match="no recorded reply"):
        RecordedSession(ScenarioFacts()).step(ToolCall(name="search_contacts"))


def test_minefield_and_exception_on_one_call_keep_both_causes() -> None:
    session = RecordedSession(ScenarioFacts(minefield_depths=frozenset({1})))
    verdict = session.step(_call("ConnectionError: Wifi is not enabled", True))
    assert verdict.causes == (P, INFO)
    assert verdict.label is P


def test_minefield_before_any_call_lands_on_the_first_call_or_the_no_tool_finish() -> None:
    facts = ScenarioFacts(minefield_depths=frozenset({0}))
    assert RecordedSession(facts).step(_call("ok", False)).label is INFO
    assert RecordedSession(facts).finish_without_tools().label is INFO


def test_finishing_without_tools_is_allowed_only_for_insufficient_information() -> None:
    assert RecordedSession(ScenarioFacts(insufficient_information=True)).finish_without_tools().accepted
    assert RecordedSession(ScenarioFacts()).finish_without_tools().label is P
    facts = ScenarioFacts.from_metadata("find_x_insufficient_information", {})
    assert facts.insufficient_information  # no summary: the scenario naming convention decides
    assert not ScenarioFacts.from_metadata(
        "find_x_insufficient_information", {"categories": []}
    ).insufficient_information


def test_heuristic_source_marks_every_verdict() -> None:
    session = RecordedSession(ScenarioFacts(heuristic=True))
    assert HEURISTIC_NOTE in session.step(_call("ok", False)).notes
    assert HEURISTIC_NOTE in session.step(_call("TypeError: x", True)).notes


def test_environment_is_per_rollout() -> None:
    rollout = Rollout(dataset="toolsandbox", task_id="a", model="m", method="x", success=1)
    env = recorded_environment(rollout)
    assert isinstance(env, Environment)
    with pytest.raises(KeyError):
        env.start("b")
