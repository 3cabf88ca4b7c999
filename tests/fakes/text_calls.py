"""Tool calls written the way models write them in text, one writer per format (hand-written, not our readers).

``write(fmt, calls)`` renders ``[(name, arguments), ...]`` in a format of :mod:`prefix_exec.llm.text_formats`;
``content_server(respond, fmt)`` wraps a scripted responder so its native tool calls come back as text in the
message's content, with no ``tool_calls``: a server without a tool parser for the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Calls = Sequence[tuple[str, Mapping[str, Any]]]


def _obj(name: str, arguments: Mapping[str, Any], key: str = "arguments") -> str:
    return json.dumps({"name": name, key: dict(arguments)})


def _python(value: Any) -> str:
    return repr(value)  # str, int, float, bool, None, list, dict: Python literals


def write(fmt: str, calls: Calls) -> str:
    """``calls`` in ``fmt``; an empty list is a plain-text answer."""
    if not calls:
        return "Done."
    if fmt == "hermes":
        return "\n".join(f"<tool_call>\n{_obj(n, a)}\n</tool_call>" for n, a in calls)
    if fmt == "json":
        return _obj(*calls[0]) if len(calls) == 1 else json.dumps([{"name": n, "arguments": a} for n, a in calls])
    if fmt == "fenced":
        return "I will call the tools.\n" + "\n".join(f"```json\n{_obj(n, a)}\n```" for n, a in calls)
    if fmt == "llama":
        return "<|python_tag|>" + "; ".join(_obj(n, a, "parameters") for n, a in calls)
    if fmt == "mistral":
        return "[TOOL_CALLS] " + json.dumps([{"name": n, "arguments": a} for n, a in calls])
    if fmt == "pythonic":
        return "[" + ", ".join(f"{n}({', '.join(f'{k}={_python(v)}' for k, v in a.items())})" for n, a in calls) + "]"
    raise ValueError(fmt)


def calls_of(message: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The native calls of a scripted assistant message."""
    return [(tc["function"]["name"], json.loads(tc["function"]["arguments"])) for tc in message.get("tool_calls") or []]


def content_server(respond: Callable[[dict[str, Any]], dict[str, Any]], fmt: str) -> Callable[..., dict[str, Any]]:
    """``respond`` with every tool call moved into the content, written in ``fmt``."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        message = respond(body)
        if not message.get("tool_calls"):
            return message
        return {"role": "assistant", "content": write(fmt, calls_of(message))}

    return answer
