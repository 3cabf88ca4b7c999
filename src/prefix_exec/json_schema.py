"""JSON Schemas from untrusted input, compiled and applied within bounds: the one way prefix-exec runs a schema.

A tool's argument schema comes from a spec, a transcript, an MCP or OpenAI tool list: anyone's file. So
:func:`compile_schema` resolves nothing outside the document and bounds every cost:

- **References.** Every reference keyword (``$ref``, ``$dynamicRef``, ``$recursiveRef``), in every draft and
  under every ``$id`` (a base URI that moves a ``#/...`` pointer to another document), is looked up in a
  registry that holds the document and the drafts' own metaschemas and refuses to retrieve anything else: no
  network, no file. A reference that does not resolve there is a :class:`SchemaProblem` naming the keyword and
  the URI, and so is a ``$schema`` naming a dialect jsonschema does not ship (reading it would need a fetch).
- **Depth.** A schema nests at most :data:`MAX_SCHEMA_DEPTH` objects and arrays; arguments checked by a
  schema that refers to itself (or compares whole values: ``enum``, ``uniqueItems``) at most
  :data:`MAX_INSTANCE_DEPTH`. A reference cycle that never descends into the arguments (``{"$ref": "#"}``) is a
  :class:`SchemaProblem`, not a ``RecursionError``.
- **Regular expressions.** ``pattern`` and ``patternProperties`` (and ``additionalProperties`` beside them) run
  on the ``regex`` engine with a timeout (:data:`MATCH_SECONDS`, cut to what is left of the rollout's budget),
  and a pattern longer than :data:`MAX_PATTERN_CHARS`, nesting groups deeper than :data:`MAX_GROUP_DEPTH`
  or expanding past :data:`MAX_PATTERN_WEIGHT` (counted repeats multiply) is refused before it is compiled.
  ``unevaluatedProperties`` beside ``patternProperties`` is refused: jsonschema matches those on ``re``.
- **Time.** ``uniqueItems`` and ``enum`` run in linear time on hashed canonical values (jsonschema falls back to
  comparing every pair when values do not sort: 40,000 mixed items take minutes); compiling checks the
  rollout's budget (:mod:`prefix_exec.budget`) as it goes.

Compiled schemas are kept by their JSON text (:func:`compile_schema` compiles a schema once per process).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema
import regex
from jsonschema import ValidationError
from jsonschema.validators import extend, validator_for
from jsonschema_specifications import REGISTRY as SPECIFICATIONS

from prefix_exec import budget
from prefix_exec.json_types import JsonMapping

#: Deepest nesting of objects and arrays in a schema (a tool's schema nests a few levels; jsonschema needs
#: about a dozen stack frames per level, so 300 levels overflow Python's stack).
MAX_SCHEMA_DEPTH = 64
#: Deepest arguments a self-referring (or value-comparing) schema is applied to.
MAX_INSTANCE_DEPTH = 48
#: Longest ``pattern`` or ``patternProperties`` key, characters.
MAX_PATTERN_CHARS = 2000
#: Deepest nesting of groups in a pattern (the ``regex`` parser recurses per group).
MAX_GROUP_DEPTH = 32
#: Largest expanded size of a pattern (atoms times their counted repeats: ``(a{1000}){1000}`` is 10**6 and
#: takes a second to compile), and of all patterns of one schema together.
MAX_PATTERN_WEIGHT = 100_000
MAX_SCHEMA_PATTERN_WEIGHT = 1_000_000
#: Longest a single regular-expression search may take, seconds (a legitimate pattern takes microseconds).
MATCH_SECONDS = 1.0

#: The keywords that refer to another schema, in any draft.
REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


class SchemaProblem(ValueError):
    """A schema that cannot be compiled or applied within bounds; the message says why (one line)."""


@dataclass(frozen=True)
class Schema:
    """A compiled schema. ``document`` is a private copy of the schema (read back from its JSON text);
    ``deep``: it refers to itself or compares whole values, so the arguments' depth is bounded."""

    document: Any
    validator: Any = field(repr=False)
    deep: bool

    def errors(self, instance: Any, *, bounded: bool = True) -> list[ValidationError]:
        """The validation errors of ``instance``, ordered by path; ``[]`` when valid. ``bounded=False`` lifts
        the bound on the arguments' depth (for our own fixed schemas, which never recurse).

        Raises :class:`SchemaProblem` when the schema cannot be applied (a reference that does not resolve,
        a cycle that never descends, a pattern past its time bound), and :class:`~prefix_exec.budget.OverBudget`
        past the rollout's budget.
        """
        if bounded and self.deep and _depth(instance, MAX_INSTANCE_DEPTH) > MAX_INSTANCE_DEPTH:
            message = f"nests deeper than {MAX_INSTANCE_DEPTH} levels, past what this schema is applied to"
            return [ValidationError(message, validator="maxDepth", instance=None)]
        try:
            found = list(self.validator.iter_errors(instance))
        except referencing.exceptions.Unresolvable as exc:  # a reference that only applying the schema reaches
            raise SchemaProblem(f"a reference does not resolve inside the schema: {_unresolvable(exc)}") from None
        except RecursionError:
            raise SchemaProblem(
                "the schema refers to itself without end (a reference cycle that never descends into the "
                "arguments) or nests too deeply"
            ) from None
        return sorted(found, key=lambda e: [(0, p) if isinstance(p, int) else (1, str(p)) for p in e.path])


def compile_schema(document: Any) -> Schema:
    """``document`` compiled: checked against its dialect's metaschema (``$schema``, draft 2020-12 when
    absent), its references, patterns and depth within the bounds above. Raises :class:`SchemaProblem`."""
    if not isinstance(document, (Mapping, bool)):
        raise SchemaProblem(f"a schema is an object or a boolean, not {type(document).__name__}")
    if _depth(document, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
        raise SchemaProblem(f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
    try:
        text = json.dumps(document, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SchemaProblem(f"the schema is not JSON: {exc}") from None
    return _compiled(text)


def schema_problem(document: Any) -> str | None:
    """Why ``document`` cannot check arguments (:func:`compile_schema`'s reason), or ``None``."""
    try:
        compile_schema(document)
    except SchemaProblem as exc:
        return str(exc)
    return None


@functools.lru_cache(maxsize=512)
def _compiled(text: str) -> Schema:
    document = json.loads(text)
    dialect = document.get("$schema") if isinstance(document, Mapping) else None
    if dialect is not None and (not isinstance(dialect, str) or _known(dialect) is None):
        raise SchemaProblem(
            f"$schema {dialect!r} is not a JSON Schema dialect known here (reading it would need a fetch); "
            "use a draft's URI, e.g. https://json-schema.org/draft/2020-12/schema"
        )
    cls = _bounded(validator_for(document, default=jsonschema.Draft202012Validator))
    meta = cls(cls.META_SCHEMA, format_checker=None, registry=_REGISTRY)
    error = next(iter(meta.iter_errors(document)), None)
    if error is not None:
        where = "".join(f"[{p!r}]" for p in error.absolute_path)
        raise SchemaProblem(f"not a valid JSON Schema: {_short(error.message)}" + (f" at {where}" if where else ""))
    validator = cls(document, format_checker=None, registry=_REGISTRY)
    deep = _walk(document, validator)
    schema = Schema(document, validator, deep)
    if isinstance(document, Mapping):
        schema.errors({})  # a cycle through the root ({"$ref": "#"}) shows on any arguments
    return schema


def _known(uri: str) -> type | None:
    """The validator class of a dialect URI jsonschema ships, or ``None``."""
    found: type = validator_for({"$schema": uri}, default=_Unknown)
    return None if found is _Unknown else found


class _Unknown:
    pass


def _refuse(uri: str) -> referencing.Resource[Any]:
    """The registry's retrieval: nothing outside the document (and the drafts' metaschemas) is ever read."""
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


_REGISTRY: referencing.Registry[Any] = referencing.Registry(retrieve=_refuse)  # type: ignore[call-arg]
#: What jsonschema resolves against: the drafts' metaschemas and the refusing registry.
_REGISTRY_WITH_SPECS = SPECIFICATIONS.combine(_REGISTRY)


def _walk(document: Any, validator: Any) -> bool:
    """Check every schema of ``document`` (its subschemas and every reference's target): references resolve
    inside the document, patterns are within bounds. Returns whether arguments need their depth bounded."""
    specification = referencing.jsonschema.specification_with(
        validator.ID_OF(validator.META_SCHEMA) or "urn:unknown-dialect", default=referencing.Specification.OPAQUE
    )
    root = specification.create_resource(document)
    stack = [(_REGISTRY_WITH_SPECS.resolver_with_root(root), root)]
    seen: set[int] = set()
    deep = False
    weight = 0
    while stack:
        budget.check()
        resolver, resource = stack.pop()
        contents = resource.contents
        if id(contents) in seen or not isinstance(contents, Mapping):
            continue
        seen.add(id(contents))
        deep = deep or any(k in contents for k in ("uniqueItems", "enum", *REFERENCE_KEYWORDS))
        for keyword in REFERENCE_KEYWORDS:
            uri = contents.get(keyword)
            if isinstance(uri, str):
                target = _lookup(resolver, keyword, uri)
                stack.append((target.resolver, specification.create_resource(target.contents)))
        weight += sum(_pattern_weight(p) for p in _patterns(contents))
        if weight > MAX_SCHEMA_PATTERN_WEIGHT:
            raise SchemaProblem(f"the schema's patterns together expand past {MAX_SCHEMA_PATTERN_WEIGHT:,} atoms")
        if "unevaluatedProperties" in contents and _any_key(document, "patternProperties"):
            raise SchemaProblem("unevaluatedProperties beside patternProperties is not supported here")
        try:
            subresources = list(resource.subresources())
        except referencing.exceptions.CannotDetermineSpecification as exc:
            raise SchemaProblem(f"a subschema's dialect is unknown: {exc}") from None
        stack.extend((resolver.in_subresource(sub), sub) for sub in subresources)
    return deep


def _lookup(resolver: Any, keyword: str, uri: str) -> Any:
    try:
        return resolver.lookup(uri)
    except (ValueError, IndexError, TypeError) as exc:  # referencing reads "#/enum/x" into a list with int()
        raise SchemaProblem(f"{keyword} {uri!r} does not resolve inside the schema ({exc})") from None
    except referencing.exceptions.Unresolvable as exc:
        raise SchemaProblem(
            f"{keyword} {uri!r} does not resolve inside the schema ({_unresolvable(exc)}); nothing outside the "
            "schema is read (no network, no file): put the definition in the schema's $defs"
        ) from None


def _unresolvable(exc: referencing.exceptions.Unresolvable) -> str:
    if isinstance(exc, referencing.exceptions.NoSuchAnchor):
        return f"no anchor {exc.anchor!r}"
    if isinstance(exc, referencing.exceptions.PointerToNowhere):
        return f"nothing at {exc.ref!r}"
    return f"{getattr(exc, 'ref', exc)!r} is another document"


def _patterns(contents: JsonMapping) -> Iterator[str]:
    if isinstance(contents.get("pattern"), str):
        yield contents["pattern"]
    if isinstance(contents.get("patternProperties"), Mapping):
        yield from (k for k in contents["patternProperties"] if isinstance(k, str))


def _any_key(document: Any, key: str) -> bool:
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if key in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _depth(value: Any, limit: int) -> int:
    """How deep ``value``'s objects and arrays nest (a scalar: 0), counted up to ``limit + 1``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (Mapping, list)):
            level += 1
            deepest = max(deepest, level)
            if level > limit:
                return level
            stack.extend((child, level) for child in (node.values() if isinstance(node, Mapping) else node))
    return deepest


def _short(text: str) -> str:
    return text if len(text) <= 200 else text[:197] + "..."


# --- regular expressions -------------------------------------------------------------------------------------


def _pattern_weight(pattern: str) -> int:
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
                raise SchemaProblem(f"pattern nests groups deeper than {MAX_GROUP_DEPTH}: {_short(pattern)!r}")
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
                f"pattern expands past {MAX_PATTERN_WEIGHT:,} atoms (counted repeats multiply): {_short(pattern)!r}"
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
def _regex(pattern: str) -> Any:
    _pattern_weight(pattern)
    try:
        return regex.compile(pattern)
    except (regex.error, RecursionError, ValueError, OverflowError) as exc:
        raise SchemaProblem(f"pattern {_short(pattern)!r} is not a valid regular expression: {exc}") from None


def _search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``, within :data:`MATCH_SECONDS` and the budget."""
    compiled = _regex(pattern)
    left = budget.remaining()
    if left <= 0:
        budget.check()
    seconds = min(MATCH_SECONDS, left) if math.isfinite(left) else MATCH_SECONDS
    try:
        return compiled.search(text, timeout=max(seconds, 0.001)) is not None
    except TimeoutError:
        budget.check()
        raise SchemaProblem(
            f"pattern {_short(pattern)!r} took over {seconds:g} s on a string of {len(text):,} characters "
            "(catastrophic backtracking)"
        ) from None


# --- keywords replaced with bounded ones ---------------------------------------------------------------------


def _pattern(validator: Any, pattern: str, instance: Any, schema: JsonMapping) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{_short(repr(instance))} does not match {_short(repr(pattern))}")


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
            yield ValidationError(f"{names} {verb} not match any of the regexes: {_short(joined)}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: JsonMapping) -> Iterator[ValidationError]:
    if unique and validator.is_type(instance, "array"):
        keys = [_key(item) for item in instance]
        if len(set(keys)) < len(keys):
            yield ValidationError(f"{_short(repr(instance))} has non-unique elements")


def _enum(validator: Any, members: Any, instance: Any, schema: JsonMapping) -> Iterator[ValidationError]:
    if _key(instance) not in _member_keys(members):
        yield ValidationError(f"{_short(repr(instance))} is not one of {_short(repr(members))}")


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
}


@functools.cache
def _bounded(cls: Any) -> Any:
    """``cls`` (one draft's validator class) with the bounded keywords above."""
    return extend(cls, {k: v for k, v in _KEYWORDS.items() if k in cls.VALIDATORS})
