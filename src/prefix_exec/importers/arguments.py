"""A tool call's arguments as a log holds them, decoded one way for every importer.

Logs keep a call's arguments as the model's JSON text (OpenAI, tau-bench, ToolSandbox), as an object already
parsed (Anthropic ``input``, LangChain ``args``, tau2, inspect), or not at all. :func:`decode_arguments` turns
any of these into the ``(arguments, parse_error)`` pair a :class:`~prefix_exec.trajectory.ToolCall` carries:

- JSON text of an object, or an object: its members, as a ``dict``;
- blank text or ``None``: no arguments, ``{}`` (a call of a tool that takes none);
- text that is not JSON, JSON that is not an object (``[1, 2]``, ``3``, ``"x"``, a double-encoded string),
  any other value, text longer than :data:`MAX_ARGUMENT_CHARS`, or an object with a key that is not a string:
  ``{}`` with the reason. That is the model's output, not bad input: replay rejects the call as ``schema``
  without reaching the environment. A non-object is never read as ``{}`` silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from prefix_exec.json_types import JsonObject, loads
from prefix_exec.records.jsonl import json_problem

#: Longest arguments text decoded, in characters (a call's arguments are kilobytes).
MAX_ARGUMENT_CHARS = 1_000_000


def decode_arguments(value: object) -> tuple[JsonObject, str | None]:
    """``(arguments, parse_error)`` for one call's recorded arguments (see the module docstring);
    ``parse_error`` is ``None`` when they are an object."""
    if value is None:
        return {}, None
    if isinstance(value, str):
        if len(value) > MAX_ARGUMENT_CHARS:
            return {}, f"arguments are longer than {MAX_ARGUMENT_CHARS:,} characters"
        if not value.strip():
            return {}, None
        try:
            value = loads(value)
        except ValueError as exc:
            reason = json_problem(exc) if isinstance(exc, json.JSONDecodeError) else str(exc)
            return {}, f"arguments are not JSON: {reason}"
    if not isinstance(value, Mapping):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    if not all(isinstance(key, str) for key in value):
        return {}, "arguments must be a JSON object, got keys that are not strings"
    return dict(value), None
