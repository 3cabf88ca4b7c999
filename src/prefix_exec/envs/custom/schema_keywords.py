"""JSON Schema keywords that jsonschema runs without a bound, replaced with bounded ones
(:mod:`prefix_exec.envs.custom.json_schema` compiles every schema with them).

- ``pattern``, ``patternProperties`` and ``additionalProperties`` beside it match on the ``regex`` engine with a
  timeout (:data:`MATCH_SECONDS`, cut to what is left of the rollout's budget), never on ``re``, which cannot be
  stopped; a pattern longer than :data:`MAX_PATTERN_CHARS`, nesting groups deeper than :data:`MAX_GROUP_DEPTH` or
  expanding past :data:`MAX_PATTERN_WEIGHT` (counted repeats multiply) is refused before it is compiled.
- ``uniqueItems`` and ``enum`` compare hashed canonical values in linear time, where jsonschema compares every
  pair when values do not sort (40,000 mixed items take minutes).
- ``multipleOf`` (draft 3: ``divisibleBy``) falls back to exact fractions where jsonschema's float arithmetic
  raises ``OverflowError`` (``10**400`` over ``0.5``, ``1.5`` over ``10**400``); NaN and infinities (which
  Python's JSON reader accepts) are never a multiple.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any

from jsonschema import ValidationError
from jsonschema.validators import extend

from prefix_exec import budget
from prefix_exec.json_types import JsonMapping

#: Longest ``pattern`` or ``patternProperties`` key, characters.
MAX_PATTERN_CHARS = 2000
#: Deepest nesting of groups in a pattern (the ``regex`` parser recurses per group).
MAX_GROUP_DEPTH = 32
#: Largest expanded size of a pattern (atoms times their counted repeats: ``(a{1000}){1000}`` is 10**6 and
#: takes a second to compile).
MAX_PATTERN_WEIGHT = 100_000
#: Longest a single regular-expression search may take, seconds (a legitimate pattern takes microseconds).
#: ``regex`` measures it in processor time (``clock()``): on a busy machine the wall time is longer, and a
#: rollout that runs past its wall-clock budget that way is reported unscorable (``budget.check`` after it).
MATCH_SECONDS = 1.0


class SchemaProblem(ValueError):
    """A schema that cannot be compiled or applied within bounds; the message says why (one line)."""


def pattern_weight(pattern: str) -> int:
    """The expanded size of ``pattern`` (see :data:`MAX_PATTERN_WEIGHT`); :class:`SchemaProblem` past a bound."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise SchemaProblem(f"pattern of {len(pattern):,} characters, longer than {MAX_PATTERN_CHARS:,}")
    groups: list[int] = [0]  # the weight of each open group's contents so far
    last = 0  # weight of the atom a quantifier would apply to
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i, last = i + 2, 1
        elif char == "[":
            i, last = _class_end(pattern, i), 1
        elif char == "(":
            groups.append(0)
            if len(groups) > MAX_GROUP_DEPTH + 1:
                raise SchemaProblem(f"pattern nests groups deeper than {MAX_GROUP_DEPTH}: {short(pattern)!r}")
            i, last = i + 1, 0
            continue
        elif char == ")" and len(groups) > 1:
            last = groups.pop() or 1
            i += 1
        elif char == "{" and (end := _counted(pattern, i)) is not None:
            i, count = end
            groups[-1] += last * max(count - 1, 0)
            last = 0
        else:
            i, last = i + 1, 1
        groups[-1] += last
        if groups[-1] > MAX_PATTERN_WEIGHT:
            raise SchemaProblem(
                f"pattern expands past {MAX_PATTERN_WEIGHT:,} atoms (counted repeats multiply): {short(pattern)!r}"
            )
    return max(sum(groups), 1)


def _class_end(pattern: str, start: int) -> int:
    """The index after the character class opening at ``start``."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


def _counted(pattern: str, start: int) -> tuple[int, int] | None:
    """``(index after, largest count)`` of a counted repeat ``{m}``, ``{m,}`` or ``{m,n}`` at ``start``."""
    end = pattern.find("}", start)
    if end < 0:
        return None
    parts = pattern[start + 1 : end].split(",")
    if len(parts) > 2 or not all(p.strip().isdecimal() or not p for p in parts) or not any(parts):
        return None
    bounds = [int(p) for p in parts if p.strip()]
    return end + 1, max(bounds) if bounds else 0


@functools.lru_cache(maxsize=1024)
def compiled_pattern(pattern: str) -> Any:
    import regex  # here: most tools lists have no pattern, and the engine's import is 10 ms of every command's start

    pattern_weight(pattern)
    try:
        return regex.compile(pattern)
    except (regex.error, RecursionError, ValueError, OverflowError) as exc:
        raise SchemaProblem(f"pattern {short(pattern)!r} is not a valid regular expression: {exc}") from None


def _search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``, within :data:`MATCH_SECONDS` and the budget."""
    compiled = compiled_pattern(pattern)
    left = budget.remaining()
    if left <= 0:
        budget.check()
    seconds = min(MATCH_SECONDS, left) if math.isfinite(left) else MATCH_SECONDS
    try:
        return compiled.search(text, timeout=max(seconds, 0.001)) is not None
    except TimeoutError:
        budget.check()
        raise SchemaProblem(
            f"pattern {short(pattern)!r} took over {seconds:g} s on a string of {len(text):,} characters "
            "(catastrophic backtracking)"
        ) from None


def _pattern(validator: Any, pattern: str, instance: Any, schema: JsonMapping) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{short(repr(instance))} does not match {short(repr(pattern))}")


def _pattern_properties(
    validator: Any, patterns: JsonMapping, instance: Any, schema: JsonMapping
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: JsonMapping) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in properties and not any(_search(p, k) for p in patterns)]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:  # jsonschema's own messages
        names = ", ".join(repr(k) for k in sorted(extras, key=str)[:20]) + (", ..." if len(extras) > 20 else "")
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(p) for p in sorted(patterns))
            yield ValidationError(f"{names} {verb} not match any of the regexes: {short(joined)}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: JsonMapping) -> Iterator[ValidationError]:
    if unique and validator.is_type(instance, "array"):
        keys = [_key(item) for item in instance]
        if len(set(keys)) < len(keys):
            yield ValidationError(f"{short(repr(instance))} has non-unique elements")


def _enum(validator: Any, members: Any, instance: Any, schema: JsonMapping) -> Iterator[ValidationError]:
    if _key(instance) not in _member_keys(members):
        yield ValidationError(f"{short(repr(instance))} is not one of {short(repr(members))}")


def _multiple_of(validator: Any, factor: Any, instance: Any, schema: JsonMapping) -> Iterator[ValidationError]:
    """jsonschema's ``multipleOf`` (floats as it computes them), exact where a float would overflow."""
    if not validator.is_type(instance, "number"):
        return
    if isinstance(instance, float) and not math.isfinite(instance):
        failed = True
    else:
        try:
            if isinstance(factor, float):
                quotient = instance / factor
                failed = int(quotient) != quotient
            else:
                failed = bool(instance % factor)
        except OverflowError:
            failed = (Fraction(instance) / Fraction(factor)).denominator != 1
    if failed:
        yield ValidationError(f"{short(repr(instance))} is not a multiple of {short(repr(factor))}")


_ENUM_KEYS: dict[int, tuple[Any, frozenset[Any]]] = {}


def _member_keys(members: Any) -> frozenset[Any]:
    """The canonical keys of an ``enum`` list, computed once per list (kept by identity)."""
    cached = _ENUM_KEYS.get(id(members))
    if cached is not None and cached[0] is members:
        return cached[1]
    keys = frozenset(_key(m) for m in members) if isinstance(members, list) else frozenset()
    if len(_ENUM_KEYS) > 4096:
        _ENUM_KEYS.clear()
    _ENUM_KEYS[id(members)] = (members, keys)
    return keys


def _key(value: Any) -> Any:
    """A hashable key equal for values JSON Schema calls equal (``1`` and ``1.0``; never ``true`` and ``1``)."""
    if value is True or value is False:
        return ("boolean", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if value is None:
        return ("null",)
    if isinstance(value, Mapping):
        return ("object", frozenset((k, _key(v)) for k, v in value.items()))
    if isinstance(value, Sequence):
        return ("array", tuple(_key(v) for v in value))
    return ("other", id(value))


_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
    "enum": _enum,
    "multipleOf": _multiple_of,
    "divisibleBy": _multiple_of,  # draft 3's name
}


@functools.cache
def bounded(cls: Any) -> Any:
    """``cls`` (one draft's validator class) with the bounded keywords above."""
    return extend(cls, {k: v for k, v in _KEYWORDS.items() if k in cls.VALIDATORS})


def short(text: str) -> str:
    """``text`` cut to 200 characters: messages quote input, which may be megabytes long."""
    return text if len(text) <= 200 else text[:197] + "..."
