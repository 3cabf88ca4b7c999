"""Attribute values as trace files hold them, read into plain JSON values, bounded.

- :func:`any_value`: OTLP/JSON's ``AnyValue`` (``{"stringValue"}``, ``{"intValue": "5"}`` with int64 as a string,
  ``{"boolValue"}``, ``{"doubleValue"}``, ``{"arrayValue": {"values": [...]}}``, ``{"kvlistValue": {"values":
  [{"key", "value"}]}}``, ``{"bytesValue"}`` kept as its base64 text); nesting deeper than :data:`MAX_DEPTH` or a
  value of another shape is an :class:`AttributeProblem` naming the field;
- :func:`key_values`: an OTLP ``attributes`` list ``[{"key", "value"}]`` as a dict (a later key wins);
- :func:`json_text`: a string attribute that holds JSON (``gen_ai.input.messages``, ``input.value``), parsed, or the
  text itself when it is not JSON;
- :func:`unflatten`: OpenInference's flattened keys (``llm.output_messages.0.message.role``) under a prefix, as
  nested lists and objects; indices above :data:`MAX_INDEX` are ignored (a hostile index cannot allocate).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from prefix_exec.json_types import JsonObject, JsonValue

#: Deepest nesting of arrays and kvlists read in one attribute value.
MAX_DEPTH = 32
#: Largest list index read from a flattened key (``llm.input_messages.N``).
MAX_INDEX = 10_000
#: Most attributes read on one span, event or log record.
MAX_KEYS = 10_000


class AttributeProblem(ValueError):
    """An attribute of the wrong shape: ``field`` names it (``attributes[3].value``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


_SCALARS: dict[str, type | tuple[type, ...]] = {"stringValue": str, "boolValue": bool, "doubleValue": (int, float)}


def any_value(value: Any, where: str, depth: int = 0) -> JsonValue:
    """One OTLP ``AnyValue`` as a JSON value (module docstring)."""
    if depth > MAX_DEPTH:
        raise AttributeProblem(where, f"nested more than {MAX_DEPTH} deep")
    if not isinstance(value, Mapping):
        raise AttributeProblem(where, f"expected an AnyValue object, got {_kind(value)}")
    if not value:
        return None
    (key, inner), *_ = value.items()
    if key in _SCALARS:
        if not isinstance(inner, _SCALARS[key]) or (key == "doubleValue" and isinstance(inner, bool)):
            raise AttributeProblem(f"{where}.{key}", f"expected {key[:-5]}, got {_kind(inner)}")
        return inner
    if key == "intValue":
        return _int(inner, f"{where}.intValue")
    if key == "bytesValue":
        if not isinstance(inner, str):
            raise AttributeProblem(f"{where}.bytesValue", f"expected base64 text, got {_kind(inner)}")
        return inner
    if key == "arrayValue":
        items = _values(inner, f"{where}.arrayValue")
        return [any_value(item, f"{where}.arrayValue.values[{i}]", depth + 1) for i, item in enumerate(items)]
    if key == "kvlistValue":
        return key_values(_values(inner, f"{where}.kvlistValue"), f"{where}.kvlistValue.values", depth + 1)
    raise AttributeProblem(where, f"not an AnyValue kind: {str(key)[:40]!r}")


def key_values(items: Any, where: str, depth: int = 0) -> JsonObject:
    """An OTLP ``[{"key", "value"}]`` list as a dict; a missing list is empty."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise AttributeProblem(where, f"expected a list of key/value objects, got {_kind(items)}")
    out: JsonObject = {}
    for index, item in enumerate(items[:MAX_KEYS]):
        at = f"{where}[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise AttributeProblem(at, "expected {key: string, value: AnyValue}")
        out[item["key"]] = any_value(item.get("value", {}), f"{at}.value", depth)
    return out


def _values(inner: Any, where: str) -> list[Any]:
    values = inner.get("values", []) if isinstance(inner, Mapping) else None
    if not isinstance(values, list):
        raise AttributeProblem(where, f"expected {{values: [...]}}, got {_kind(inner)}")
    return values


def _int(value: Any, where: str) -> int:
    """An int64, as a number or (OTLP/JSON) a decimal string."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and len(value) <= 20 and value.lstrip("-").isdecimal():
        return int(value)
    raise AttributeProblem(where, f"expected an integer (or its decimal text), got {_kind(value)}")


def json_text(value: JsonValue) -> JsonValue:
    """``value`` parsed when it is text holding a JSON object or list; else ``value`` itself."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def unflatten(attributes: Mapping[str, JsonValue], prefix: str) -> list[Any]:
    """The list OpenInference flattened under ``prefix`` (``prefix.N.rest``), each item a nested object built
    from its ``rest`` keys (``message.tool_calls.0.tool_call.id``); numeric parts become list indices."""
    root: dict[int, Any] = {}
    start = prefix + "."
    for key, value in attributes.items():
        if not key.startswith(start):
            continue
        parts = key[len(start) :].split(".")
        if not parts[0].isdecimal() or int(parts[0]) > MAX_INDEX:
            continue
        index = int(parts[0])
        if len(parts) == 1:
            root[index] = value
            continue
        node = root.setdefault(index, {})
        for part in parts[1:-1]:
            if not isinstance(node, dict):
                break
            node = node.setdefault(part, {})
        if isinstance(node, dict):
            node[parts[-1]] = value
    return [_lists(root[k]) for k in sorted(root)]


def _lists(node: Any) -> Any:
    """Objects whose keys are all decimal indices, as lists in index order."""
    if not isinstance(node, dict):
        return node
    if node and all(isinstance(k, str) and k.isdecimal() and int(k) <= MAX_INDEX for k in node):
        return [_lists(node[k]) for k in sorted(node, key=int)]
    return {str(k): _lists(v) for k, v in node.items()}


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {str(value)[:40]!r}"
