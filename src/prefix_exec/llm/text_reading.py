"""What every text tool-call reader shares: the result of a reading, a failed call, and the bounds.

The bounds keep hostile model text from hanging a reader or blowing memory: the readers look at no more than
:data:`MAX_TEXT_CHARS` of an answer and read no more than :data:`MAX_CALLS` calls from it, and a call that
failed to parse quotes at most :data:`MAX_RAW_CHARS` of its text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from prefix_exec.json_types import value_problem
from prefix_exec.trajectory import ToolCall

#: Characters of an answer the readers look at; the rest is neither read nor kept as prose.
MAX_TEXT_CHARS = 200_000
#: Calls read from one answer; text holding more is read up to this many.
MAX_CALLS = 128
#: Characters of an answer kept (its text, and one native call's arguments): an answer past it is cut, saying how
#: much, so no rollout line holding it nears the 64 MiB a line may have (``records.jsonl.MAX_LINE_CHARS``).
MAX_ANSWER_CHARS = 1_000_000
#: Characters of a failed call's text kept in its ``raw``.
MAX_RAW_CHARS = 4_000

_NAME = re.compile(r'"name"\s*:\s*"([^"\\]{1,200})"')


@dataclass(frozen=True)
class Reading:
    """What a reader found: ``prose``, the answer's text without the calls (``None`` when nothing is left), and
    ``calls`` in the order written, a call that did not parse having ``parse_error`` set."""

    prose: str | None
    calls: tuple[ToolCall, ...]


def failed(raw: str, reason: str, *, name: str | None = None) -> ToolCall:
    """A call written in a format but not parsed: ``raw`` quoted (bounded) and the ``reason``. Its name is
    ``name``, else the ``"name"`` the text shows, else empty."""
    if name is None:
        found = _NAME.search(raw[:MAX_RAW_CHARS])
        name = found.group(1) if found else ""
    return ToolCall(name=name, raw=quoted(raw), parse_error=reason)


def checked(call: ToolCall) -> ToolCall:
    """``call`` when what it holds can be kept and sent back (:func:`~prefix_exec.json_types.value_problem`: no
    lone surrogate, no integer past 4,300 digits, no nesting past the depth bound, in its name and arguments),
    else the same call failed with the reason: a model's broken call fails its step as a schema failure instead
    of every later request, write or ``--resume`` of the unit."""
    if call.parse_error is not None:
        return call
    problem = value_problem(call.name) or value_problem(call.arguments)
    if problem is None:
        return call
    name = call.name if value_problem(call.name) is None else ""
    raw = call.raw.encode("utf-8", "replace").decode("utf-8") if call.raw else ""  # surrogates become '?'
    return replace(call, name=name, arguments={}, raw=quoted(raw), parse_error=f"the call holds {problem}")


def quoted(raw: str) -> str:
    """``raw`` cut to :data:`MAX_RAW_CHARS`, saying how much was cut."""
    if len(raw) <= MAX_RAW_CHARS:
        return raw
    return f"{raw[:MAX_RAW_CHARS]}... [{len(raw) - MAX_RAW_CHARS:,} more characters]"


def json_reason(exc: BaseException) -> str:
    """A decoding error in a few words: the JSON error's message, or Python's own limit that was hit."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0][:120]
