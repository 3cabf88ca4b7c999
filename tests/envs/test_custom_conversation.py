"""Values the conversation gave are given (issue 41, item 1): a ``refs`` argument holding a value an earlier user
or system message said is accepted, its verdict noting the message; later messages, the assistant's own words and
tool replies give nothing; ``invalidates`` makes a given value stale; ``conversation_gives`` turns it off per spec,
kind or tool, and a kind it names must be one refs use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prefix_exec.envs.custom.environment import layered_environment
from prefix_exec.envs.custom.session import CustomEnvironment
from prefix_exec.envs.custom.spec_formats import to_spec
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonObject
from prefix_exec.replay import call_positions, replay
from prefix_exec.trajectory import FailureLabel, Observation, PrefixRecord, Rollout, ToolCall

ID = {"type": "object", "properties": {"reservation_id": {"type": "string"}}}
PAY = {"type": "object", "properties": {"reservation_id": {"type": "string"}, "payment_id": {"type": "string"}}}
TOOLS = [
    {"name": "get_reservation", "inputSchema": ID},
    {"name": "cancel_reservation", "inputSchema": ID},
    {"name": "pay", "inputSchema": PAY},
    {"name": "book", "inputSchema": {"type": "object"}},
]
SIDE = """
tools:
  book: {produces: {reservation: reservation_id}}
  get_reservation: {refs: {reservation_id: reservation}}
  cancel_reservation: {refs: {reservation_id: reservation}, invalidates: {reservation: reservation_id}}
  pay: {refs: {reservation_id: reservation, payment_id: payment}}
"""


def environment(tmp_path: Path, side: str = SIDE) -> CustomEnvironment:
    (tmp_path / "side.yaml").write_text(side)
    data, form = to_spec({"tools": TOOLS}, path=tmp_path / "tools.json")
    return layered_environment(data, tmp_path / "tools.json", form=form, hooks=tmp_path / "side.yaml")


def conversation(*turns: tuple[str, Any]) -> tuple[tuple[ToolCall, ...], tuple[JsonObject, ...]]:
    """Actions and transcript from turns: ``("user", text)``, ``("system", text)``, ``("assistant", text)`` or
    ``("call", (name, arguments, result))``; each call is its own assistant message, answered by a tool reply."""
    actions: list[ToolCall] = []
    transcript: list[JsonObject] = []
    for role, said in turns:
        if role != "call":
            transcript.append({"role": role, "content": said})
            continue
        name, arguments, result = said
        call_id = f"c{len(actions)}"
        actions.append(ToolCall(name, arguments, call_id=call_id, observation=Observation(result)))
        transcript.append({"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "name": name}]})
        transcript.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return tuple(actions), tuple(transcript)


def scored(env: CustomEnvironment, *turns: tuple[str, Any]) -> PrefixRecord:
    actions, transcript = conversation(*turns)
    return replay(Rollout("d", "t", "m", "x", actions, success=1, transcript=transcript), env)


def test_an_id_the_user_typed_is_given(tmp_path: Path) -> None:
    record = scored(
        environment(tmp_path),
        ("system", "You are an airline agent."),
        ("user", "Hi, please look at my reservation 8JK2LM."),
        ("call", ("get_reservation", {"reservation_id": "8JK2LM"}, '{"status": "ok"}')),
    )
    assert record.executable
    assert "given by the conversation at message 1: reservation_id='8JK2LM'" in record.verdicts[0].notes


@pytest.mark.parametrize(
    "turns",
    [
        # said only after the call
        [("call", ("get_reservation", {"reservation_id": "8JK2LM"}, "ok")), ("user", "it was 8JK2LM")],
        # said by the assistant, not the user
        [("assistant", "Is it 8JK2LM?"), ("call", ("get_reservation", {"reservation_id": "8JK2LM"}, "ok"))],
        # said in a tool reply that no produces path reads
        [
            ("call", ("get_reservation", {"reservation_id": "A1"}, "ok")),
            ("call", ("get_reservation", {"reservation_id": "8JK2LM"}, "see 8JK2LM")),
        ],
        # said in another case
        [("user", "reservation 8jk2lm"), ("call", ("get_reservation", {"reservation_id": "8JK2LM"}, "ok"))],
    ],
)
def test_what_no_earlier_user_or_system_message_said_is_not_given(tmp_path: Path, turns: list[Any]) -> None:
    record = scored(environment(tmp_path), *turns)
    assert record.label is FailureLabel.DEPENDENCY
    assert "an earlier user or system message gave" in (record.reason or "")


def test_a_produced_value_stays_produced(tmp_path: Path) -> None:
    record = scored(
        environment(tmp_path),
        ("user", "book one, I will call it NEW1"),
        ("call", ("book", {}, '{"reservation_id": "NEW1"}')),
        ("call", ("get_reservation", {"reservation_id": "NEW1"}, "ok")),
    )
    assert record.executable
    assert not any(note.startswith("given") for v in record.verdicts for note in v.notes)


def test_an_invalidated_given_value_is_stale_however_often_it_is_said_again(tmp_path: Path) -> None:
    record = scored(
        environment(tmp_path),
        ("user", "cancel 8JK2LM please"),
        ("call", ("cancel_reservation", {"reservation_id": "8JK2LM"}, "ok")),
        ("user", "and show me 8JK2LM again"),
        ("call", ("get_reservation", {"reservation_id": "8JK2LM"}, "ok")),
    )
    assert record.fed == 2 and record.label is FailureLabel.STATE_CONSISTENCY


SWITCHES = [
    ("conversation_gives: false\n" + SIDE, FailureLabel.DEPENDENCY, FailureLabel.DEPENDENCY),
    ("conversation_gives: {payment: false}\n" + SIDE, None, FailureLabel.DEPENDENCY),
    ("conversation_gives: {reservation: false}\n" + SIDE, FailureLabel.DEPENDENCY, FailureLabel.DEPENDENCY),
    (SIDE.replace("payment}}", "payment}, conversation_gives: false}"), None, FailureLabel.DEPENDENCY),
    (
        "conversation_gives: false\n" + SIDE.replace("payment}}", "payment}, conversation_gives: true}"),
        FailureLabel.DEPENDENCY,
        None,
    ),
]


@pytest.mark.parametrize(("side", "get_label", "pay_label"), SWITCHES)
def test_conversation_gives_switches_off_per_spec_kind_and_tool(
    tmp_path: Path, side: str, get_label: FailureLabel | None, pay_label: FailureLabel | None
) -> None:
    env = environment(tmp_path, side)
    said = ("user", "reservation 8JK2LM, card PAY-9")
    get = scored(env, said, ("call", ("get_reservation", {"reservation_id": "8JK2LM"}, "ok")))
    pay = scored(env, said, ("call", ("pay", {"reservation_id": "8JK2LM", "payment_id": "PAY-9"}, "ok")))
    assert (get.label, pay.label) == (get_label, pay_label)


@pytest.mark.parametrize(
    ("side", "field"),
    [
        ("conversation_gives: {reservations: false}\n" + SIDE, "conversation_gives.reservations"),
        ("conversation_gives: maybe\n" + SIDE, "conversation_gives"),
        (SIDE.replace("{produces: {reservation: reservation_id}}", "{conversation_gives: 0}"), "tools.book"),
    ],
)
def test_a_bad_switch_is_an_input_error_naming_file_and_key(tmp_path: Path, side: str, field: str) -> None:
    with pytest.raises(InputError) as caught:
        environment(tmp_path, side)
    assert caught.value.path is not None and Path(caught.value.path).name == "side.yaml"
    assert (caught.value.field or "").startswith(field)


def test_a_fork_hears_apart(tmp_path: Path) -> None:
    session = environment(tmp_path).start("")
    session.hear(0, "A1")
    twin = session.fork()
    twin.hear(1, "B2")
    assert session.step(ToolCall("get_reservation", {"reservation_id": "B2"})).label is FailureLabel.DEPENDENCY
    assert twin.step(ToolCall("get_reservation", {"reservation_id": "B2"})).accepted
    assert session.step(ToolCall("get_reservation", {"reservation_id": "A1"})).accepted


def test_calls_map_to_messages_by_id_then_by_order() -> None:
    transcript: list[JsonObject] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "a", "name": "f"}, {"id": "b", "name": "f"}]},
        {"role": "tool", "content": "x"},
        {"role": "assistant", "tool_calls": [{"id": "a", "name": "f"}]},
        {"role": "assistant", "tool_calls": [{"name": "f"}]},
    ]
    calls = [ToolCall("f", call_id=i) for i in ("a", "b", "a", None, None)]
    assert call_positions(transcript, calls) == (1, 1, 3, 4, None)
    assert call_positions(transcript, [ToolCall("f", call_id="b"), ToolCall("f", call_id="a")]) == (1, 3)
    assert call_positions([], calls[:1]) == (None,)


def test_parallel_calls_hear_the_messages_before_their_answer(tmp_path: Path) -> None:
    transcript: tuple[JsonObject, ...] = (
        {"role": "user", "content": "reservations A1 and B2"},
        {"role": "assistant", "tool_calls": [{"id": "p", "name": "get_reservation"}, {"id": "q", "name": "x"}]},
        {"role": "user", "content": "and C3"},
        {"role": "assistant", "tool_calls": [{"id": "r", "name": "get_reservation"}]},
    )
    actions = tuple(
        ToolCall("get_reservation", {"reservation_id": v}, call_id=i)
        for v, i in (("A1", "p"), ("B2", "q"), ("C3", "r"))
    )
    record = replay(Rollout("d", "t", "m", "x", actions, success=1, transcript=transcript), environment(tmp_path))
    assert record.executable
    assert [v.notes[-1].split(":")[0] for v in record.verdicts] == ["given by the conversation at message 0"] * 2 + [
        "given by the conversation at message 2"
    ]


def test_a_given_text_is_heard_instead_of_the_content(tmp_path: Path) -> None:
    """The runner marks user messages its harness wrote: a tool result sent as user text gives nothing, a plan
    after the goal gives only the goal's values."""
    transcript: tuple[JsonObject, ...] = (
        {"role": "user", "content": "open A1\n\nPlan: then open B2", "given_text": "open A1"},
        {"role": "assistant", "tool_calls": [{"id": "p", "name": "get_reservation"}]},
        {"role": "user", "content": "Result of tool call get_reservation (p):\nsee C3", "given_text": ""},
        {"role": "assistant", "tool_calls": [{"id": "q", "name": "get_reservation"}]},
    )
    env = environment(tmp_path)
    for value, fed in (("A1", 2), ("B2", 1), ("C3", 1)):  # C3, in a tool result, stops the second call
        first = ToolCall("get_reservation", {"reservation_id": value}, call_id="p")
        actions = (first, ToolCall("get_reservation", {"reservation_id": "C3"}, call_id="q"))
        record = replay(Rollout("d", "t", "m", "x", actions, success=1, transcript=transcript), env)
        assert record.fed == fed, value
