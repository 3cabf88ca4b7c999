"""A written row kept under a line bound, so that prefix-exec's own readers never refuse a line it wrote.

Each model answer is kept to 1,000,000 characters (``llm.text_reading.MAX_ANSWER_CHARS``), but a rollout of many
steps holds many answers (in its transcript, its calls' ``raw`` text, its notes), and a long one summed past the
64 MiB a line may have (``records.jsonl.MAX_LINE_CHARS``): ``--resume`` then refused the run's own folder.
:func:`bounded_line` writes a row as is when its line is at most :data:`MAX_WRITTEN_BYTES`; past it, the longest
texts are cut to one common length, each saying how much was cut, until the line fits:

1. texts in the transcript, the notes (``metadata``), the calls' ``raw`` text and observations, the verdicts;
2. only if that is not enough, the calls' arguments too (a record was replayed before its row was cut: its
   verdicts are those of the whole arguments).

The row's ``metadata.line_bound`` says so: the line's bytes before, the bound, the texts cut, the characters
cut and whether arguments were among them. A row that cannot fit even then (a bulk of numbers, not texts) gets
``None``: the caller fails its unit with the reason. Memory: the line once as text and once as bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from prefix_exec.json_types import JsonObject, dumps
from prefix_exec.records.jsonl import MAX_LINE_CHARS

#: The longest line written, in UTF-8 bytes: half of what the readers take, so a line read back by another
#: reader's count (characters, or bytes with escapes) is still far inside it.
MAX_WRITTEN_BYTES = MAX_LINE_CHARS // 2
#: Texts are never cut below this many characters (a line that fits only below it has no room to cut).
MIN_KEPT_CHARS = 1_000
#: The metadata key that notes a cut row.
NOTE = "line_bound"
#: The top-level keys whose texts may be cut, in the first pass; ``arguments`` under them only in the second.
CUT_KEYS = ("transcript", "actions", "metadata", "verdicts")


@dataclass
class _Text:
    """A text leaf of the row: its place (container and key), the text as it was, and its bytes as JSON."""

    parent: Any
    key: Any
    value: str
    encoded: int


def bounded_line(row: JsonObject, limit: int | None = None) -> str | None:
    """The JSON line of ``row`` (:func:`~prefix_exec.json_types.dumps`, no newline), cut as the module docstring
    says when it is longer than ``limit`` bytes (default :data:`MAX_WRITTEN_BYTES`); ``None`` when it cannot be
    made to fit. ``row`` is changed in place when it is cut."""
    limit = MAX_WRITTEN_BYTES if limit is None else limit
    line = dumps(row)
    size = _bytes(line)
    if size <= limit:
        return line
    texts: list[_Text] = []
    for arguments in (False, True):
        texts += _texts(row, arguments=arguments)
        kept = _kept_chars(texts, size, limit)
        while kept is not None and kept >= MIN_KEPT_CHARS:
            count, characters = _cut(texts, kept)
            note = {"bytes": size, "bound": limit, "texts_cut": count, "characters_cut": characters}
            row.setdefault("metadata", {})[NOTE] = {**note, "arguments_cut": arguments}
            line = dumps(row)
            if _bytes(line) <= limit:
                return line
            kept //= 2  # the estimate missed (many escapes): cut further
    return None


def _bytes(line: str) -> int:
    return len(line.encode("utf-8", "surrogatepass"))


def _texts(row: JsonObject, *, arguments: bool) -> list[_Text]:
    """The row's text leaves under :data:`CUT_KEYS` longer than :data:`MIN_KEPT_CHARS`: those outside the calls'
    parsed ``arguments`` (``actions[*].arguments``; the transcript's copy of a call is text of the first kind),
    or (``arguments``) those inside them. A stack walk (no recursion)."""
    found: list[_Text] = []
    stack: list[tuple[Any, Any, Any, bool]] = []
    for key in CUT_KEYS:
        value = row.get(key)
        if key == "actions" and isinstance(value, list):  # a call's arguments: what replay checked
            calls = [call for call in value if isinstance(call, dict)]
            stack += [(call, k, v, k == "arguments") for call in calls for k, v in call.items()]
        elif value is not None:
            stack.append((row, key, value, False))
    while stack:
        parent, key, value, inside = stack.pop()
        if isinstance(value, str):
            if len(value) > MIN_KEPT_CHARS and inside == arguments:
                found.append(_Text(parent, key, value, _bytes(json.dumps(value, ensure_ascii=False))))
        elif isinstance(value, dict):
            stack += [(value, k, v, inside) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(value, i, v, inside) for i, v in enumerate(value)]
    return found


def _kept_chars(texts: list[_Text], size: int, limit: int) -> int | None:
    """The most characters each text may keep for the line to fit, by each text's bytes per character (a
    binary search); ``None`` when cutting every text to :data:`MIN_KEPT_CHARS` would not do."""
    if not texts:
        return None
    fixed = size - sum(t.encoded for t in texts)
    target = int(limit * 0.95) - 200  # room for the note and the estimate's slack

    def total(kept: int) -> int:
        return fixed + sum(min(t.encoded, kept * t.encoded // len(t.value) + 80) for t in texts)

    if total(MIN_KEPT_CHARS) > target:
        return None
    low, high = MIN_KEPT_CHARS, max(len(t.value) for t in texts)
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if total(middle) <= target else (low, middle - 1)
    return low


def _cut(texts: list[_Text], kept: int) -> tuple[int, int]:
    """Every text longer than ``kept`` characters cut to ``kept`` (from the text as it was), saying how much;
    (texts cut, characters cut)."""
    count = characters = 0
    for text in texts:
        dropped = len(text.value) - kept
        if dropped <= 0:
            text.parent[text.key] = text.value
            continue
        text.parent[text.key] = f"{text.value[:kept]}... [{dropped:,} more characters cut by prefix-exec: {NOTE}]"
        count, characters = count + 1, characters + dropped
    return count, characters
