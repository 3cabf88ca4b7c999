"""A model answer can fail its step, never its unit for good (issue 45, item 3): a value read from an answer that
no later request, write or ``--resume`` could carry (a lone surrogate, an integer past 4,300 digits, nesting past
the depth bound) makes that call a parse failure (the model's ``schema`` failure) at once; token counts no call can
have count 0. Before, a ``0x`` literal of 4,000 hex digits failed in jsonschema's message on every ``--resume``,
and a surrogate made the next request unsendable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prefix_exec.errors import InputError
from prefix_exec.json_types import value_problem
from prefix_exec.llm.decode import decode_answer
from prefix_exec.llm.textcalls import decode_arguments, read_text_calls
from prefix_exec.records.codec import cost_from_json, rollout_from_json
from prefix_exec.records.values import Fields, noting_zeroed

HEX = "[f(a=0x" + "f" * 4000 + ")]"  # 4,000 hex digits: 4,817 decimal ones
OCTAL = "[f(a=0o" + "7" * 5000 + ")]"  # 4,516 decimal digits


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (HEX, "more than 4,300 digits"),
        (OCTAL, "more than 4,300 digits"),
        ('[f(a="\\ud800")]', "lone surrogate"),
        ('{"name": "f", "arguments": {"a": "\\udfff"}}', "lone surrogate"),
        ('<tool_call>{"name": "f", "arguments": {"\\ud83d": 1}}</tool_call>', "lone surrogate"),
        ('{"name": "f", "arguments": {"a": ' + "[" * 300 + "]" * 300 + "}}", "nested more than"),
        ("[f\\u0000(a=1)]", None),  # not a surrogate: an ordinary parse failure or none, never a crash
    ],
)
def test_a_call_holding_what_cannot_be_kept_fails_its_step(text: str, problem: str | None) -> None:
    read = read_text_calls(text, "auto")
    for call in read.calls:
        json.dumps(call.arguments).encode("utf-8")  # what is kept can be written
        (call.raw or "").encode("utf-8")
    if problem is not None:
        assert len(read.calls) == 1 and problem in (read.calls[0].parse_error or ""), read.calls
        assert read.calls[0].arguments == {}


def test_a_good_call_is_kept_as_is() -> None:
    read = read_text_calls("[f(a=0xff, b='é🔑')]", "auto")
    assert read.calls[0].parse_error is None and read.calls[0].arguments == {"a": 255, "b": "é🔑"}


def test_native_arguments_are_checked_too() -> None:
    assert "lone surrogate" in (decode_arguments("f", "c1", '{"a": "\\ud800"}').parse_error or "")
    assert "lone surrogate" in (decode_arguments("f", "c1", {"a": "\ud800"}).parse_error or "")
    assert decode_arguments("f", "c1", '{"a": 1}').parse_error is None


def _body(content: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": usage,
    }


def test_in_auto_mode_the_next_request_stays_sendable() -> None:
    done = decode_answer(
        _body('{"name": "f", "arguments": {"a": "\\ud800"}}'),
        mode="auto",
        text_format="auto",
        role="agent",
        model="m",
        latency_s=0.1,
    )
    assert done.calls[0].parse_error is not None
    json.dumps(done.message, ensure_ascii=False).encode("utf-8")  # the message appended to the next request


@pytest.mark.parametrize("count", [10**4000, -5, 10**300, float("inf"), float("nan"), 1e300, 2**31])
def test_a_usage_no_call_can_have_counts_zero(count: Any) -> None:
    done = decode_answer(
        _body("hi", {"prompt_tokens": count, "completion_tokens": 7}),
        mode="text",
        text_format="auto",
        role="agent",
        model="m",
        latency_s=0.1,
    )
    assert (done.cost.prompt_tokens, done.cost.completion_tokens) == (0, 7)


def test_a_run_folder_written_before_reads_its_bad_counts_as_zero() -> None:
    row = {"role": "agent", "prompt_tokens": 10**4000, "completion_tokens": -3, "latency_s": 10**400, "queue_s": 1.5}
    with noting_zeroed() as zeroed:
        cost = cost_from_json(Fields(json.loads(json.dumps(row)), "old.jsonl", 1))
    assert (cost.prompt_tokens, cost.completion_tokens, cost.latency_s, cost.queue_s) == (0, 0, 0.0, 1.5)
    assert [(z.line, z.field, z.value) for z in zeroed] == [
        (1, "prompt_tokens", "an integer of 4,001 digits"),
        (1, "completion_tokens", "-3"),
        (1, "latency_s", "an integer of 401 digits"),
    ]
    assert cost_from_json(Fields(json.loads(json.dumps(row)), "old.jsonl", 1)) == cost  # no collection: no note


def test_transcript_items_must_be_messages() -> None:
    row = {"dataset": "d", "task_id": "t", "model": "m", "method": "x", "actions": [], "transcript": [{}, 3]}
    with pytest.raises(InputError, match=r"a message must be a JSON object, got int") as caught:
        rollout_from_json(row, path="r.jsonl", line=4)
    assert caught.value.field == "transcript[1]"


def test_value_problem_names_each_kind() -> None:
    assert value_problem({"a": [1, "x", 2.5, None, True]}) is None
    assert "digits" in (value_problem([10**4300]) or "")
    assert value_problem([10**4300 - 1]) is None
    assert "finite" in (value_problem({"a": float("nan")}) or "")
    assert "key" in (value_problem({1: 2}) or "")
    assert "set" in (value_problem({"a": {1}}) or "")


def test_a_huge_answer_is_kept_cut_and_huge_arguments_fail_their_call() -> None:
    done = decode_answer(
        _body("x" * 3_000_000), mode="text", text_format="auto", role="agent", model="m", latency_s=0.1
    )
    assert done.content is not None and len(done.content) < 1_100_000 and done.content.endswith("cut by prefix-exec]")
    assert done.message["content"] == done.content
    huge = decode_arguments("f", "c1", json.dumps({"a": "y" * 2_000_000}))
    assert "longer than 1,000,000" in (huge.parse_error or "") and len(huge.raw or "") < 10_000
