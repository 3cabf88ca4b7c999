"""The rules for a call cut off by max_tokens and for a JSON call after prose, on real answers
(tests/data/answer-rules/README.md, tests/data/real-model/cache.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.llm.cut_calls import CUT
from prefix_exec.llm.decode import decode_answer
from prefix_exec.llm.textcalls import read_text_calls

DATA = Path(__file__).parents[1] / "data"
TRADING = frozenset({"add_to_watchlist", "get_stock_info", "login"})


def recorded(prefix: str) -> dict[str, Any]:
    """The real model's response whose content starts with ``prefix`` and stopped at max_tokens."""
    for line in (DATA / "real-model" / "cache.jsonl").read_text().splitlines():
        body = json.loads(line)["response"]
        choice = body["choices"][0]
        if choice["finish_reason"] == "length" and (choice["message"]["content"] or "").startswith(prefix):
            return dict(body)
    raise AssertionError(f"no cut answer starting {prefix!r}")


def decoded(body: dict[str, Any], mode: str = "text", tools: frozenset[str] = TRADING) -> Any:
    return decode_answer(body, mode=mode, text_format="auto", role="executor", model="m", latency_s=0.0, tools=tools)


def with_reason(content: str, reason: str) -> dict[str, Any]:
    return {"choices": [{"finish_reason": reason, "message": {"role": "assistant", "content": content}}]}


def test_json_after_prose_is_a_call_of_a_declared_tool() -> None:
    text = (DATA / "answer-rules" / "json-after-prose.txt").read_text()
    read = read_text_calls(text, tools=TRADING)
    assert [(c.name, dict(c.arguments), c.parse_error) for c in read.calls] == [
        ("add_to_watchlist", {"stock": "NVDA"}, None)
    ]
    assert read.format == "json"
    assert read.prose is not None and read.prose.endswith("in JSON format.")
    # The same answer through a response body, in auto mode (tools offered natively, calls left in content).
    done = decoded(with_reason(text, "stop"), mode="auto")
    assert [c.name for c in done.calls] == ["add_to_watchlist"]


@pytest.mark.parametrize(
    "text",
    [
        # No tools declared: nothing to check a name against.
        "in JSON format.\n" + '{"name": "add_to_watchlist", "arguments": {"stock": "NVDA"}}',
        # A tool nobody declared.
        'Call it so:\n{"name": "rm_rf", "arguments": {}}',
        # JSON in the middle of the answer, prose after it: an example, not a call.
        'For example\n{"name": "login", "arguments": {"username": "a"}}\nwould log you in.',
        # JSON on the same line as the prose: not a block of its own.
        'Call {"name": "login", "arguments": {"username": "a"}}',
        # Data, not a call.
        'The result:\n{"name": "NVDA", "price": 3}',
    ],
)
def test_json_after_prose_that_stays_prose(text: str) -> None:
    tools = frozenset() if text.startswith("in JSON") else TRADING
    read = read_text_calls(text, tools=tools)
    assert read.calls == ()
    assert read.prose == text.strip()


def test_a_fenced_or_leading_call_is_read_as_before() -> None:
    fenced = read_text_calls('Here:\n```json\n{"name": "login", "arguments": {"username": "a"}}\n```', tools=TRADING)
    assert fenced.format == "fenced"
    leading = read_text_calls('{"name": "login", "arguments": {"username": "a"}}', tools=TRADING)
    assert leading.format == "json"


def test_run_on_answer_cut_mid_json_is_a_parse_failure() -> None:
    """12 whole calls, the 13th cut mid-JSON: 12 calls and a parse failure, whose reason (the verdict the model
    was sent back) stays what the recorded run sent, so that run replays from its cache."""
    done = decoded(recorded('{"name": "get_nvidia_stock_price"'), mode="auto")
    assert len(done.calls) == 13
    assert all(c.parse_error is None for c in done.calls[:12])
    last = done.calls[-1]
    assert last.parse_error == "tool call is not valid JSON (Expecting value)"
    assert last.name == "get_nvidia_stock_price"


def test_cut_in_prose_after_a_call_keeps_the_call() -> None:
    """The login call, then JSON of no call cut by max_tokens: the call stands, nothing is added."""
    done = decoded(recorded('{"name": "login"'), mode="auto")
    assert [(c.name, c.parse_error) for c in done.calls] == [("login", None)]


@pytest.mark.parametrize(
    ("content", "name", "reason"),
    [
        # Cut before its "arguments" (after 12 whole calls, as the real run-on answer): was prose, silently gone.
        ('{"name": "login", "arguments": {"username": "dana"}}\n{"name": "get_st', "", CUT),
        # Cut after prose: was prose.
        ('I will log in.\n{"name": "login", "argu', "login", CUT),
        # Cut right after the tag: was prose.
        ("<tool_call>", "", CUT),
        # Cut inside the JSON of a tag or a fence: a parse failure already, its reason kept.
        ('<tool_call>\n{"name": "login", "arguments": {"user', "login", "tool call is not valid JSON"),
        ('```json\n{\n  "name": "add_to_watchlist",\n  "arguments": {\n    "stock": "NV', "add_to_watchlist", "tool"),
    ],
)
def test_a_cut_call_is_a_parse_failure_wherever_the_cut_fell(content: str, name: str, reason: str) -> None:
    done = decoded(with_reason(content, "length"))
    last = done.calls[-1]
    assert last.parse_error is not None and last.parse_error.startswith(reason), done.calls
    assert last.name == name
    # The same text stopped for another reason: as read before the rule (a failure only if it parsed as one).
    before = decoded(with_reason(content, "stop"))
    assert all(CUT not in (c.parse_error or "") for c in before.calls)
    assert len(before.calls) == len(done.calls) - (reason == CUT)


def test_a_cut_answer_without_a_call_is_left_alone() -> None:
    """The real model's plan JSON (no "name") and a plain sentence, both cut: no call is made up."""
    assert decoded(recorded('{"bindings"')).calls == ()
    assert decoded(with_reason("The weather in Paris is", "length")).calls == ()
