"""What a Chat-shaped tool message records besides its content: the error harnesses put beside it, the call it
echoes, and call ids that are absent.

Harnesses do not all say a tool failed the same way. :func:`recorded_error` reads, in this order:

- ``error``: AgentDojo and Invariant's trace format put the tool's exception there (``"ValueError: Channel
  does not exist!"``) with ``content: ""``. A non-empty string, an object or a list, or ``true``, is a
  recorded error; ``false`` says there was none; ``null``, ``""`` and an empty object say nothing;
- ``is_error`` (``true``/``false``): MCP's and Anthropic's flag, when a harness copies it onto a Chat message;
- ``status``: ``"error"`` is an error, ``"success"``/``"ok"`` is not (LangChain's ``ToolMessage.status``).

The error's text becomes the reply's content, ahead of the content when there is some, so that the error
pattern and the classifier see it: an ``error`` with an empty ``content`` is a refusal, never an empty result.

:func:`echoed_call` reads the call a reply repeats (AgentDojo's ``tool_call: {function, args, id}``, or an
OpenAI ``{function: {name, arguments}}``), which confirms positional pairing (:mod:`.decoder`).
:func:`call_id` reads an id that may be absent: ``null`` or ``""`` (Cohere and Gemini runs write ``id: ""`` on
calls and ``tool_call_id: null`` on replies) is no id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from prefix_exec.importers.transcripts.decoder import Echo, Fail
from prefix_exec.json_types import JsonMapping, JsonValue

#: ``status`` values that say a tool call failed, and those that say it did not.
ERROR_STATUSES = ("error", "failed", "failure")
OK_STATUSES = ("success", "ok", "succeeded")


def recorded_error(message: JsonMapping, at: str, fail: Fail) -> tuple[JsonValue, bool | None, str | None]:
    """``(content, error flag, error text)`` of one tool message (module docstring): the content with the
    error's text ahead of it, ``True``/``False``/``None`` (the log says nothing), and the error's text
    (``None`` without one). Raises through ``fail`` for an ``is_error`` that is not a boolean."""
    content = message.get("content")
    flag, text = _error_field(message.get("error"))
    if flag is None:
        flag = _is_error(message.get("is_error"), f"{at}.is_error", fail)
    if flag is None:
        flag = _status(message.get("status"))
    if not text:
        return content, flag, None
    said = block_text(content)
    if _empty(said):
        return text, True, text
    if isinstance(said, str):
        return f"{text}\n{said}", True, text
    return content, True, text


def block_text(content: Any) -> Any:
    """A list of text blocks as its text, joined by newlines (``{"type": "text", "text": ...}``, or AgentDojo's
    ``{"type": "text", "content": ...}``); any other content as it is."""
    if not isinstance(content, list) or not content:
        return content
    texts = []
    for block in content:
        if not isinstance(block, Mapping) or block.get("type") != "text":
            return content
        said = block.get("text", block.get("content"))
        if not isinstance(said, str):
            return content
        texts.append(said)
    return "\n".join(texts)


def _error_field(value: Any) -> tuple[bool | None, str | None]:
    if value is None or value == "" or value == {} or value == []:
        return None, None
    if isinstance(value, bool):
        return value, None
    if isinstance(value, str):
        return True, value
    if isinstance(value, Mapping) and isinstance(value.get("message"), str) and value["message"]:
        kind = value.get("type") or value.get("name")
        return True, f"{kind}: {value['message']}" if isinstance(kind, str) and kind else value["message"]
    return True, json.dumps(value, default=str)[:10_000]


def _is_error(value: Any, where: str, fail: Fail) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise fail(where, f"is_error must be true or false, got {value!r:.60}")


def _status(value: Any) -> bool | None:
    if not isinstance(value, str):
        return None
    if value.lower() in ERROR_STATUSES:
        return True
    return False if value.lower() in OK_STATUSES else None


def _empty(content: Any) -> bool:
    return content is None or (isinstance(content, (str, list, dict)) and not content)


def echoed_call(value: Any) -> Echo | None:
    """``(name, arguments)`` of the call a reply echoes (``tool_call``), or ``None`` when it echoes none or
    nothing usable; ``arguments`` is ``None`` when the echo has none."""
    if not isinstance(value, Mapping):
        return None
    function = value.get("function")
    if isinstance(function, str) and function:
        return function, value.get("args", value.get("arguments"))
    if isinstance(function, Mapping) and isinstance(function.get("name"), str) and function["name"]:
        return function["name"], function.get("arguments")
    name = value.get("name")
    return (name, value.get("args", value.get("arguments"))) if isinstance(name, str) and name else None


def call_id(value: Any, where: str, fail: Fail, *, what: str) -> str | None:
    """An id that may be absent: ``None`` for ``null`` or ``""``, the string otherwise; anything else raises."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise fail(where, f"{what} must be a string or absent, got {value!r:.60}")
    return value
