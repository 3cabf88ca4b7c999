"""Names for parsed JSON, so that ``Any`` elsewhere in the code means "anything".

Input is validated at the edges (readers, importers, ``io``), so the values inside a parsed object are JSON's:
``None``, ``bool``, ``int``, ``float``, ``str``, lists and string-keyed objects of these. The aliases keep
``Any`` as the value type because code narrows a value where it reads it (``isinstance`` or a schema check);
what they add is the statement of what the container is.

- :data:`JsonValue`: any value ``json.loads`` returns (the root of a document, an argument, a tool's result);
- :data:`JsonObject`: a parsed JSON object that the holder owns and may change;
- :data:`JsonMapping`: a parsed JSON object read only (a record's ``metadata``, a call's ``arguments``).

And the canonical JSON text of one value, the only way it is written and read: :func:`dumps` (one JSONL line)
and :func:`loads` (every failure a ``ValueError``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

type JsonValue = Any
type JsonObject = dict[str, Any]
type JsonMapping = Mapping[str, Any]

__all__ = ["JsonMapping", "JsonObject", "JsonValue", "dumps", "loads"]


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


def loads(text: str) -> Any:
    """Parse one JSON document; every way it can fail is a ``ValueError`` (never a RecursionError).

    Nesting past Python's recursion limit and integers past its digit limit (4,300) are refused as
    ``ValueError`` with a plain message, like malformed JSON.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # int digits limit
        raise ValueError(str(exc).split(";")[0]) from None


def _fallback(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)
