"""Names for parsed JSON, so that ``Any`` elsewhere in the code means "anything".

Input is validated at the edges (readers, importers, ``io``), so the values inside a parsed object are JSON's:
``None``, ``bool``, ``int``, ``float``, ``str``, lists and string-keyed objects of these. The aliases keep
``Any`` as the value type because code narrows a value where it reads it (``isinstance`` or a schema check);
what they add is the statement of what the container is.

- :data:`JsonValue`: any value ``json.loads`` returns (the root of a document, an argument, a tool's result);
- :data:`JsonObject`: a parsed JSON object that the holder owns and may change;
- :data:`JsonMapping`: a parsed JSON object read only (a record's ``metadata``, a call's ``arguments``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

type JsonValue = Any
type JsonObject = dict[str, Any]
type JsonMapping = Mapping[str, Any]

__all__ = ["JsonMapping", "JsonObject", "JsonValue"]
