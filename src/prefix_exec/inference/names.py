"""What names and schemas say before any value is seen (RESTler's priors): which arguments are named like ids, the
word a name stands for (its *stem*, the kind's name), and which arguments a schema says hold plain values.

- :func:`words` splits ``reservation_id``, ``reservationId``, ``flights[*].flight_number`` into lower-case words;
- :func:`id_named`: the last word is an id word (:data:`ID_WORDS`: ``id``, ``ids``, ``uuid``, ``number``, ...);
  :func:`id_shaped`: a result path that holds ids by its name or shape;
- :func:`stem`: the name less its id word (or a last ``name``), singular: ``reservation_id``, ``reservations`` and
  ``reservationIds`` all stand for ``reservation``, ``entityNames`` for ``entity``; a name that is only an id word
  (``id``, ``name``) stands for the object that holds it (``payment_methods[*].id`` -> ``payment_method``,
  ``entities[*].name`` -> ``entity``);
- :func:`plain_value`: the argument's schema says it holds a plain value, never a reference: an ``enum`` or
  ``const``, a boolean or a number, or a date/time ``format``; the reason in words, or ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: Last words that name an id.
ID_WORDS = frozenset({"id", "ids", "uuid", "uuids", "guid", "guids", "number", "numbers"})
#: Names that say nothing of what they hold: the holder names it.
GENERIC = frozenset({"id", "ids", "uuid", "guid", "name", "names", "key", "keys", "value", "values", ""})
#: Names of a link's ends: what they hold is named elsewhere (no kind is named after them).
ENDS = frozenset({"from", "to", "source", "target", "parent", "child", "src", "dst"})
#: JSON Schema formats of plain values.
PLAIN_FORMATS = frozenset({"date", "date-time", "time", "duration"})

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")


def words(name: str) -> list[str]:
    """The lower-case words of a name or of a path's last name (``flightNumber`` -> ``[flight, number]``)."""
    return [w.lower() for w in _SPLIT.split(_CAMEL.sub("_", name)) if w]


def id_named(name: str) -> bool:
    """Whether ``name``'s last word is an id word (``reservation_id``, ``item_ids``, ``flight_number``, ``id``)."""
    found = words(name)
    return bool(found) and found[-1] in ID_WORDS


def id_shaped(path: str) -> bool:
    """Whether a result path holds ids by its shape or name: a whole scalar result (``$``), a list's scalars or an
    object's values (``reservations[*]``), a field named like an id (``reservation_id``, ``[*].flight_number``), or
    the field ``name`` of listed objects (``entities[*].name``: what such objects are known by)."""
    if path == "$" or path.endswith("[*]"):
        return True
    last = path.rsplit(".", 1)[-1]
    return id_named(last) or last.lower() == "name"


def singular(word: str) -> str:
    """``reservations`` -> ``reservation``, ``entities`` -> ``entity``, ``address`` stays."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def stem(path: str) -> str:
    """The word a path's last name stands for (module docstring); ``""`` when it names nothing."""
    parts = [p.replace("[*]", "") for p in path.split(".") if p.replace("[*]", "") not in ("", "$")]
    for name in reversed(parts):
        found = words(name)
        if len(found) > 1 and (found[-1] in ID_WORDS or found[-1] in ("name", "names")):
            found = found[:-1]
        if not found or "_".join(found) in GENERIC:
            continue
        return "_".join([*found[:-1], singular(found[-1])])
    return ""


def argument_schema(parameters: Any, path: str) -> Mapping[str, Any] | None:
    """The schema of the values at argument ``path`` (a ``refs`` key) in a tool's ``parameters``: through
    ``properties`` by name and ``items`` at each ``[*]``; a list of scalars at the path gives its ``items``.
    ``None`` when the schema does not say."""
    node: Any = parameters
    for part in path.split("."):
        name = part.replace("[*]", "")
        properties = node.get("properties") if isinstance(node, Mapping) else None
        node = properties.get(name) if isinstance(properties, Mapping) else None
        for _ in range(part.count("[*]")):
            node = node.get("items") if isinstance(node, Mapping) else None
    if isinstance(node, Mapping) and node.get("type") == "array":
        node = node.get("items")
    return node if isinstance(node, Mapping) else None


def plain_value(schema: Mapping[str, Any] | None) -> str | None:
    """Why the schema says the argument holds a plain value (module docstring), or ``None``."""
    if schema is None:
        return None
    if "enum" in schema or "const" in schema:
        return "its schema lists the values (enum)"
    types = schema.get("type")
    kinds = set(types) if isinstance(types, list) else {types}
    if kinds and kinds <= {"boolean", "number", "null"}:
        return f"its schema says {'/'.join(sorted(str(k) for k in kinds))}"
    if schema.get("format") in PLAIN_FORMATS:
        return f"its schema's format is {schema['format']}"
    return None


def declared(parameters: Any, path: str) -> bool:
    """Whether a tool's schema declares argument ``path`` (a ``refs`` key) at every level that lists its
    ``properties``; a level that lists none cannot say, and is trusted."""
    node: Any = parameters
    for part in path.split("."):
        name = part.replace("[*]", "")
        properties = node.get("properties") if isinstance(node, Mapping) else None
        if isinstance(properties, Mapping) and name not in properties:
            return False
        node = properties.get(name) if isinstance(properties, Mapping) else None
        for _ in range(part.count("[*]")):
            node = node.get("items") if isinstance(node, Mapping) else None
    return True
