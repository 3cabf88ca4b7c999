"""The one rule for infrastructure failures (records/infrastructure.py): what marks one, the label it is written and
read with, and what is left out or kept, with the same words in every command."""

from __future__ import annotations

import json

import pytest

from prefix_exec.records.codec import record_from_json, record_to_json
from prefix_exec.records.infrastructure import (
    LABEL,
    Exclusion,
    failure_of,
    label_of,
    mark,
    name_of,
    record_label,
    system_failure,
)
from prefix_exec.trajectory import FailureLabel, PrefixRecord, Rollout, ToolCall, Verdict

#: What BFCL writes for an entry whose inference crashed (the text of a vLLM 500, as BFCL v4 logs it).
CRASH = "Error during inference: Error code: 500 - {'object': 'error', 'message': 'Internal Server Error'}"
DIED = "the server closed its output (it exited)"


@pytest.mark.parametrize(
    ("text", "system"),
    [
        (CRASH, True),
        ("Error during inference: Request timed out.", True),  # BFCL's text for the openai client's timeout
        ("Error during inference: Connection error.", True),
        ("Error during inference: Error code: 502 - Bad Gateway", True),
        # BFCL's text for a 400: the request's fault, whatever BFCL's prefix
        ("Error during inference: Error code: 400 - This model's maximum context length is 128000 tokens.", False),
        ("openai.APIConnectionError: Connection error.", True),
        ("Error code: 429 - rate limited", True),
        ("Error code: 503 - Service Unavailable", True),
        ("Error code: 400 - the prompt is too long", False),  # the request's fault: not the system's
        ("the model answered nothing", False),
        ("ValueError: Channel does not exist!", False),  # a tool's refusal: the agent's
        # As the frameworks of tests/data/traces/crash record a failed model call (scripts/traces/crash.py):
        ("Error getting response: Request timed out.", True),  # the Agents SDK: the openai client's text, no name
        ("Error getting response: Connection error.", True),
        ("<class 'openai.APITimeoutError'>: Request timed out.", True),  # opentelemetry-instrumentation-openai-v2
        ("pydantic_ai.exceptions.ModelServerError: status_code: 500, model_name: m, body: {}", True),  # pydantic-ai
        ("status_code: 503, model_name: m, body: None", True),
        ("ModelConnectionError: the model could not be reached", True),
        ("ModelContextWindowExceededError: status_code: 400, model_name: m, body: too long", False),
        ("Error getting response: Error code: 400 - maximum context length", False),
    ],
)
def test_what_says_the_system_failed(text: str, system: bool) -> None:
    assert system_failure(text) is system


def test_the_mark_is_a_non_empty_text() -> None:
    rollout = Rollout(dataset="d", task_id="t", model="m", method="x", success=0)
    assert failure_of(mark(rollout, CRASH).metadata) == CRASH
    assert failure_of(mark(rollout, "x" * 2000).metadata) == "x" * 500
    for metadata in ({}, {"infrastructure": ""}, {"infrastructure": True}, {"infrastructure": None}, [], "text", None):
        assert failure_of(metadata) is None
    assert label_of("precondition", {"infrastructure": DIED}) == LABEL
    assert label_of(None, {"infrastructure": DIED}) == LABEL  # an executable rollout the system ended
    assert label_of("precondition", {}) == "precondition"


def refused(metadata: dict[str, str]) -> PrefixRecord:
    call = ToolCall(name="echo", arguments={})
    verdict = Verdict.reject(FailureLabel.PRECONDITION, "Error: the server failed")
    return PrefixRecord(
        "guard",
        "t",
        "client",
        "proxy",
        0,
        T=1,
        fed=1,
        success=0,
        verdicts=(verdict,),
        actions=(call,),
        metadata=metadata,
    )


def test_a_record_is_written_with_its_own_label_and_its_verdicts_as_replayed() -> None:
    row = record_to_json(refused({"infrastructure": DIED}))
    assert (row["label"], row["reason"]) == (LABEL, f"infrastructure failure (the system's, not the agent's): {DIED}")
    assert row["verdicts"][0]["label"] == "precondition"  # what the check saw of the call in flight
    plain = record_to_json(refused({}))
    assert (plain["label"], plain["reason"]) == ("precondition", "Error: the server failed")
    again = record_from_json(json.loads(json.dumps(row)))  # the label is read from the mark, not the verdicts
    assert record_label(again) == LABEL
    assert record_label(record_from_json(plain)) == "precondition"


def test_exclusion_leaves_out_and_says_so() -> None:
    keys = [("d", f"t{i}", "m", "x", 0) for i in range(3)]
    failures = [None, CRASH, None]
    exclusion = Exclusion()
    kept = list(exclusion.filter(zip(keys, failures, strict=True), lambda u: u[0], lambda u: u[1]))
    assert [k for k, _ in kept] == [keys[0], keys[2]]
    assert exclusion.excluded == ["d/t1 (m, x, trial 0)"] == [name_of(keys[1])]
    note = exclusion.note(2)
    assert note == (
        "1 rollout ended by an infrastructure failure (the system's, not the agent's) left out of PEC/FED/TER: "
        "N = 2 without them, 3 with them (--keep-infrastructure-failures counts them under the label "
        "'infrastructure'): d/t1 (m, x, trial 0)"
    )
    assert exclusion.as_json(2) == {
        "label": LABEL,
        "kept": False,
        "count": 1,
        "N_with": 3,
        "N_without": 2,
        "rollouts": ["d/t1 (m, x, trial 0)"],
    }
    assert exclusion.sentence(2) == (
        "1 rollout ended by an infrastructure failure (the system's, not the agent's) left out: N = 2 without them, "
        "3 with them."
    )


def test_exclusion_keeps_on_request_and_lists_at_most_twenty() -> None:
    keys = [("d", f"t{i}", "m", "x", 0) for i in range(25)]
    keeping = Exclusion(keep=True)
    assert all(keeping.admit(key, CRASH) for key in keys)
    note = keeping.note(25)
    assert note is not None
    assert note.startswith("25 rollouts ended by an infrastructure failure (the system's, not the agent's) kept under")
    assert "N = 25 with them, 0 without them" in note
    assert note.endswith("d/t19 (m, x, trial 0) and 5 more")
    assert keeping.as_json(25) is not None and keeping.as_json(25)["N_without"] == 0  # type: ignore[index]
    nothing = Exclusion()
    assert nothing.admit(keys[0], None)
    assert nothing.note(1) is None and nothing.sentence(1) is None and nothing.as_json(1) is None


def test_a_credential_in_the_failures_text_never_reaches_the_reason() -> None:
    row = record_to_json(refused({"infrastructure": "Error code: 503 from https://user:s3cret@llm.example/v1"}))
    assert "s3cret" not in row["reason"] and row["label"] == LABEL
