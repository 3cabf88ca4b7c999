"""A JSON call written after prose: ``Here is the call in JSON format.\\n{"name": "add_to_watchlist", ...}``.

No format's reader takes it (``json`` wants the call at the start of the answer, ``fenced`` wants a fence), so
it used to be read as an answer without a call, while the same JSON in a fence was a call. The rule
(:func:`read_trailing_call`): such JSON is a call when it is the answer's **last block** (a line that starts
with ``{`` or ``[{``, and the JSON from there runs to the end of the answer, white space aside) and it parses as
calls ``{"name", "arguments"}`` (or ``"parameters"``) of **declared tools** only. Anything less stays prose: JSON
in the middle of the answer (an example, a quoted result), JSON naming a tool nobody declared, JSON that does
not parse. So a reply that quotes a call and goes on explaining is not acted on, and nothing here turns prose
into a parse failure.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from prefix_exec.llm.text_formats import read_json
from prefix_exec.llm.text_reading import Reading

#: Where a last block may start: a line opening with an object or a list of objects.
_BLOCK_START = re.compile(r"^[ \t]*(?:\{|\[\s*\{)", re.MULTILINE)
#: Line starts tried from the end at most (each try decodes to the end of the answer).
MOST_STARTS = 64


def read_trailing_call(text: str, tools: Collection[str]) -> Reading | None:
    """The calls of ``text``'s last block when it is JSON calls of ``tools`` (names), with the text before it
    as prose (``None`` when empty); ``None`` when there is no such block or no tool is declared."""
    stripped = text.rstrip()
    if not tools or not stripped.endswith(("}", "]")):
        return None
    starts = [match.start() for match in _BLOCK_START.finditer(stripped)]
    for start in reversed(starts[-MOST_STARTS:]):
        found = read_json(stripped[start:], ("arguments", "parameters"))
        if found is None or found.prose is not None:
            continue  # not calls, or the JSON from here ends before the answer does
        if all(call.parse_error is None and call.name in tools for call in found.calls):
            return Reading(stripped[:start].strip() or None, found.calls)
        return None  # the last block is JSON of calls, but not all of declared tools
    return None
