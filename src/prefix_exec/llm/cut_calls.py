"""Calls cut off by ``max_tokens``: an answer that stopped there (``finish_reason`` ``"length"``) and ends
inside a call has that call cut, and a cut call is a parse failure, always, its ``parse_error`` saying so.

Before this rule, a cut call was a parse failure or silently gone depending on where the cut fell: cut inside
its JSON after ``"name"`` and ``"arguments"``, a parse failure; cut before ``"arguments"``, or right after an
opening ``<tool_call>``, prose. Now (:func:`cut_off`):

- when the last call read reaches the end of the answer and did not parse, it is a parse failure already and
  keeps its reason (tests/data/real-model's run-on answer: 12 calls, the 13th cut mid-JSON, "tool call is not
  valid JSON"): the reason is the verdict the model is sent back, and a recorded run must replay from its cache
  with the same conversation;
- when the answer's tail (all of it, or the prose after the calls read) opened a call that no reader took (a
  ``<tool_call>``, ``[TOOL_CALLS]`` or ``<|python_tag|>`` with nothing closed after it, an unclosed fence
  holding JSON with a ``"name"``, or a last line-started JSON block with a ``"name"`` that does not parse), a
  failed call quoting that tail is added after the calls read: ``{"name": "get_st`` cut before its
  ``"arguments"`` is no longer silently prose;
- a call whose text parsed whole is a call, cut or not, and JSON without a ``"name"`` is prose (the real
  model's login answer, cut in the ``{"bindings": ...}`` it wrote after its call, keeps its call);
- an answer that stopped for any other reason is left as read.

A native call (``tool_calls``) whose arguments do not parse is a parse failure already, cut or not.
"""

from __future__ import annotations

import json
import re

from prefix_exec.llm.text_reading import failed
from prefix_exec.trajectory import ToolCall

#: The finish reason of an answer stopped by ``max_tokens`` (OpenAI-compatible servers).
LENGTH = "length"
#: What a cut call's parse error starts with.
CUT = "cut off by max_tokens (finish_reason 'length'); raise max_tokens"
_OPENERS = ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>")
_CLOSERS = {"<tool_call>": "</tool_call>"}
_DECODER = json.JSONDecoder()
_LINE_JSON = re.compile(r"^[ \t]*(?:```[\w-]*\s*)?(?:\{|\[\s*\{)", re.MULTILINE)


def cut_off(text: str | None, prose: str | None, calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    """``calls`` read from ``text`` (``prose`` what the reading left), for an answer cut by ``max_tokens``:
    the last call's parse failure noted as the cut when it reaches the end, or a failed call added when the
    answer's tail opened one that no reader took (see the module docstring)."""
    body = (text or "").rstrip()
    ends_in_prose = prose is not None and bool(prose.strip()) and body.endswith(prose.rstrip())
    if calls and not ends_in_prose:
        return calls  # the last call reaches the cut: parsed whole, or already a parse failure
    tail = opened_call(prose.rstrip() if calls and prose is not None else body)
    if tail is None:
        return calls
    return (*calls, failed(tail, CUT))


def opened_call(body: str) -> str | None:
    """The tail of ``body`` from where it opened a call it never closed, or ``None``: a tag with nothing
    closed after it, an unclosed fence holding JSON with a ``"name"``, or a last line-started JSON block with a
    ``"name"`` that does not parse."""
    for opener in _OPENERS:
        at = body.rfind(opener)
        closer = _CLOSERS.get(opener)
        if at >= 0 and (closer is None or body.find(closer, at) < 0):
            return body[at:]
    if body.count("```") % 2 == 1:  # an unclosed fence
        inner = body[body.rfind("```") :]
        return inner if _LINE_JSON.match(inner) and '"name"' in inner else None
    starts = [match.start() for match in _LINE_JSON.finditer(body)]
    if not starts or '"name"' not in body[starts[-1] :]:
        return None
    block = body[starts[-1] :].strip()
    try:
        _DECODER.raw_decode(block)
    except (ValueError, RecursionError):
        return block
    return None  # whole JSON: not cut
