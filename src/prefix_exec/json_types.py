"""Names for parsed JSON, so that ``Any`` elsewhere in the code means "anything".

Input is validated at the edges (readers, importers, ``io``), so the values inside a parsed object are JSON's:
``None``, ``bool``, ``int``, ``float``, ``str``, lists and string-keyed objects of these. The aliases keep
``Any`` as the value type because code narrows a value where it reads it (``isinstance`` or a schema check);
what they add is the statement of what the container is.

- :data:`JsonValue`: any value ``json.loads`` returns (the root of a document, an argument, a tool's result);
- :data:`JsonObject`: a parsed JSON object that the holder owns and may change;
- :data:`JsonMapping`: a parsed JSON object read only (a record's ``metadata``, a call's ``arguments``).

And the canonical JSON text of one value, the only way it is written and read: :func:`dumps` (one JSONL line)
and :func:`loads` (every failure a ``ValueError``, nesting past :data:`MAX_DEPTH` included); and where a value
sits in a document, as messages name it: :func:`json_path`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

type JsonValue = Any
type JsonObject = dict[str, Any]
type JsonMapping = Mapping[str, Any]

__all__ = [
    "MAX_DEPTH",
    "JsonMapping",
    "JsonObject",
    "JsonValue",
    "depth_problem",
    "dumps",
    "json_path",
    "loads",
    "value_problem",
]


def dumps(row: JsonMapping) -> str:
    """One JSONL line. Values JSON cannot hold (sets, objects from a backend) become their ``repr``.

    Text that UTF-8 cannot encode (a lone surrogate from a model or a file name) is written as a JSON
    ``\\uXXXX`` escape, so the line reads back to the same string instead of failing the write.
    """
    text = json.dumps(row, ensure_ascii=False, default=_fallback)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(row, ensure_ascii=True, default=_fallback)
    return text


#: Deepest nesting of a value read from input (a list or object inside another counts one level). A value
#: that loads can still be too deep to cross a process boundary (pickle recurses; 800 levels fail it) or to pass
#: through recursive code (deepcopy, jsonschema, an indenting encoder), so it is refused where it is read, the
#: same for ``--workers 1``, ``--workers N`` and Ray. Far above any real record (a tool call's arguments inside
#: a message inside a conversation are some 10 levels deep; inspect logs are bounded at 256 too).
MAX_DEPTH = 256


def loads(text: str, *, max_depth: int | None = MAX_DEPTH) -> Any:
    """Parse one JSON document; every way it can fail is a ``ValueError`` (never a RecursionError).

    Nesting past ``max_depth`` (None: only past what the parser itself takes) and integers past Python's digit
    limit (4,300) are refused as ``ValueError`` with a plain message, like malformed JSON.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # int digits limit
        raise ValueError(str(exc).split(";")[0]) from None
    # A text with at most max_depth brackets cannot be nested deeper (str.count is fast: most lines stop here).
    if max_depth is not None and text.count("[") + text.count("{") > max_depth:
        problem = depth_problem(value, max_depth)
        if problem is not None:
            raise ValueError(problem)
    return value


def json_path(parts: Sequence[Any], *, leading: bool = False) -> str:
    """``tools[2].function.name`` from ``["tools", 2, "function", "name"]``; ``leading`` keeps a first dot."""
    text = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in parts)
    return text if leading else text.lstrip(".")


def depth_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """None when ``value`` (parsed JSON, or data built from it: tuples count as lists) nests at most ``max_depth``
    lists and objects deep, else what is wrong in one line. The walk keeps its own stack (no recursion) and stops
    at the first level too deep."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list | tuple) else None
        if children is None:
            continue
        if depth > max_depth:
            return f"nested more than {max_depth} lists and objects deep (json_types.MAX_DEPTH)"
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list | tuple))
    return None


#: The smallest integer JSON text cannot carry here: Python reads and writes at most 4,300 digits
#: (``sys.get_int_max_str_digits``), so a larger one (a model's ``0x`` literal of 4,000 hex digits) would fail
#: every later write or message that shows it.
INT_LIMIT = 10**4300


def value_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """None when ``value`` (data read from a model's answer or another producer) can be written as JSON and read
    back the same, else why not, in one line: nesting past ``max_depth``, an integer of more than 4,300 digits,
    a float that is not finite, text UTF-8 cannot encode (a lone surrogate), a key that is not a string. The walk
    keeps its own stack and stops at the first problem."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        problem = _scalar_problem(node)
        if problem is not None:
            return problem
        if isinstance(node, dict | list):
            if depth > max_depth:
                return f"nested more than {max_depth} lists and objects deep"
            if isinstance(node, dict):
                if not all(isinstance(key, str) for key in node):
                    return "an object key that is not text"
                stack.extend((key, depth) for key in node)
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return None


def _scalar_problem(node: Any) -> str | None:
    if isinstance(node, str):
        if not node.isascii():
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return "text that UTF-8 cannot encode (a lone surrogate)"
    elif isinstance(node, bool) or node is None:
        return None
    elif isinstance(node, int):
        if not -INT_LIMIT < node < INT_LIMIT:
            return "an integer of more than 4,300 digits"
    elif isinstance(node, float):
        if not math.isfinite(node):
            return "a number that is not finite"
    elif not isinstance(node, dict | list):
        return f"{type(node).__name__} is not JSON data"
    return None


def _fallback(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)
