"""Copy-on-access DB copies behave like eager deep copies: a random-operation oracle, and tau2's own environment
as the oracle for every recorded call of the real files."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_serializer

from prefix_exec.envs.tau.lazy import lazy_base, materialize
from prefix_exec.envs.tau.state import RecordTexts, _deep_copy, db_json, fork_db, lazy_db


class Record(BaseModel):
    value: int
    tags: list[str]


class Store(BaseModel):
    rows: dict[str, Record]
    other: dict[str, Record]


KEYS = ["a", "b", "c", "d"]
operations = st.lists(
    st.tuples(
        st.sampled_from(["bump", "tag", "set", "pop", "iter-bump", "fork", "read"]),
        st.sampled_from(KEYS),
        st.booleans(),
    ),
    max_size=25,
)


def shared_store() -> Store:
    return Store(
        rows={k: Record(value=i, tags=[k]) for i, k in enumerate(KEYS)},
        other={"z": Record(value=9, tags=[])},
    )


def apply(store: Any, flag: Any, op: str, key: str, writing: bool) -> None:
    """One mutation as a tau2 tool would do it: through a record fetched by key (or by iteration)."""
    rows = store.rows
    if op == "read":  # a read-only tool: fetches by key and iterates, changes nothing
        if flag is not None:
            flag.call(read_only=True)
        assert rows.get(key) is None or all(r.value >= 0 for r in rows.values())
        if flag is not None:
            flag.done()
        return
    if flag is not None:
        flag.writing = writing
    if op == "bump" and key in rows:
        rows[key].value += 1
    elif op == "tag" and rows.get(key) is not None:
        rows.get(key).tags.append("t")
    elif op == "set":
        rows[key] = Record(value=100, tags=[])
    elif op == "pop":
        rows.pop(key, None)
    elif op == "iter-bump" and writing:
        for record in rows.values():
            record.value += 10
    if flag is not None:
        flag.writing = False


INITIAL = shared_store()  # one initial DB across examples: its kept record pickles are reused by all of them


@settings(max_examples=200, deadline=None)
@given(operations, st.sampled_from(["plain", "initial", "lazy base"]))
def test_lazy_copies_match_eager_copies(ops: list[tuple[str, str, bool]], kind: str) -> None:
    initial = kind != "plain"
    shared = INITIAL if kind == "initial" else shared_store()
    pristine = shared.model_dump()
    if kind == "lazy base":  # validated record by record from its raw data (lazy.lazy_base)
        shared = lazy_base(Store, pristine)
    lazy, flag = lazy_db(shared, initial=initial)
    eager = Store.model_validate(pristine)  # not a copy of shared: that would validate a lazy base whole
    forks: list[tuple[Any, Any, Store]] = []
    for op, key, writing in ops:
        if op == "fork":
            twin, twin_flag = fork_db(lazy)
            forks.append((twin, twin_flag, eager.model_copy(deep=True)))
            continue
        apply(lazy, flag, op, key, writing)
        apply(eager, None, op, key, writing)
        for twin, twin_flag, twin_eager in forks:  # forks evolve on their own, with the mirrored operation
            apply(twin, twin_flag, "bump", key, False)
            apply(twin_eager, None, "bump", key, False)
    assert materialize(lazy).model_dump() == eager.model_dump()
    assert json.dumps(lazy.model_dump(), sort_keys=True) == json.dumps(eager.model_dump(), sort_keys=True)
    for twin, _, twin_eager in forks:
        assert materialize(twin).model_dump() == twin_eager.model_dump()
    assert materialize(shared).model_dump() == pristine  # the shared DB is never touched


TEXTS: RecordTexts = {}  # one cache across examples, as one environment's regrades share one
SHARED = shared_store()


@settings(max_examples=200, deadline=None)
@given(operations, st.sampled_from(["x", 3, None]))
def test_db_json_is_the_text_tau2_hashes(ops: list[tuple[str, str, bool]], odd: str | int | None) -> None:
    """Whatever the calls did, db_json (shared records' texts from a cache) is json.dumps of the whole dump."""
    lazy, flag = lazy_db(SHARED)
    for op, key, writing in ops:
        if op == "fork":
            lazy, flag = fork_db(lazy)
        else:
            apply(lazy, flag, op, key, writing)
    if odd is not None:  # a tool that wrote a value of the wrong type, or a key that is not a string
        dict.__setitem__(lazy.other, odd, Record.model_construct(value="1", tags=[]))
    try:
        expected = json.dumps(lazy.model_dump(warnings=False), sort_keys=True, default=str)
    except TypeError:  # keys of mixed types cannot be sorted: tau2's hash fails the same way
        with pytest.raises(TypeError):
            db_json(lazy, TEXTS)
    else:
        assert db_json(lazy, TEXTS) == expected
    assert SHARED.model_dump() == shared_store().model_dump()


class Special(Record):
    extra_field: int = 5


class Other(BaseModel):
    b: int


class Excluded(BaseModel):
    rows: dict[str, Record]
    hidden: dict[str, Record] = Field(exclude=True)
    note: str = Field(default="n", exclude=True)


class Aliased(BaseModel):
    model_config = ConfigDict(serialize_by_alias=True)
    rows: dict[str, Record] = Field(alias="Rows")


class Serialized(BaseModel):
    rows: dict[str, Record]

    @field_serializer("rows")
    def _count(self, rows: dict[str, Record]) -> int:
        return len(rows)


def _unusual_dbs() -> dict[str, BaseModel]:
    rows = {"a": Record(value=1, tags=[])}
    return {
        "a subclass record": Store.model_construct(rows={"s": Special(value=1, tags=[])}, other={}),
        "another model": Store.model_construct(rows={"o": Other(b=2)}, other={}),
        "excluded fields": Excluded(rows=rows, hidden=rows),
        "aliased field": Aliased(Rows=rows),
        "a field serializer": Serialized(rows=rows),
    }


@pytest.mark.parametrize("case", sorted(_unusual_dbs()))
def test_db_json_of_an_unusual_db_is_its_whole_dump(case: str) -> None:
    lazy, _ = lazy_db(_unusual_dbs()[case])
    expected = json.dumps(lazy.model_dump(warnings=False), sort_keys=True, default=str)
    assert db_json(lazy, {}) == expected


class Leg(BaseModel):
    seats: dict[str, int]


class Booking(BaseModel):
    model_config = ConfigDict(extra="allow")
    legs: dict[str, Leg]
    first: Leg
    note: str = "none"
    _seen: list[str] = PrivateAttr(default_factory=list)


class Holder(BaseModel):
    function: Any


def test_a_record_copy_is_what_pydantics_deep_copy_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    leg = Leg(seats={"economy": 3})
    booking = Booking(legs={"a": leg, "b": Leg(seats={})}, first=leg, loyalty=[1, 2])  # type: ignore[call-arg]
    booking._seen.append("x")
    theirs = booking.model_copy(deep=True)

    def not_pydantic(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a picklable record is copied by pickle")

    monkeypatch.setattr(Booking, "model_copy", not_pydantic)
    mine = _deep_copy(booking)
    monkeypatch.undo()
    assert mine == theirs == booking
    assert mine.__pydantic_fields_set__ == theirs.__pydantic_fields_set__ == {"legs", "first", "loyalty"}
    assert mine.__pydantic_extra__ == theirs.__pydantic_extra__ == {"loyalty": [1, 2]}
    assert mine._seen == theirs._seen == ["x"]
    assert mine.first is mine.legs["a"]  # one object reached twice stays one object, as in a deep copy
    mine.legs["a"].seats["economy"] = 0
    mine._seen.append("y")
    mine.loyalty.append(3)  # type: ignore[attr-defined]
    assert booking == theirs  # nothing is shared with the original
    assert booking._seen == ["x"]
    # A record pickle cannot write (a function in it) is copied by pydantic.
    holder = Holder(function=lambda: 1)
    copied = _deep_copy(holder)
    assert copied is not holder
    assert copied.function is holder.function


def test_an_initial_dbs_records_are_pickled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    shared = shared_store()
    dumped: list[Any] = []
    real_dumps = pickle.dumps

    def counting_dumps(value: Any, *args: Any, **kwargs: Any) -> bytes:
        dumped.append(value)
        return real_dumps(value, *args, **kwargs)

    monkeypatch.setattr(pickle, "dumps", counting_dumps)
    first, _ = lazy_db(shared, initial=True)
    first.rows["a"].value = 50
    twin, _ = fork_db(first)
    second, _ = lazy_db(shared, initial=True)
    assert second.rows["a"].value == 0  # a copy of the initial record, from its kept pickle
    assert twin.rows["a"].value == 50  # the fork's record is no longer the initial one: pickled afresh
    assert twin.rows["b"] == second.rows["b"] == shared.rows["b"]
    assert [r is shared.rows["a"] for r in dumped].count(True) == 1
    assert [r is shared.rows["b"] for r in dumped].count(True) == 1
    plain, _ = lazy_db(shared)  # not declared initial: nothing kept
    assert plain.rows["b"] == shared.rows["b"]
    assert [r is shared.rows["b"] for r in dumped].count(True) == 2


def test_iteration_outside_writes_hands_out_shared_records() -> None:
    shared = shared_store()
    lazy, _ = lazy_db(shared)
    assert next(iter(lazy.rows.values())) is shared.rows["a"]  # reads cost nothing
    assert lazy.rows["a"] is not shared.rows["a"]  # a fetch by key gets a private copy
    assert copy.deepcopy(lazy).rows["a"] == shared.rows["a"]


# --- tau2 as the oracle ---------------------------------------------------------------------------------

from prefix_exec.envs.tau import TauEnvironment, load_domain, regrade  # noqa: E402
from prefix_exec.envs.tau.domain import import_tau2, to_json_text  # noqa: E402
from prefix_exec.envs.tau.regrade import db_hash  # noqa: E402
from prefix_exec.importers.tau import read_results  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_every_recorded_call_matches_tau2s_own_environment(shared_data: Path, domain: str) -> None:
    """Run each simulation's recorded calls (all of them, failing ones included) on our copy-on-access DB and on
    a freshly built tau2 environment: every call's output and the final DB hash must be identical."""
    results = read_results(shared_data / "tau" / f"gpt-4.1_{domain}_1trial.json")
    env = TauEnvironment(load_domain(domain), results.tasks)
    get_environment = import_tau2(f"tau2.domains.{domain}.environment").get_environment
    for rollout in results.rollouts[:8]:
        calls = [(c.name, c.arguments) for c in rollout.actions if c.name != "calculate"]
        reference = get_environment()
        session = env.start(rollout.task_id)
        for name, arguments in calls:
            try:
                expected = to_json_text(reference.make_tool_call(name, **copy.deepcopy(dict(arguments))))
            except Exception as exc:
                expected = f"Error: {exc}"
            toolkit = env.domain.make_toolkit(session.db)
            try:
                got = to_json_text(getattr(toolkit, name)(**copy.deepcopy(dict(arguments))))
            except Exception as exc:
                got = f"Error: {exc}"
            assert got == expected, (rollout.task_id, name)
        assert db_hash(env, rollout.task_id, calls) == reference.get_db_hash()
    # The base DB's record texts are written once for the process, whatever the environment.
    texts = regrade._base_texts(env.domain.base_db)
    assert texts
    assert regrade._base_texts(TauEnvironment(load_domain(domain)).domain.base_db) is texts


def test_tau2_is_imported_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    """tau2's import makes a few hundred thousand objects and no garbage: the collector walked them some 60
    times during `score tau`'s import (a third of its GC time); paused, they are walked once after. A module
    imported already is returned as it is, without a collection."""
    import gc
    import importlib
    import sys

    seen: list[bool] = []
    collections: list[int] = []
    monkeypatch.setattr(importlib, "import_module", lambda name: seen.append(gc.isenabled()) or json)
    monkeypatch.setattr(gc, "collect", lambda generation=2: collections.append(generation) or 0)
    monkeypatch.delitem(sys.modules, "tau2.not_yet", raising=False)
    assert gc.isenabled()
    assert import_tau2("tau2.not_yet") is json
    assert seen == [False] and gc.isenabled() and collections == [1]
    monkeypatch.setitem(sys.modules, "tau2.already", copy)
    assert import_tau2("tau2.already") is copy
    assert seen == [False] and collections == [1]
