"""How much of a tool result the guard's record keeps, so every line it writes stays readable.

``score custom``, ``metrics`` and ``report`` read lines of at most 64 MiB (``records.jsonl.MAX_LINE_CHARS``), and
a connection is one line however many calls it makes. So a result is kept whole up to :data:`RESULT_CHARS`
characters (its JSON text), and a connection's results up to :data:`CONNECTION_CHARS` in all; past either, the
observation keeps its first :data:`HEAD_CHARS` characters followed by a note with the full size and SHA-256, and
the call's entry in ``metadata.guard.calls`` says ``truncated``. Replay of a truncated result reads the note as
the result's text (its ``produces`` may then miss values; the live verdict was made on the whole result).
The client always gets the whole result: the bound is the record's, not the connection's.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

from prefix_exec.json_types import JsonObject
from prefix_exec.trajectory import ToolCall

#: Largest result kept whole, in characters of its JSON text.
RESULT_CHARS = 1_000_000
#: Largest total of results one connection keeps whole (a 64 MiB line leaves room for arguments and verdicts).
CONNECTION_CHARS = 40_000_000
#: What is kept of a result past a bound, in characters.
HEAD_CHARS = 4_096


def bound_call(call: ToolCall, spent: int) -> tuple[ToolCall, JsonObject | None, int]:
    """``call`` with its observation bounded, given ``spent`` characters already kept for the connection:
    (the call to record, the ``truncated`` entry or None, the characters this one keeps)."""
    observation = call.observation
    if observation is None:
        return call, None, 0
    content = observation.content
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
    if len(text) <= RESULT_CHARS and spent + len(text) <= CONNECTION_CHARS:
        return call, None, len(text)
    data = text.encode("utf-8", "surrogatepass")
    cut: JsonObject = {"chars": len(text), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    note = (
        f"\n[prefix-exec guard: result truncated in the record: {len(text):,} characters, {len(data):,} bytes, "
        f"sha256 {cut['sha256']}]"
    )
    kept = text[:HEAD_CHARS] + note
    return replace(call, observation=replace(observation, content=kept)), cut, len(kept)
