"""A domain's base DB validated record by record, when first needed, rather than all at once.

Validating airline's ``db.json`` (300 flights, 500 users, 2,000 reservations) costs ~0.13 s and makes ~66,000
objects the garbage collector then walks again and again; a replay touches a few dozen records besides the
flight table its searches read. :func:`lazy_base` builds the DB model (``model_construct``) over
:class:`LazyTable` tables holding ``json.loads``' raw records; a record is validated the first time something
asks for it, by key or by iterating its table, *into* the table, so it is validated once per process.

A raw record is a plain ``dict`` (a validated record is a pydantic model: the two are never confused). The raw
records are kept, never mutated, after validation too: they are what a session's private copy of a record is
validated from (:meth:`LazyTable.fresh`), an independent object graph, cheaper than pickling the shared one.

Only a DB class whose validation is exactly its tables' record validations is built lazily (every field a
``dict[str, Model]`` without constraints, no validators or serializers on the DB class, the raw data's keys
exactly its fields, each table a dict of objects); anything else is validated whole, as before.

C-level readers: the raw records sit in the dict storage itself, so code that reads a table's storage without
going through its methods (pydantic's ``model_dump``/``model_dump_json`` of the DB, ``json.dumps`` of a table,
``dict(table)``) sees raw records. :func:`materialize` validates every record of a DB's lazy tables first; the
project's own such readers (``state.db_json``, ``tasks.apply_initial_state``) go through it or resolve raw
records themselves. Python-level reads (``t[k]``, ``get``, ``values``, ``items``, ``==``, ``repr``, ``copy``,
``copy.deepcopy``, pickling) all see validated records.
"""

from __future__ import annotations

import copy
import gc
import typing
from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from contextlib import contextmanager
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonObject


class LazyTable(dict[str, Any]):
    """One table of a lazy base DB: key -> raw record (a plain ``dict``) until first asked for, then the
    validated record. ``record`` is the table's record class, ``name`` the table's field name (for messages).
    Never mutated by its users (it is a base DB's).
    """

    __slots__ = ("_name", "_raw", "_record")

    def __init__(self, raw: Mapping[str, JsonObject], record: Any, name: str = "table") -> None:
        super().__init__(raw)
        self._raw = dict(raw)  # the raw records, kept for private copies after validation replaced them
        self._record = record
        self._name = name

    def record(self, key: str) -> Any:
        """The shared validated record of ``key`` (validated into the table the first time); ``KeyError``,
        :class:`InvalidRecord` for a raw record the record class refuses."""
        value = dict.__getitem__(self, key)
        if type(value) is dict:
            value = self._validated(key)
            dict.__setitem__(self, key, value)
        return value

    def _validated(self, key: str) -> Any:
        try:
            return self._record.model_validate(self._raw[key])
        except ValueError as exc:  # pydantic's ValidationError: the domain's data, not the caller, is wrong
            raise InvalidRecord(f"{self._name} record {key!r} of the domain's DB does not validate: {exc}") from None

    def holds(self, key: str, value: Any) -> bool:
        """Whether ``value`` is ``key``'s initial record here: its raw record or its shared validated one."""
        return value is dict.get(self, key) or value is self._raw.get(key)

    def fresh(self, key: str) -> Any:
        """A private copy of ``key``'s initial record, validated from its raw record (shares no object with
        the table, whose raw records validation only reads)."""
        return self._validated(key)

    def validate_all(self) -> None:
        """Validate every record still raw (before a whole-table read), with the collector paused."""
        keys = [key for key, value in dict.items(self) if type(value) is dict]
        if keys:
            with collector_paused():
                for key in keys:
                    self.record(key)

    def __getitem__(self, key: str) -> Any:
        return self.record(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self.record(key) if dict.__contains__(self, key) else default

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        self.validate_all()
        return dict.values(self)

    def items(self) -> ItemsView[str, Any]:  # type: ignore[override]
        self.validate_all()
        return dict.items(self)

    def __eq__(self, other: object) -> bool:
        self.validate_all()
        if isinstance(other, LazyTable):
            other.validate_all()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # as dict's

    def __repr__(self) -> str:
        self.validate_all()
        return dict.__repr__(self)

    def copy(self) -> dict[str, Any]:
        """A plain dict of the validated records (as ``dict.copy``: the records themselves are shared)."""
        return dict(self.items())

    def __copy__(self) -> dict[str, Any]:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.copy(),))

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return self.__reduce__()


class InvalidRecord(InputError):
    """A record of a domain's ``db.json`` its record class refuses, found when first read (eagerly validated,
    it failed the domain's load). An input error, not a tool's: a session lets it through rather than make
    it the tool call's error message."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while the block runs, then the young generations collected once.

    Validating a table makes tens of thousands of containers and no cycle. With the collector on, each 700
    allocations trigger a young collection, and every ten of those an older one: a process that validates
    a table (or builds a domain) each run reaches a full collection of everything alive (~0.4 s with tau2's
    imports) every other run. Paused, the new objects are walked once afterwards, by ``gc.collect(1)``, which
    moves them to the oldest generation in one pass (left to itself, the collector walks them twice, as the
    youngest generation and then the middle one: ~20 ms more per cold airline run).
    Nested and concurrent use is safe: only the block that found the collector on turns it back on.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
            gc.collect(1)


def lazy_base(db_class: Any, raw: Any) -> Any:
    """``db_class.model_validate(raw)``, with its tables' records validated only when first needed when
    ``db_class`` and ``raw`` allow it (see the module docstring), else validated now. A record that does not
    validate raises :class:`InvalidRecord` (an :class:`InputError`) when it is first asked for, not here."""
    records = _lazy_record_types(db_class)
    if records is None or not _raw_tables(raw, records):
        return db_class.model_validate(raw)
    return db_class.model_construct(**{name: LazyTable(raw[name], record, name) for name, record in records.items()})


def materialize(db: Any) -> Any:
    """Validate every raw record of ``db``'s lazy tables (a base DB's or a session's over one), so C-level
    readers (pydantic dumps, ``json.dumps``) see only validated records. Returns ``db``."""
    for name in type(db).model_fields:
        table = getattr(db, name)
        resolve = getattr(table, "validate_all", None)
        if resolve is not None:
            resolve()
    return db


def _lazy_record_types(db_class: Any) -> dict[str, Any] | None:
    """The record class of each field of ``db_class`` when validating it is validating each table's records:
    no validators or serializers on the class, no extras allowed, every field a plain ``dict[str, Model]``."""
    decorators = db_class.__pydantic_decorators__
    if (
        decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
        or decorators.field_serializers
        or decorators.model_serializers
        or db_class.model_computed_fields
        or db_class.model_config.get("extra") == "allow"
        or db_class.__pydantic_post_init__
    ):
        return None
    found = {}
    for name, field in db_class.model_fields.items():
        args = typing.get_args(field.annotation)
        if (
            typing.get_origin(field.annotation) is not dict
            or len(args) != 2
            or args[0] is not str
            or not isinstance(args[1], type)
            or not hasattr(args[1], "model_validate")
            or field.metadata
            or field.alias
            or field.validation_alias
        ):
            return None
        found[name] = args[1]
    return found


def _raw_tables(raw: Any, records: Mapping[str, Any]) -> bool:
    """Whether ``raw`` holds exactly the tables ``records`` names, each a dict of string keys to objects."""
    if type(raw) is not dict or set(raw) != set(records):
        return False
    tables = raw.values()
    return all(type(t) is dict and all(type(k) is str and type(v) is dict for k, v in t.items()) for t in tables)
