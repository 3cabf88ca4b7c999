"""The values inference follows: where they sit in arguments and results (paths), and which could be an id.

**Paths** are written as ``produces`` paths and ``refs`` keys are (``docs/custom.md``): names joined by ``.``,
``[*]`` for every element of a list or every value of an object keyed by data, ``$`` for a whole scalar result.

- :func:`argument_leaves`: each scalar of a call's arguments with its path from the argument's name: ``user_id``,
  ``item_ids`` (a list of scalars is its argument, element-wise, as ``refs`` reads it), ``flights[*].flight_number``
  (a list of objects);
- :func:`result_leaves`: each scalar of a result: ``reservation_id``, ``reservations[*]``, ``[*].flight_number``
  (a result that is a list), ``payment_methods[*].id`` (an object keyed by data), ``$`` (a scalar result).

An object's key is a field name when it looks like one (a letter or ``_`` first, then letters, digits, ``_`` and
``-``, no run of three digits, at most :data:`FIELD_CHARS` characters: ``user_id``, ``firstName``, ``address1``);
any other key (``credit_card_7815826``, ``Action Camera``, ``2024``) is data, and the object is read as a map, its
values at ``[*]``. Both walks stop at :data:`MAX_DEPTH` levels and
after :data:`MAX_LEAVES` scalars (a hostile result of millions of values costs at most that).

**Id-like values** (:func:`idlike`): what a reference could hold. Not booleans, ``null``, fractional numbers,
integers under :data:`MIN_ID_INT` (counts, amounts), dates and times (``2024-05-15``, ``15:00``), strings under 2
characters or over :data:`MAX_ID_CHARS`, or with more than :data:`MAX_ID_WORDS` words (free text); these are the
values every conversation gives, never evidence of a reference.

**Keys** (:func:`key`): a value's identity as the environment compares values (its canonical JSON text), so
``"123"`` and ``123`` are two values here as they are to a ``refs`` check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Mapping
from functools import lru_cache
from typing import Any

#: Deepest level of a value walked: a path longer than this is not followed.
MAX_DEPTH = 16
#: Most scalars taken from one call's arguments or one result (as ``produces`` takes at most 10,000 values).
MAX_LEAVES = 10_000
#: Longest object key read as a field name.
FIELD_CHARS = 64
#: Smallest integer that may be an id (smaller ones are counts and amounts).
MIN_ID_INT = 10_000
#: Longest string that may be an id.
MAX_ID_CHARS = 128
#: Most words (runs of non-space) in a string that may be an id (a name such as "Mia Li" may; a sentence not).
MAX_ID_WORDS = 4

_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_DIGITS = re.compile(r"\d{3}")
_DATE_OR_TIME = re.compile(
    r"\A(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?|\d{1,2}:\d{2}(?::\d{2})?"
    r"(?:\s*[AaPp][Mm])?|\d{1,2}/\d{1,2}/\d{2,4})\Z"
)
_SMALL_NUMBER = re.compile(r"\A[+-]?\d{1,4}(?:\.\d+)?\Z")
_NUMBER_START = frozenset("0123456789+-")

#: ``(path, value)``: one scalar and where it sits.
Leaf = tuple[str, Any]


def key(value: Any) -> Hashable:
    """The identity of ``value`` as a ``refs`` check compares it (by its JSON text): a string or an integer is
    itself (``"123"`` and ``123`` stay two keys, as their JSON texts differ), anything else its canonical JSON text."""
    if isinstance(value, str | int) and not isinstance(value, bool):
        return value
    return json.dumps(value, sort_keys=True)


def idlike(value: Any) -> bool:
    """Whether ``value`` could be an id (the module docstring says what is not)."""
    kind = type(value)
    if kind is int:
        return bool(abs(value) >= MIN_ID_INT)
    if kind is not str or not 2 <= len(value) <= MAX_ID_CHARS:
        return False
    if value[0] in _NUMBER_START and (_SMALL_NUMBER.match(value) or _DATE_OR_TIME.match(value)):
        return False  # only what starts with a digit or a sign can be a number, a date or a time
    words = value.split(None, MAX_ID_WORDS)
    return len(words) <= MAX_ID_WORDS and not value[0].isspace() and not value[-1].isspace()


@lru_cache(maxsize=4096)
def is_field(name: str) -> bool:
    """Whether an object key reads as a field name (not data: see the module docstring)."""
    return len(name) <= FIELD_CHARS and _FIELD.match(name) is not None and _DIGITS.search(name) is None


def argument_leaves(arguments: Mapping[str, Any]) -> list[Leaf]:
    """Every scalar of a call's arguments with its path (the module docstring), at most :data:`MAX_LEAVES`.
    A list of scalars is its own path (element-wise); a list of objects goes on with ``[*]``. An argument whose
    name holds ``.``, ``[`` or ``]``, or is empty or ``$``, is passed over: no ``refs`` key could name it."""
    leaves: list[Leaf] = []
    for name, value in arguments.items():
        if not isinstance(name, str) or not name or name == "$" or any(c in name for c in ".[]"):
            continue  # no refs key can name it: the path syntax reads these characters
        _walk(value, name, 1, False, leaves)
        if len(leaves) >= MAX_LEAVES:
            break
    return leaves[:MAX_LEAVES]


def result_leaves(result: Any) -> list[Leaf]:
    """Every scalar of a result with its ``produces`` path (the module docstring), at most :data:`MAX_LEAVES`:
    ``$`` for a scalar result."""
    if not isinstance(result, dict | list):
        return [] if result is None else [("$", result)]
    leaves: list[Leaf] = []
    _walk(result, "", 0, True, leaves)
    return leaves[:MAX_LEAVES]


def _walk(value: Any, path: str, depth: int, lists_named: bool, leaves: list[Leaf]) -> None:
    """Append the scalars under ``value`` at ``path`` to ``leaves``, in document order, until it holds
    :data:`MAX_LEAVES` (a stack, not recursion: a walk costs the same whatever the nesting). ``lists_named``: a
    list's elements are at ``path[*]`` (results); otherwise a list of scalars is at ``path`` itself (arguments,
    as ``refs`` reads them element-wise)."""
    stack: list[tuple[Any, str, int]] = [(value, path, depth)]
    while stack and len(leaves) < MAX_LEAVES:
        item, where, level = stack.pop()
        if level > MAX_DEPTH:
            continue
        if type(item) is dict:
            inner = [
                (v, _join(where, k if type(k) is str and is_field(k) else "[*]"), level + 1) for k, v in item.items()
            ]
            stack.extend(reversed(inner))
        elif type(item) is list:
            fan = lists_named or any(type(v) is dict or type(v) is list for v in item)
            inner_path = f"{where}[*]" if fan else where
            stack.extend((v, inner_path, level + 1) for v in reversed(item))
        elif item is not None:
            leaves.append((where or "$", item))


def _join(path: str, name: str) -> str:
    """``path`` followed by ``name``: ``a`` + ``b`` -> ``a.b``; ``a`` + ``[*]`` -> ``a[*]``; ``""`` + ``b`` -> ``b``."""
    if name == "[*]":
        return f"{path}[*]"
    return f"{path}.{name}" if path else name


def leaf_name(path: str) -> str:
    """The last name of a path (``flights[*].flight_number`` -> ``flight_number``; ``reservations[*]`` ->
    ``reservations``; ``$`` and ``[*]`` -> ``""``)."""
    for part in reversed(path.split(".")):
        name = part.replace("[*]", "")
        if name and name != "$":
            return name
    return ""
