"""JSON Schemas from untrusted input, compiled and applied within bounds: the one way prefix-exec runs a schema.

A tool's argument schema comes from a spec, a transcript, an MCP or OpenAI tool list: anyone's file. So
:func:`compile_schema` resolves nothing outside the document and bounds every cost:

- **References.** Every reference keyword (``$ref``, ``$dynamicRef``, ``$recursiveRef``), in every draft and
  under every ``$id`` (a base URI that moves a ``#/...`` pointer to another document), is looked up in a
  registry that holds the document and the drafts' own metaschemas and refuses to retrieve anything else: no
  network, no file. A reference that does not resolve there is a :class:`SchemaProblem` naming the keyword and
  the URI, and so is a ``$schema`` naming a dialect jsonschema does not ship (reading it would need a fetch;
  the ``https://`` twin of a json-schema.org draft it ships over ``http://`` is that draft).
- **Depth.** A schema nests at most :data:`MAX_SCHEMA_DEPTH` objects and arrays; arguments checked by a
  schema that refers to itself (or compares whole values: ``enum``, ``uniqueItems``) at most
  :data:`MAX_INSTANCE_DEPTH`. A reference cycle that never descends into the arguments (``{"$ref": "#"}``) is a
  :class:`SchemaProblem`, not a ``RecursionError``.
- **Regular expressions and comparisons.** The keywords jsonschema runs unbounded are replaced
  (:mod:`prefix_exec.envs.custom.schema_keywords`): patterns match on a timed engine and are refused past a size, every
  pattern is compiled here (an invalid one is the schema's problem), the patterns of one schema expand to at
  most :data:`MAX_SCHEMA_PATTERN_WEIGHT` atoms together, and ``uniqueItems``/``enum`` take linear time.
  ``unevaluatedProperties`` beside ``patternProperties`` is refused: jsonschema matches those on ``re``.
- **Time.** Compiling checks the rollout's budget (:mod:`prefix_exec.budget`) as it goes.

Compiled schemas are kept by their JSON text (:func:`compile_schema` compiles a schema once per process).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema import ValidationError
from jsonschema.validators import validator_for
from jsonschema_specifications import REGISTRY as SPECIFICATIONS

from prefix_exec import budget
from prefix_exec.envs.custom.schema_keywords import SchemaProblem, bounded, compiled_pattern, pattern_weight, short
from prefix_exec.json_types import JsonMapping

#: Deepest nesting of objects and arrays in a schema (a tool's schema nests a few levels; jsonschema needs
#: about a dozen stack frames per level, so 300 levels overflow Python's stack).
MAX_SCHEMA_DEPTH = 64
#: Deepest arguments a self-referring (or value-comparing) schema is applied to.
MAX_INSTANCE_DEPTH = 48
#: Largest expanded size of all patterns of one schema together (see schema_keywords.MAX_PATTERN_WEIGHT).
MAX_SCHEMA_PATTERN_WEIGHT = 1_000_000
#: The keywords that refer to another schema, in any draft.
REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


#: Why a schema whose subschemas the reference resolver cannot read is refused (draft 3's ``extends`` given as
#: an object: ``referencing`` takes it for a list of schemas and raises AttributeError).
_UNREADABLE = (
    "the schema's subschemas cannot be read by the reference resolver ({}); in draft 3, give extends as a list"
)


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
        except (AttributeError, TypeError) as exc:  # referencing reads draft 3's ``extends`` object as a list
            raise SchemaProblem(_UNREADABLE.format(short(str(exc)))) from None
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
    if isinstance(dialect, str) and (twin := _http_twin(dialect)) is not None:
        document["$schema"] = dialect = twin  # our private copy
    if dialect is not None and (not isinstance(dialect, str) or _known(dialect) is None):
        raise SchemaProblem(
            f"$schema {_quoted(dialect)} is not a JSON Schema dialect known here (reading it would need a fetch); "
            "use a draft's URI, e.g. https://json-schema.org/draft/2020-12/schema"
        )
    cls = bounded(validator_for(document, default=jsonschema.Draft202012Validator))
    meta = cls(cls.META_SCHEMA, format_checker=None, registry=_REGISTRY)
    error = next(iter(meta.iter_errors(document)), None)
    if error is not None:
        where = short("".join(f"[{p!r}]" for p in error.absolute_path))
        raise SchemaProblem(f"not a valid JSON Schema: {short(error.message)}" + (f" at {where}" if where else ""))
    validator = cls(document, format_checker=None, registry=_REGISTRY)
    try:
        deep = _walk(document, validator)
    except (AttributeError, TypeError) as exc:  # as in Schema.errors
        raise SchemaProblem(_UNREADABLE.format(short(str(exc)))) from None
    schema = Schema(document, validator, deep)
    if isinstance(document, Mapping):
        schema.errors({})  # a cycle through the root ({"$ref": "#"}) shows on any arguments
    return schema


def _known(uri: str) -> type | None:
    """The validator class of a dialect URI jsonschema ships, or ``None``."""
    found: type = validator_for({"$schema": uri}, default=_Unknown)
    return None if found is _Unknown else found


def _http_twin(uri: str) -> str | None:
    """The ``http://`` URI jsonschema ships for a json-schema.org ``https://`` one it does not (drafts 3 to 7
    are named over http; schemas in the wild write https, which json-schema.org serves too), else ``None``."""
    if not uri.startswith("https://json-schema.org/") or _known(uri) is not None:
        return None
    twin = "http://" + uri.removeprefix("https://")
    return twin if _known(twin) is not None else None


class _Unknown:
    pass


def _retrieve_nothing(uri: str) -> referencing.Resource[Any]:
    """The registry's retrieval: nothing outside the document (and the drafts' metaschemas) is ever read."""
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


_REGISTRY: referencing.Registry[Any] = referencing.Registry(retrieve=_retrieve_nothing)  # type: ignore[call-arg]
#: What jsonschema resolves against: the drafts' metaschemas and the registry that retrieves nothing.
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
        for pattern in _patterns(contents):
            weight += pattern_weight(pattern)
            compiled_pattern(pattern)  # compiled now: an invalid pattern is the schema's problem, not a call's
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
        raise SchemaProblem(
            f"{keyword} {_quoted(uri)} does not resolve inside the schema ({short(str(exc))})"
        ) from None
    except referencing.exceptions.Unresolvable as exc:
        raise SchemaProblem(
            f"{keyword} {_quoted(uri)} does not resolve inside the schema ({_unresolvable(exc)}); nothing outside the "
            "schema is read (no network, no file): put the definition in the schema's $defs"
        ) from None


def _unresolvable(exc: referencing.exceptions.Unresolvable) -> str:
    if isinstance(exc, referencing.exceptions.NoSuchAnchor):
        return f"no anchor {_quoted(exc.anchor)}"
    if isinstance(exc, referencing.exceptions.PointerToNowhere):
        return f"nothing at {_quoted(exc.ref)}"
    return f"{_quoted(getattr(exc, 'ref', exc))} is another document"


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


def _quoted(value: Any) -> str:
    """``value``'s repr, cut to 200 characters (messages quote input, which may be megabytes long)."""
    return short(repr(value))
