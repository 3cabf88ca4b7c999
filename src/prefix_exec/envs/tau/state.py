"""Cheap independent copies of a tau2 domain DB: copy-on-access tables over one shared parsed DB.

A tau2 domain DB (airline ``FlightDB``: flights, users, reservations; retail ``RetailDB``: products, users,
orders) is a pydantic model whose fields are ``dict[str, Record]``. Parsing and validating ``db.json`` costs
~0.25 s (airline); a deep copy of the parsed model costs about the same, so neither is cheap per rollout.

Instead each rollout gets a model whose tables are :class:`CopyOnAccess` dicts: a shallow copy of the shared
table (microseconds) that deep-copies a record the first time it is fetched by key (``d[k]``, ``d.get(k)``,
``d.pop(k)``). tau2's tools mutate only records they fetched by key (``self.db.users[user_id]`` and the
objects reached from it); the only iterations over a whole table are in read-only tools (flight search,
user lookup by email or name, product listing). Iteration (``values()``, ``items()``) therefore hands out
the shared records as they are, *except* while a state-changing tool runs (``writing`` set by the session),
when it first copies every record it has not copied yet, so even a future write tool that iterates and
mutates stays isolated.

While a tool tau2 declares read-only (``ToolType.READ``) runs (``reading`` set by the session, and only then),
a fetch by key hands out the shared record too, uncopied: over half the fetches of a replay are reads, and a
copy costs ~0.1 ms. This trusts tau2's declaration: a READ tool that mutated what it fetched would change the
shared DB of every later rollout. tau2's airline and retail READ tools only read (tests/envs/test_tau_lazy.py
replays every recorded call of the real files and checks the shared DB is unchanged). Outside tool calls
(tests, tau2 code handed a session DB) a fetch by key still copies.

The shared DB may be a domain's lazy base (:mod:`.lazy`): its tables hold raw records until first needed. A
table over it holds those raw records too; a read validates the record into the base (once per process) and
stores the validated one, a private copy is validated straight from the raw record. Code that reads a table's
storage at C level (a pydantic dump of the DB) must first call :func:`~.lazy.materialize` on the DB.

:func:`fork_db` gives two independent DBs from one: both sides forget which records they own, so each copies
again on its next access and neither can see the other's later writes.

:func:`db_json` is the text tau2 hashes to compare two DBs; a record still shared is written once, however
many DBs share it.
"""

from __future__ import annotations

import copy
import json
import pickle
import typing
import weakref
from collections.abc import ItemsView, ValuesView
from typing import Any

from prefix_exec.envs.tau.lazy import LazyTable, materialize
from prefix_exec.json_types import JsonObject


class WriteFlag:
    """The flags shared by the tables of one DB: ``writing`` while a state-changing tool runs, ``reading``
    while a tool tau2 declares read-only (``ToolType.READ``) runs; both ``False`` between calls."""

    __slots__ = ("reading", "writing")

    def __init__(self) -> None:
        self.writing = False
        self.reading = False

    def call(self, *, read_only: bool) -> None:
        """A tool call starts: read-only or state-changing."""
        self.reading = read_only
        self.writing = not read_only

    def done(self) -> None:
        """The tool call is over."""
        self.reading = self.writing = False


class CopyOnAccess(dict[str, Any]):
    """A dict whose values are shared until fetched by key, then replaced by a private deep copy.

    The stored values are always the current state (shared or owned), so C-level readers that bypass the
    overrides (pydantic serialisation, ``json.dumps``) see exactly the table's content.
    """

    __slots__ = ("_flag", "_origin", "_owned", "_pickles")

    def __init__(
        self, shared: JsonObject, flag: WriteFlag, origin: JsonObject | None = None, pickles: Pickles | None = None
    ) -> None:
        # dict's C fast path copies the raw storage: no record is fetched (or copied) here.
        super().__init__(shared)
        self._owned: set[str] = set()
        self._flag = flag
        # The initial DB's table (never mutated) and the pickles of its records, by key: a record still the
        # initial one is copied from its kept pickle, not pickled again.
        self._origin = origin
        self._pickles = pickles

    def _own(self, key: str) -> Any:
        value = dict.__getitem__(self, key)
        if key in self._owned:
            return value
        if self._flag.reading:  # a read-only tool: the shared record, uncopied (see the module docstring)
            return self._resolve(key, value)
        value = self._copy(key, value)
        dict.__setitem__(self, key, value)
        self._owned.add(key)
        return value

    def _resolve(self, key: str, value: Any) -> Any:
        """``value`` (stored under ``key``), or, when it is a lazy base's raw record, the base's validated one
        (also stored here in its place, still shared)."""
        origin = self._origin
        if type(value) is dict and isinstance(origin, LazyTable) and origin.holds(key, value):
            value = origin.record(key)
            dict.__setitem__(self, key, value)
        return value

    def validate_all(self) -> None:
        """Replace every raw record still stored by the base's validated one (before a whole-table read; the
        name :func:`~.lazy.materialize` calls on every table, as on a :class:`~.lazy.LazyTable`)."""
        origin = self._origin
        if isinstance(origin, LazyTable):
            keys = [key for key, value in dict.items(self) if type(value) is dict]
            if keys:
                origin.validate_all()  # validated in one go, the collector paused
                for key in keys:
                    self._resolve(key, dict.__getitem__(self, key))

    def _copy(self, key: str, value: Any) -> Any:
        origin, pickles = self._origin, self._pickles
        if isinstance(origin, LazyTable) and origin.holds(key, value):
            return origin.fresh(key)  # validated from the raw record: no pickle needed
        copier = getattr(value, "model_copy", None)
        if origin is None or pickles is None or copier is None or origin.get(key) is not value:
            return _deep_copy(value)
        data = pickles.get(key)
        try:
            if data is None:
                data = pickles[key] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            return pickle.loads(data)
        except (pickle.PicklingError, TypeError, AttributeError):  # as _deep_copy does
            return copier(deep=True)

    def __getitem__(self, key: str) -> Any:
        return self._own(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self._own(key) if dict.__contains__(self, key) else default

    def pop(self, key: str, *default: Any) -> Any:
        if dict.__contains__(self, key):
            value = self._own(key)
            dict.__delitem__(self, key)
            self._owned.discard(key)
            return value
        return dict.pop(self, key, *default)

    def __setitem__(self, key: str, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._owned.add(key)

    def __delitem__(self, key: str) -> None:
        dict.__delitem__(self, key)
        self._owned.discard(key)

    def own_all(self) -> None:
        """Copy every record not yet owned (before a writer iterates the table)."""
        for key in list(dict.keys(self)):
            self._own(key)

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        self._before_iteration()
        return dict.values(self)

    def items(self) -> ItemsView[str, Any]:  # type: ignore[override]
        self._before_iteration()
        return dict.items(self)

    def _before_iteration(self) -> None:
        if self._flag.writing:
            self.own_all()
        else:
            self.validate_all()

    def disown(self) -> None:
        """Treat every stored record as shared again (after a fork made another table point at them)."""
        self._owned.clear()


def _deep_copy(value: Any) -> Any:
    """A deep copy of a record. A pydantic model is copied by a pickle round trip, which gives what
    ``model_copy(deep=True)`` gives (fields, fields set, extras, private attributes) in about half the time
    (an airline flight with its dates took 0.6 ms); a model that cannot be pickled is copied by pydantic."""
    copier = getattr(value, "model_copy", None)
    if copier is not None:
        try:
            return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        except (pickle.PicklingError, TypeError, AttributeError):
            return copier(deep=True)
    return copy.deepcopy(value)


def table_fields(db: Any) -> tuple[str, ...]:
    """The names of ``db``'s dict-valued fields (its tables)."""
    return tuple(name for name in type(db).model_fields if isinstance(getattr(db, name), dict))


#: The pickles of one initial DB's records: table name -> record key -> pickle of the record.
Pickles = dict[str, bytes]
RecordPickles = dict[str, Pickles]


def per_db_cache(registry: dict[int, tuple[weakref.ref[Any], Any]], db: Any, empty: Any) -> Any:
    """The cache ``registry`` keeps for ``db`` (``empty`` is stored the first time), by the DB's ``id``, while the
    DB lives: a pydantic model is not hashable, so no WeakKeyDictionary; the weak reference drops the entry when
    the DB goes, and tells a new DB that reuses a dead one's ``id`` from it."""
    key = id(db)
    entry = registry.get(key)
    if entry is None or entry[0]() is not db:
        entry = registry[key] = (weakref.ref(db, lambda _: registry.pop(key, None)), empty)
    return entry[1]


#: The record pickles of each initial DB (:func:`per_db_cache`). Only records fetched by some session are
#: pickled; at most the size of the DB's pickle (airline's ~10 MB).
_INITIAL_PICKLES: dict[int, tuple[weakref.ref[Any], RecordPickles]] = {}


def _initial_pickles(initial: Any) -> RecordPickles:
    pickles: RecordPickles = per_db_cache(_INITIAL_PICKLES, initial, {})
    return pickles


def lazy_db(shared: Any, *, initial: bool = False) -> tuple[Any, WriteFlag]:
    """A DB equal to ``shared`` whose tables copy records on first access; ``shared`` is never mutated.

    Returns the DB and the flag its tables read; the session sets ``flag.writing`` around state-changing
    tool calls. Non-table fields are deep-copied (the tau2 airline and retail DBs have none).

    ``initial=True`` says ``shared`` is an initial DB that nobody mutates (a domain's base DB, a task's initial
    DB): the pickle a record is copied through is kept (while ``shared`` lives) and reused by every DB made from
    ``shared`` and their forks, so a record is pickled once per process and only unpickled per copy.
    """
    flag = WriteFlag()
    pickles = _initial_pickles(shared) if initial else None
    values: JsonObject = {}
    for name in type(shared).model_fields:
        value = getattr(shared, name)
        if isinstance(value, CopyOnAccess):  # a fork: the same initial records and pickles
            values[name] = CopyOnAccess(value, flag, value._origin, value._pickles)
        elif isinstance(value, LazyTable):  # private copies are validated from its raw records
            values[name] = CopyOnAccess(value, flag, value)
        elif pickles is not None and type(value) is dict:
            values[name] = CopyOnAccess(value, flag, value, pickles.setdefault(name, {}))
        elif isinstance(value, dict):
            values[name] = CopyOnAccess(value, flag)
        else:
            values[name] = _deep_copy(value)
    db = type(shared).model_construct(**values)
    return db, flag


def fork_db(db: Any) -> tuple[Any, WriteFlag]:
    """An independent DB with ``db``'s current content. ``db`` stays valid and independent too."""
    for name in table_fields(db):
        table = getattr(db, name)
        if isinstance(table, CopyOnAccess):
            table.disown()
    return lazy_db(db)


#: The JSON text of shared records, by ``id``; each entry keeps its record alive, so an id is never reused.
RecordTexts = dict[int, tuple[Any, str]]


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)  # as tau2's get_dict_hash writes a DB


def db_json(db: Any, texts: RecordTexts) -> str:
    """``json.dumps(db.model_dump(), sort_keys=True, default=str)``, the text tau2's ``get_dict_hash`` hashes.

    The records of a :class:`CopyOnAccess` table that are still shared are not serialized again: their text
    is taken from ``texts`` (filled here), so hashing a DB after a few calls costs the records the calls
    touched, not the whole DB (airline's takes ~0.1 s). The text is tau2's to the byte: json.dumps of a dict
    with sorted string keys is ``{"key": value, ...}`` of its members' own texts, and a record whose class is
    exactly its table's declared one dumps as its part of the DB does. Anything else is written whole: a DB
    class whose dump is not its fields' own (serializers, computed, excluded or aliased fields, extras), a
    table of another declared type, a key that is not a string, a record of another class.
    """
    model = type(db)
    if model not in _RECORD_TYPES:
        _RECORD_TYPES[model] = _record_types(model)
    record_types = _RECORD_TYPES[model]
    if record_types is None or getattr(db, "model_extra", None):
        return _dumps(materialize(db).model_dump())
    parts = []
    for name in sorted(model.model_fields):
        value = getattr(db, name)
        record_type = record_types.get(name)
        text = None
        if record_type is not None and isinstance(value, CopyOnAccess):
            text = _table_json(value, record_type, texts)
        if text is None:
            text = _dumps(materialize(db).model_dump(include={name})[name])
        parts.append(f"{json.dumps(name)}: {text}")
    return "{" + ", ".join(parts) + "}"


_RECORD_TYPES: dict[type, JsonObject | None] = {}


def _record_types(model: Any) -> JsonObject | None:
    """The record class of each ``dict[str, Record]`` field of ``model``, or ``None`` when the model's dump is
    not plainly its fields' own dumps (then :func:`db_json` writes it whole)."""
    decorators = model.__pydantic_decorators__
    fields = model.model_fields
    if (
        model.model_config.get("serialize_by_alias")
        or model.model_computed_fields
        or decorators.field_serializers
        or decorators.model_serializers
        or any(f.exclude or getattr(f, "exclude_if", None) or f.alias or f.serialization_alias for f in fields.values())
    ):
        return None
    found = {}
    for name, field in fields.items():
        args = typing.get_args(field.annotation)
        is_table = typing.get_origin(field.annotation) is dict and len(args) == 2 and args[0] is str
        if is_table and isinstance(args[1], type) and hasattr(args[1], "model_fields"):  # a pydantic model
            found[name] = args[1]
    return found


def _table_json(table: CopyOnAccess, record_type: Any, texts: RecordTexts) -> str | None:
    keys = list(dict.keys(table))
    if not all(isinstance(k, str) for k in keys):
        return None
    members = []
    for key in sorted(keys):
        record = table._resolve(key, dict.__getitem__(table, key))
        if type(record) is not record_type:  # a subclass or another model dumps otherwise inside the DB
            return None
        if key in table._owned:  # copied, and maybe changed, by this DB's calls
            text = _dumps(record.model_dump())
        else:
            found = texts.get(id(record))
            if found is None or found[0] is not record:
                found = texts[id(record)] = (record, _dumps(record.model_dump()))
            text = found[1]
        members.append(f"{json.dumps(key)}: {text}")
    return "{" + ", ".join(members) + "}"
