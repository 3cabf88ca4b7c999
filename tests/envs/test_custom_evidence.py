"""The generic environment on logs of real tools: recorded outcomes as evidence, recorded results feeding
``produces``, and the no-tool rule with the reason each record gives (prefix_exec.envs.custom.session)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.envs.custom.environment import environment_from_tools, load_spec
from prefix_exec.envs.custom.evidence import ORIGIN_CHECK, PRODUCED_VALUES, EvidencePolicy, compare_custom
from prefix_exec.envs.custom.session import CustomEnvironment
from prefix_exec.records.consistency import Consistency
from prefix_exec.replay import check, replay
from prefix_exec.trajectory import FailureLabel, Observation, PrefixRecord, Rollout, ToolCall

NOTE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "create_note",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "append_note",
            "parameters": {
                "type": "object",
                "properties": {"note_id": {"type": "string"}, "text": {"type": "string"}},
                "required": ["note_id", "text"],
            },
        },
    },
    {"type": "function", "function": {"name": "delete_note", "parameters": {"type": "object"}}},
]
#: The issue's side file: create_note produces a note, append_note refs one, delete_note consumes it.
NOTE_SIDE = """
tools:
  create_note: {produces: {note: note_id}}
  append_note: {refs: {note_id: note}}
  delete_note: {refs: {note_id: note}, invalidates: {note: note_id}}
"""


@pytest.fixture
def notes(tmp_path: Path) -> CustomEnvironment:
    spec = tmp_path / "tools.json"
    spec.write_text(json.dumps(NOTE_TOOLS))
    side = tmp_path / "side.yaml"
    side.write_text(NOTE_SIDE)
    return load_spec(spec, hooks=side)


def call(name: str, args: dict[str, Any], content: Any = None, error: bool | None = None) -> ToolCall:
    observation = Observation(content, error) if content is not None or error is not None else None
    return ToolCall(name, args, observation=observation)


def score(env: CustomEnvironment, *actions: ToolCall, task: str = "t") -> PrefixRecord:
    return replay(Rollout("d", task, "m", "x", actions=actions, success=1), env)


CREATE = call("create_note", {"text": "hi"}, '{"note_id": "N-1"}')


def test_the_issue_case_recorded_results_feed_produces(notes: CustomEnvironment) -> None:
    rec = score(notes, CREATE, call("append_note", {"note_id": "N-1", "text": "x"}, "ok"))
    assert rec.executable
    rec = score(notes, CREATE, call("append_note", {"note_id": "N-9", "text": "x"}, "ok"))
    assert (rec.fed, rec.label) == (2, FailureLabel.DEPENDENCY)
    assert rec.verdicts[1].notes == (ORIGIN_CHECK,)
    assert "note_id='N-9' is no note" in rec.reason


@pytest.mark.parametrize(
    "content",
    [
        {"note_id": "N-1"},  # a parsed result (MCP structuredContent)
        '{"note_id": "N-1", "text": "hi"}',
        '  {"note_id": "N-1"}\n',
    ],
)
def test_any_recorded_json_form_feeds_produces(notes: CustomEnvironment, content: Any) -> None:
    created = call("create_note", {"text": "hi"}, content)
    assert score(notes, created, call("append_note", {"note_id": "N-1", "text": "x"})).executable


def test_invalidates_work_on_recorded_results(notes: CustomEnvironment) -> None:
    deleted = call("delete_note", {"note_id": "N-1"}, "deleted")
    rec = score(notes, CREATE, deleted, call("append_note", {"note_id": "N-1", "text": "x"}))
    assert (rec.fed, rec.label) == (3, FailureLabel.STATE_CONSISTENCY)


def test_a_refused_creation_produces_nothing(notes: CustomEnvironment) -> None:
    refused = call("create_note", {"text": "hi"}, '{"note_id": "N-1"}', error=True)
    session = notes.start("t")
    verdict = session.step(refused)
    assert verdict.label is FailureLabel.PRECONDITION  # the default: the text names no kind
    assert session.produced == {}


def test_without_a_recorded_result_nothing_is_produced(notes: CustomEnvironment) -> None:
    rec = score(notes, call("create_note", {"text": "hi"}), call("append_note", {"note_id": "N-1", "text": "x"}))
    assert (rec.fed, rec.label) == (2, FailureLabel.DEPENDENCY)
    plain = call("create_note", {"text": "hi"}, "Note created.")  # text with no id in it
    assert score(notes, plain, call("append_note", {"note_id": "N-1", "text": "x"})).fed == 2


def test_a_recorded_result_registers_a_bounded_number_of_values(tmp_path: Path) -> None:
    spec = write(tmp_path, "tools.json", NOTE_TOOLS)
    side = write(tmp_path, "side.yaml", "tools:\n  create_note: {produces: {note: '[*]'}}\n")
    env = load_spec(spec, hooks=side)
    session = env.start("t")
    ids = [f"N-{i}" for i in range(PRODUCED_VALUES + 5)]
    verdict = session.step(call("create_note", {"text": "hi"}, json.dumps(ids)))
    assert verdict.accepted
    assert verdict.notes == (
        ORIGIN_CHECK,
        f"produces: the recorded result holds {PRODUCED_VALUES + 5} values of note; the first {PRODUCED_VALUES} count",
    )
    assert len(session.produced["note"]) == PRODUCED_VALUES
    assert json.dumps(ids[0]) in session.produced["note"]
    assert json.dumps(ids[-1]) not in session.produced["note"]


def test_an_effect_hook_simulates_the_tool_and_its_result_is_what_produces_read(ticketing: Path) -> None:
    env = load_spec(ticketing / "tools.yaml")
    login = call("login", {"username": "sam"}, '{"user": "sam"}')
    # the log says create_ticket returned T-5555; the effect hook simulates it and returns T-1003
    created = call("create_ticket", {"title": "Fan", "priority": "low"}, '{"ticket_id": "T-5555"}')
    rec = score(env, login, created, call("get_ticket", {"ticket_id": "T-5555"}, "{}"), task="new-laptop")
    assert (rec.fed, rec.label) == (3, FailureLabel.DEPENDENCY)
    rec = score(env, login, created, call("get_ticket", {"ticket_id": "T-1003"}, "{}"), task="new-laptop")
    assert rec.executable


# ---------------------------------------------------------------------------------- recorded refusals


def test_a_recorded_refusal_rejects_a_call_our_checks_accept(notes: CustomEnvironment) -> None:
    failed = call("append_note", {"note_id": "N-1", "text": "x"}, "Error: note N-1 is locked by another user")
    rec = score(notes, CREATE, failed)
    assert (rec.fed, rec.label) == (2, FailureLabel.PRECONDITION)
    verdict = rec.verdicts[1]
    assert verdict.notes == ("source: recorded outcome (error pattern)", "classifier: default -> precondition")
    assert verdict.reason == (
        'the recorded outcome refused the call (the reply matches the error pattern): "Error: note N-1 is locked '
        'by another user"'
    )
    assert rec.verdicts[0].notes == (ORIGIN_CHECK,)
    flagged = replace(failed, observation=Observation("note N-1 not found", error=True, error_type="KeyError"))
    rec = score(notes, CREATE, flagged)
    assert (rec.fed, rec.label) == (2, FailureLabel.DEPENDENCY)
    assert rec.verdicts[1].notes[0] == "source: recorded outcome (error flag)"
    assert "[KeyError]" in rec.reason


def test_the_earliest_rejected_step_wins_whichever_its_source(notes: CustomEnvironment) -> None:
    ours_first = score(
        notes,
        call("append_note", {"note_id": "N-7", "text": "x"}, "ok"),  # our dependency check
        call("create_note", {"text": "hi"}, "Error: quota exceeded"),  # a recorded refusal, later
    )
    assert (ours_first.fed, ours_first.label, ours_first.verdicts[0].notes) == (
        1,
        FailureLabel.DEPENDENCY,
        (ORIGIN_CHECK,),
    )
    assert len(ours_first.verdicts) == 1
    theirs_first = score(
        notes,
        call("create_note", {"text": "hi"}, "Error: quota exceeded"),
        call("append_note", {"note_id": "N-7", "text": "x"}, "ok"),
    )
    assert (theirs_first.fed, theirs_first.label) == (1, FailureLabel.PRECONDITION)
    assert theirs_first.verdicts[0].notes[0] == "source: recorded outcome (error pattern)"


def test_when_both_reject_one_step_our_check_gives_the_verdict(notes: CustomEnvironment) -> None:
    both = call("append_note", {"note_id": "N-7"}, "Error: note N-7 not found", error=True)  # no text: schema
    rec = score(notes, both)
    assert (rec.fed, rec.label, rec.verdicts[0].notes) == (1, FailureLabel.SCHEMA, (ORIGIN_CHECK,))


def test_a_refused_step_leaves_the_state_as_it_was(ticketing: Path) -> None:
    env = load_spec(ticketing / "tools.yaml")
    session = env.start("new-laptop")
    refused = session.step(call("login", {"username": "sam"}, "Error: the directory is down", error=True))
    assert not refused.accepted
    assert session.state["user"] is None  # the effect hook ran on a copy, which was dropped
    search = session.step(ToolCall("search_tickets", {"query": "vpn"}))
    assert search.label is FailureLabel.PRECONDITION
    assert "logged in" in search.reason


def test_the_policy_decides_unflagged_replies(tmp_path: Path) -> None:
    reply = call("create_note", {"text": "hi"}, "ERR-42: quota")
    default = environment_from_tools(NOTE_TOOLS, name="d", path=tmp_path / "t.json")
    assert score(default, reply).executable
    custom = environment_from_tools(
        NOTE_TOOLS, name="d", path=tmp_path / "t.json", policy=EvidencePolicy(re.compile(r"^ERR-\d+"))
    )
    assert score(custom, reply).fed == 1
    off = environment_from_tools(NOTE_TOOLS, name="d", path=tmp_path / "t.json", policy=EvidencePolicy(None))
    assert score(off, call("create_note", {"text": "hi"}, "Error: quota")).executable
    assert score(off, call("create_note", {"text": "hi"}, "quota", error=True)).fed == 1


def test_the_guard_checks_on_a_fork_then_the_answer_steps_the_session(notes: CustomEnvironment) -> None:
    """The guard's order (issue 26): our checks on a fork without the observation, then the real step with
    the server's answer, which feeds produces and applies its error flag."""
    session = notes.start("t")
    create = ToolCall("create_note", {"text": "hi"})
    assert check(session, create).accepted
    assert session.produced == {}
    assert session.step(replace(create, observation=Observation({"note_id": "N-1"}, error=False))).accepted
    append = ToolCall("append_note", {"note_id": "N-1", "text": "x"})
    assert check(session, append).accepted
    refused = session.step(replace(append, observation=Observation("note is locked", error=True)))
    assert refused.label is FailureLabel.PRECONDITION
    assert refused.notes[0] == "source: recorded outcome (error flag)"


def test_the_consistency_counts_of_the_generic_path(notes: CustomEnvironment) -> None:
    consistency = Consistency(partial(compare_custom, policy=EvidencePolicy()), theirs="recorded outcome")
    records = [
        # agree: accepted, and accepted
        score(notes, CREATE, call("append_note", {"note_id": "N-1", "text": "x"}, "ok")),
        # recorded-refusal: our checks accept, the log refused
        score(notes, CREATE, call("append_note", {"note_id": "N-1", "text": "x"}, "Error: locked")),
        # extra-check: our dependency check rejects a call the log shows succeeded
        score(notes, call("append_note", {"note_id": "N-5", "text": "x"}, "ok")),
        # agree: both refuse
        score(notes, call("append_note", {"note_id": "N-5", "text": "x"}, "Error: no note N-5", error=True)),
        # not compared: no recorded outcome
        score(notes, ToolCall("append_note", {"note_id": "N-5", "text": "x"})),
    ]
    for rec in records:
        consistency.add(rec)
    assert consistency.calls == 6
    assert [(d.kind, d.depth) for d in consistency.found] == [("recorded-refusal", 2), ("extra-check", 1)]


# ------------------------------------------------------------------------------------------------- no tool


def no_tool(env: CustomEnvironment, task: str = "t") -> PrefixRecord:
    return score(env, task=task)


def write(tmp_path: Path, name: str, document: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document) if name.endswith(".json") else document)
    return path


@pytest.mark.parametrize(
    ("document", "rule"),
    [
        (NOTE_TOOLS, "the spec is only a tools list (an OpenAI tools array)"),
        ({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}, "the spec is only a tools list (an MCP"),
        ([], "the spec is only a tools list (an OpenAI tools array)"),
        ({"tools": []}, "the spec is only a tools list (an MCP tools/list result)"),
        ({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}, "the spec is only a tools list (an MCP"),
    ],
)
def test_a_tools_list_alone_allows_a_rollout_without_a_call(tmp_path: Path, document: Any, rule: str) -> None:
    rec = no_tool(load_spec(write(tmp_path, "tools.json", document)))
    assert (rec.T, rec.fed, rec.no_tool) == (1, 2, True)
    assert rec.verdicts[0].notes[0] == ORIGIN_CHECK
    assert rec.verdicts[0].notes[1].startswith(f"no-tool rule: {rule}")


def test_an_empty_list_is_a_spec_of_no_tools(tmp_path: Path) -> None:
    env = load_spec(write(tmp_path, "tools.json", []))
    rec = score(env, ToolCall("anything", {}))
    assert (rec.fed, rec.label, rec.reason) == (1, FailureLabel.SCHEMA, "unknown tool 'anything'")


def test_a_conversations_own_list_names_itself(tmp_path: Path) -> None:
    rec = no_tool(environment_from_tools([], name="d", path=tmp_path / "c.jsonl"))
    assert rec.executable
    assert rec.verdicts[0].notes[1] == (
        "no-tool rule: the spec is the conversation's own tools list, which does not say that a task needs a tool"
    )


@pytest.mark.parametrize(
    ("spec", "side", "task", "fed", "rule"),
    [
        # our spec form: false unless it says otherwise
        ({"tools": [{"name": "a"}]}, None, "t", 1, "the spec does not set allow_no_tool (default: false)"),
        ({"allow_no_tool": True, "tools": [{"name": "a"}]}, None, "t", 2, "the spec sets allow_no_tool: true"),
        (
            {"tools": [{"name": "a"}], "tasks": {"q": {"allow_no_tool": True}, "r": {}}},
            None,
            "q",
            2,
            "task 'q' sets allow_no_tool: true",
        ),
        (
            {"tools": [{"name": "a"}], "tasks": {"q": {"allow_no_tool": True}, "r": {}}},
            None,
            "r",
            1,
            "the spec does not set allow_no_tool (default: false)",
        ),
        # a tools list with a side file that says the task needs a tool
        (NOTE_TOOLS, "allow_no_tool: false\n", "t", 1, "the hooks file sets allow_no_tool: false"),
        (NOTE_TOOLS, "tasks: {q: {allow_no_tool: false}}\n", "q", 1, "task 'q' sets allow_no_tool: false"),
        (NOTE_TOOLS, "initial_state: {}\n", "t", 2, "the spec is only a tools list (an OpenAI tools array)"),
    ],
)
def test_what_decides_the_no_tool_rule(
    tmp_path: Path, spec: Any, side: str | None, task: str, fed: int, rule: str
) -> None:
    hooks = write(tmp_path, "side.yaml", side) if side is not None else None
    rec = no_tool(load_spec(write(tmp_path, "spec.json", spec), hooks=hooks), task)
    assert rec.fed == fed
    assert rec.verdicts[0].notes[1].startswith(f"no-tool rule: {rule}")
    if fed == 1:
        assert rec.label is FailureLabel.PRECONDITION
        assert (
            rec.reason == f"the task needs tool use ({rec.verdicts[0].notes[1][14:]}), but the agent stopped "
            "before any tool call"
        )


def test_require_tools_overrides_every_allowance(tmp_path: Path) -> None:
    policy = EvidencePolicy(require_tools=True)
    for document in (NOTE_TOOLS, [], {"allow_no_tool": True, "tools": [{"name": "a"}]}):
        rec = no_tool(load_spec(write(tmp_path, "spec.json", document), policy=policy))
        assert (rec.fed, rec.label) == (1, FailureLabel.PRECONDITION)
        assert rec.verdicts[0].notes == (ORIGIN_CHECK, "no-tool rule: --require-tools")
    # calls are unaffected
    assert score(load_spec(write(tmp_path, "spec.json", NOTE_TOOLS), policy=policy), CREATE).executable
