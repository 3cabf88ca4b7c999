"""Records of every transcript form for the hostile sweep (tests/test_hostile_sweep.py): one small good
conversation per form (a call of ``login`` and its reply), whose every path the sweep fills with hostile
values, and whole ``.json`` documents of hostile shapes."""

from __future__ import annotations

import json
from typing import Any

from hostile_files import FIFO, ZERO

#: The spec every case is scored on (tau-bench records carry no tools list).
TOOLS = [{"type": "function", "function": {"name": "login", "parameters": {"type": "object"}}}]
_ARGS = '{"username": "sam"}'
_CHAT = [
    {"role": "user", "content": "log in"},
    {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "login", "arguments": _ARGS}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
]
#: One good record of each form but Chat (the sweep's ``openai`` cases cover Chat), without its task id.
RECORDS: dict[str, dict[str, Any]] = {
    "openai-responses": {
        "input": [
            {"role": "user", "content": "log in"},
            {"type": "function_call", "call_id": "c1", "name": "login", "arguments": _ARGS, "id": "fc_1"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        ],
        "tools": [{"type": "function", "name": "login", "parameters": {"type": "object"}}],
    },
    "anthropic": {
        "system": "be brief",
        "messages": [
            {"role": "user", "content": "log in"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "login", "input": {"a": 1}}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok", "is_error": False}],
            },
        ],
        "tools": [{"name": "login", "input_schema": {"type": "object"}}],
    },
    "langchain": {
        "messages": [
            {"type": "human", "data": {"content": "log in"}},
            {
                "type": "ai",
                "data": {
                    "content": "",
                    "tool_calls": [{"name": "login", "args": {"a": 1}, "id": "c1"}],
                    "invalid_tool_calls": [{"name": "login", "args": "{", "id": "c2", "error": "bad"}],
                },
            },
            {"type": "tool", "data": {"content": "ok", "tool_call_id": "c1", "status": "success"}},
        ],
        "tools": TOOLS,
    },
    "tau-bench": {"reward": 1.0, "trial": 0, "info": {}, "traj": _CHAT},
    # Chat as AgentDojo and Cohere write it: calls without ids paired in order, each reply echoing its call,
    # the tool's exception in `error` beside an empty content, text blocks with `content`
    "chat-positional": {
        "messages": [
            {"role": "user", "content": [{"type": "text", "content": "log in"}]},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "", "type": "function", "function": {"name": "login", "arguments": {"u": 1}}},
                    {"id": None, "function": "login", "args": {"u": 2}},
                ],
            },
            {
                "role": "tool",
                "tool_call_id": None,
                "content": "",
                "error": "ValueError: No user found",
                "tool_call": {"function": "login", "args": {"u": 1}, "id": ""},
            },
            {
                "role": "tool",
                "tool_call_id": "",
                "content": [{"type": "text", "content": "ok"}],
                "is_error": False,
                "status": "success",
                "tool_call": {"function": {"name": "login", "arguments": '{"u": 2}'}},
            },
        ],
        "metadata": {"suite_name": "s", "name": "user_task_0"},
        "tools": TOOLS,
    },
}
_GOOD = {"task_id": "g0", "model": "m", "success": 1, "messages": _CHAT, "tools": TOOLS}
#: Whole ``.json`` documents, and the good task ids each must still yield.
DOCUMENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "not-json": ("{nope", ()),
    "numbers": ("[1, 2, 3]", ()),
    "empty-object": ("{}", ()),
    "deep": ("[" * 100_000 + "]" * 100_000, ()),
    "huge-int": ("9" * 6000, ()),
    "bare-messages": (json.dumps(_CHAT), ()),
    "tau2-results": (json.dumps({"tasks": [], "simulations": [_GOOD]}), ()),
    "inspect-log": (json.dumps({"eval": {}, "samples": [_GOOD]}), ()),
    "wrapper": (json.dumps({"data": [_GOOD, 5, {**_GOOD, "task_id": "g1"}], "n": [1]}), ("g0", "g1")),
    "deep-wrapper": (json.dumps({"a": {"b": {"c": {"d": [_GOOD]}}}}), ()),
    "lines-in-json": (json.dumps(_GOOD) + "\n{nope\n" + json.dumps({**_GOOD, "task_id": "g1"}) + "\n", ("g0", "g1")),
    # records of metadata only (Invariant's export header, a trailer) are skipped, however hostile their metadata
    "metadata-header-trailer": (
        "\n".join(
            [
                json.dumps({"metadata": {"export": "x" * 10_000, "n": [1] * 1000}}),
                json.dumps(_GOOD),
                json.dumps({**_GOOD, "task_id": "g1"}),
                json.dumps({"summary": {"total": 2}, "stats": None}),
            ]
        )
        + "\n",
        ("g0", "g1"),
    ),
    "metadata-only": (json.dumps({"metadata": {"a": 1}}) + "\n" + json.dumps({"meta": []}) + "\n", ()),
    "metadata-deep": (json.dumps({"metadata": {}}) + "\n" + '{"metadata": ' + "[" * 50_000 + "]" * 50_000 + "}\n", ()),
    "metadata-beside-messages": (json.dumps([{**_GOOD, "metadata": {"x": 1}}, {"metadata": {"x": 2}}]), ("g0",)),
    "fifo": (FIFO, ()),
    "dev-zero": (ZERO, ()),
}
