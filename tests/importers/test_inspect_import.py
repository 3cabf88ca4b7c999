"""The inspect-log mappings without a log: BFCL samples against the native FC importer (the oracle), Y from
inspect's score values, tau2 samples as tau2 simulations, the generic mapping, and unreadable files.

Logs made by a real ``inspect eval`` are in tests/cli/test_score_inspect_{bfcl,tau}.py.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prefix_exec.errors import InputError
from prefix_exec.importers.bfcl import decode_result
from prefix_exec.importers.inspect.bfcl import bfcl_rollout
from prefix_exec.importers.inspect.log import (
    Call,
    InspectLog,
    InspectSample,
    Message,
    generic_rollout,
    success_of,
)
from prefix_exec.importers.inspect.reader import read_log
from prefix_exec.importers.inspect.tau import simulation_of, tau_results
from prefix_exec.trajectory import FailureLabel, Skipped

LOG = InspectLog(
    path="/logs/run.eval", task="bfcl", model="openai/m", method="bfcl_solver", status="success", samples=()
)
REVEAL = "I have updated some more functions you can choose from. What about now?"

names = st.sampled_from(["cd", "ls", "mkdir", "mv", "sort"])
values = st.one_of(st.integers(-5, 5), st.text("abc", max_size=3), st.booleans(), st.none())
arguments = st.dictionaries(st.sampled_from(["a", "b", "folder"]), values, max_size=3)
calls = st.lists(st.tuples(names, arguments), min_size=1, max_size=3)
#: turns -> steps -> calls, and for each turn whether it opens with miss_func's reveal notice
scripts = st.lists(st.tuples(st.lists(calls, max_size=3), st.booleans()), min_size=1, max_size=4)


def sample(messages: list[Message], *, id: str = "multi_turn_base_3", y: int | None = 1, **extra: Any) -> InspectSample:
    fields: dict[str, Any] = {"metadata": {"category_name": "multi_turn_base"}, "store": {}}
    fields.update(extra)
    return InspectSample(
        where=f"run.eval: sample {id} epoch 1", id=id, epoch=1, messages=tuple(messages), y=y, **fields
    )


def conversation(script: list[tuple[list[list[tuple[str, dict[str, Any]]]], bool]]) -> list[Message]:
    """inspect_evals' BFCL conversation for a script: per turn its user messages, then one assistant message
    per step (each call answered by a tool message, ids reused across steps as some servers do), then text."""
    messages = [Message("system", "You are helpful.")]
    for turn, (steps, reveal) in enumerate(script):
        if reveal:
            messages.append(Message("user", REVEAL))
        messages.append(Message("user", f"turn {turn}"))
        for step in steps:
            ids = [f"call_{i}" for i in range(len(step))]
            messages.append(Message("assistant", "", tuple(Call(i, n, a) for i, (n, a) in zip(ids, step, strict=True))))
            messages += [Message("tool", f"result of {i}", tool_call_id=i) for i in ids]
        messages.append(Message("assistant", f"done with turn {turn}"))
    return messages


@given(scripts)
def test_bfcl_sample_gives_the_calls_of_the_same_fc_result(script: list[Any]) -> None:
    rollout = bfcl_rollout(LOG, sample(conversation(script)), model="m", method="x")
    assert not isinstance(rollout, Skipped)
    result = [[[{name: json.dumps(args)} for name, args in step] for step in steps] for steps, _ in script]
    native, fmt = decode_result(result)
    assert fmt == "FC"
    assert [replace(a, observation=None) for a in rollout.actions] == native
    assert rollout.metadata["turns"] == len(script)
    assert rollout.metadata["category"] == "base"
    assert all(
        a.observation is not None and a.observation.content == f"result of call_{a.call_id[-1]}"
        for a in rollout.actions
    )


def test_bfcl_samples_it_cannot_replay_say_why() -> None:
    single = bfcl_rollout(LOG, sample([], id="simple_python_3"), model="m", method="x")
    assert isinstance(single, Skipped)
    assert "not one prefix-exec replays" in single.error
    metadata = {"category_name": "multi_turn_composite"}
    composite = bfcl_rollout(LOG, sample([], id="multi_turn_composite_1", metadata=metadata), model="m", method="x")
    assert isinstance(composite, Skipped)
    assert "BFCL category multi_turn_composite is not one" in composite.error
    wrong = bfcl_rollout(LOG, sample([], metadata={"category_name": "multi_turn_miss_func"}), model="m", method="x")
    assert isinstance(wrong, Skipped)
    assert "says its category is multi_turn_miss_func" in wrong.error
    unscored = bfcl_rollout(LOG, replace(sample([]), y=None, unscorable="unscorable: no score"), model="m", method="x")
    assert isinstance(unscored, Skipped)
    assert unscored.error == "unscorable: no score"


def test_parse_errors_are_schema_failures_of_that_call() -> None:
    broken = Call("c1", "cd", {}, parse_error="Expecting value: line 1 column 2")
    messages = [
        Message("user", "go"),
        Message("assistant", "", (broken,)),
        Message("tool", "", tool_call_id="c1", error="bad"),
    ]
    rollout = bfcl_rollout(LOG, sample(messages), model="m", method="x")
    assert not isinstance(rollout, Skipped)
    (action,) = rollout.actions
    assert action.parse_error == "inspect could not parse the arguments: Expecting value: line 1 column 2"
    assert action.observation is not None
    assert (action.observation.error, action.observation.content) == (True, "bad")


def scored(**values: Any) -> SimpleNamespace:
    from inspect_ai.scorer import Score  # imported here: collecting this module on every worker costs nothing

    return SimpleNamespace(scores={name: Score(value=value) for name, value in values.items()})


@pytest.mark.parametrize(
    ("value", "y"),
    [("C", 1), ("I", 0), ("P", 0), ("N", 0), (1, 1), (1.0, 1), (0.5, 0), (0, 0), (True, 1), (False, 0), ("yes", 1)],
)
def test_y_is_one_only_for_a_full_score(value: Any, y: int) -> None:
    assert success_of(scored(s=value), None) == (y, None, value)


def test_scores_that_are_not_one_value_are_unscorable() -> None:
    y, why, _ = success_of(scored(s={"a": 1, "b": 0}), None)
    assert y is None
    assert why is not None
    assert "not one value (dict)" in why
    assert success_of(SimpleNamespace(scores=None), None)[1] == (
        "unscorable: the sample has no score (was the log written with --no-score?)"
    )


def test_several_scorers_need_a_choice() -> None:
    both = scored(accuracy="C", judge="I")
    y, why, _ = success_of(both, None)
    assert y is None
    assert why == "the sample has several scores (accuracy, judge); choose Y with --scorer NAME"
    assert success_of(both, "judge")[0] == 0
    assert success_of(both, "accuracy")[0] == 1
    assert success_of(both, "other")[1] == "the sample has no score 'other' (it has accuracy, judge)"


def agent_messages() -> list[dict[str, Any]]:
    """A stored tau2 agent conversation (inspect's JSON form of its messages): the server reused one id."""
    call = {"type": "function", "function": "get_reservation_details"}
    return [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "I am raj_sanchez_7340, reservation Q69X3R"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{**call, "id": "c0", "arguments": {"reservation_id": "X1"}}],
        },
        {
            "role": "tool",
            "content": "",
            "tool_call_id": "c0",
            "error": {"type": "unknown", "message": "Reservation X1 not found"},
        },
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{**call, "id": "c0", "arguments": {"reservation_id": "Q69X3R"}}],
        },
        {"role": "tool", "content": '{"reservation_id": "Q69X3R"}', "tool_call_id": "c0"},
        {"role": "assistant", "content": "Here it is."},
    ]


def tau_sample(store: dict[str, Any], **metadata: Any) -> InspectSample:
    task = {"id": "1", "evaluation_criteria": {"actions": []}}
    return sample([], id="1", metadata={"instance": "AirlineAgent", "task": task, **metadata}, store=store)


def test_tau2_sample_is_a_tau2_simulation_with_each_reply_on_its_call() -> None:
    built = simulation_of(tau_sample({"StoredAgentState:AirlineAgent:messages": agent_messages()}))
    assert not isinstance(built, Skipped)
    simulation, task, parse_errors = built
    assert task["id"] == "1"
    assert parse_errors == {}
    assert simulation["task_id"] == "1"
    assert simulation["trial"] == 0
    assert simulation["reward_info"] == {"reward": 1.0}
    roles = [m["role"] for m in simulation["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]  # no system prompt, as tau2's
    first, second = simulation["messages"][1]["tool_calls"][0], simulation["messages"][3]["tool_calls"][0]
    assert (first["id"], second["id"]) == ("c0", "c0~1")
    assert simulation["messages"][2] == {
        "role": "tool",
        "id": "c0",
        "content": "Reservation X1 not found",
        "error": True,
        "requestor": "assistant",
    }
    assert simulation["messages"][4]["id"] == "c0~1"
    assert simulation["messages"][4]["error"] is False


def test_tau2_log_reads_through_the_native_importer() -> None:
    stored = agent_messages()
    stored[4]["tool_calls"][0]["parse_error"] = "not JSON"
    log = replace(LOG, task="tau2_airline", samples=(tau_sample({"StoredAgentState:AirlineAgent:messages": stored}),))
    results = tau_results(log, model="m", method="x")
    assert results.domain == "airline"
    assert list(results.tasks) == ["1"]
    assert not results.skipped
    (rollout,) = results.rollouts
    assert (rollout.dataset, rollout.task_id, rollout.success) == ("tau3", "airline/1", 1)
    assert rollout.metadata["domain"] == "airline"
    assert [a.call_id for a in rollout.actions] == ["c0", "c0~1"]
    assert rollout.actions[0].observation is not None
    assert rollout.actions[0].observation.error is True
    assert rollout.actions[1].parse_error == "inspect could not parse the arguments: not JSON"
    assert rollout.metadata["inspect"]["sample_id"] == "1"


def test_tau2_samples_it_cannot_map_say_why() -> None:
    missing = simulation_of(tau_sample({}))
    assert isinstance(missing, Skipped)
    assert "store has no agent conversation (StoredAgentState:AirlineAgent:messages)" in missing.error
    untasked = simulation_of(sample([], metadata={"instance": "AirlineAgent"}))
    assert isinstance(untasked, Skipped)
    assert "not an inspect_evals tau2 sample" in untasked.error
    bad = simulation_of(tau_sample({"StoredAgentState:AirlineAgent:messages": [{"role": "wizard"}]}))
    assert isinstance(bad, Skipped)
    assert "holds a message inspect cannot read" in bad.error


def test_generic_rollout_keeps_inspects_ids_and_counts_turns_by_user_messages() -> None:
    messages = [
        Message("user", "one"),
        Message("assistant", "", (Call("a", "login", {"username": "sam"}),)),
        Message("tool", "ok", tool_call_id="a"),
        Message("user", "two"),
        Message("assistant", "", (Call("a", "search", {"query": "vpn"}), Call("b", "nope", {}))),
        Message("tool", "found", tool_call_id="a"),
    ]
    rollout = generic_rollout(replace(LOG, task="helpdesk"), sample(messages, id="t-7"), model="m", method="x")
    assert (rollout.dataset, rollout.task_id, rollout.success) == ("helpdesk", "t-7", 1)
    assert [(a.name, a.call_id, a.turn) for a in rollout.actions] == [
        ("login", "a", 0),
        ("search", "a", 1),
        ("nope", "b", 1),
    ]
    observations = [a.observation for a in rollout.actions]
    assert [o.content if o else None for o in observations] == ["ok", "found", None]


def test_a_generic_samples_user_messages_give_values_to_refs(tmp_path: Path) -> None:
    """Issue 41: the generic rollout keeps the sample's messages as its transcript, so replay hears its user
    messages; inspect's ids are reused across messages, and each call still hears only what came before it."""
    from prefix_exec.envs.custom.environment import layered_environment
    from prefix_exec.envs.custom.spec_formats import to_spec
    from prefix_exec.replay import replay

    messages = [
        Message("system", "You are the helpdesk."),
        Message("user", "please close ticket T-9"),
        Message("assistant", "", (Call("a", "close", {"ticket_id": "T-9"}),)),
        Message("tool", "closed", tool_call_id="a"),
        Message("assistant", "", (Call("a", "close", {"ticket_id": "T-10"}),)),
        Message("tool", "closed", tool_call_id="a"),
        Message("user", "and T-10 too"),
    ]
    rollout = generic_rollout(replace(LOG, task="helpdesk"), sample(messages, id="t-8"), model="m", method="x")
    assert rollout.transcript is not None and len(rollout.transcript) == len(messages)
    tools = [{"name": "close", "inputSchema": {"type": "object", "properties": {"ticket_id": {"type": "string"}}}}]
    (tmp_path / "side.yaml").write_text("tools:\n  close: {refs: {ticket_id: ticket}}\n")
    data, form = to_spec({"tools": tools}, path=tmp_path / "tools.json")
    env = layered_environment(data, tmp_path / "tools.json", form=form, hooks=tmp_path / "side.yaml")
    record = replay(rollout, env)
    assert (record.fed, record.label) == (2, FailureLabel.DEPENDENCY)  # T-10 was said only after its call
    assert "given by the conversation at message 1: ticket_id='T-9'" in record.verdicts[0].notes


def test_files_inspect_cannot_read_are_input_errors(tmp_path: Path) -> None:
    text = tmp_path / "notes.json"
    text.write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(InputError, match="not a readable inspect log") as caught:
        read_log(text)
    assert caught.value.path == str(text)
    with pytest.raises(InputError, match="no such file"):
        read_log(tmp_path / "missing.eval")
    with pytest.raises(InputError, match="is a directory"):
        read_log(tmp_path)
