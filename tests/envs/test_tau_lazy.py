"""A lazily validated base DB is the validated DB: records validated on first use, into the shared base; private
copies validated from the raw records; read-only tools read the shared records and never change them."""

from __future__ import annotations

import copy
import dataclasses
import gc
import importlib.util
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError, model_validator

from prefix_exec.envs.tau import TauEnvironment, load_domain
from prefix_exec.envs.tau.domain import _parse_json
from prefix_exec.envs.tau.lazy import InvalidRecord, LazyTable, lazy_base, materialize
from prefix_exec.envs.tau.regrade import db_hash
from prefix_exec.envs.tau.state import db_json, fork_db, lazy_db
from prefix_exec.errors import InputError
from prefix_exec.importers.tau import read_results
from prefix_exec.replay import replay
from prefix_exec.trajectory import ToolCall

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


class Record(BaseModel):
    value: int
    tags: list[str]
    note: str | None = None  # absent from the raw records: a raw record is not its dump


class Store(BaseModel):
    rows: dict[str, Record]
    other: dict[str, Record]


def raw_store() -> dict[str, Any]:
    return {
        "rows": {k: {"value": i, "tags": [k]} for i, k in enumerate("abc")},
        "other": {"z": {"value": 9, "tags": []}},
    }


def raw_count(table: dict[str, Any]) -> int:
    return sum(type(v) is dict for v in dict.values(table))


def test_python_level_readers_see_validated_records() -> None:
    eager = Store.model_validate(raw_store())
    assert lazy_base(Store, raw_store()).rows == eager.rows
    assert repr(lazy_base(Store, raw_store()).rows) == repr(eager.rows)
    for reader in (copy.copy, copy.deepcopy, lambda t: pickle.loads(pickle.dumps(t)), lambda t: t.copy()):
        table = lazy_base(Store, raw_store()).rows
        assert type(reader(table)) is dict
        assert reader(table) == eager.rows
    lazy = lazy_base(Store, raw_store())
    assert lazy.model_copy(deep=True).model_dump() == eager.model_dump()
    assert pickle.loads(pickle.dumps(lazy_base(Store, raw_store()))) == eager
    lazy = lazy_base(Store, raw_store())
    assert lazy.rows.get("a") == eager.rows["a"] and lazy.rows.get("q") is None
    assert raw_count(lazy.rows) == 2  # one record validated, the rest still raw
    assert list(lazy.rows.values()) == list(eager.rows.values())
    assert raw_count(lazy.rows) == 0


def test_c_level_readers_need_materialize() -> None:
    """A pydantic dump reads the dict storage: raw records would be dumped as they are (no default ``note``)."""
    eager = Store.model_validate(raw_store())
    lazy = lazy_base(Store, raw_store())
    assert lazy.model_dump() != eager.model_dump()
    assert materialize(lazy).model_dump() == eager.model_dump()
    session, _ = lazy_db(lazy_base(Store, raw_store()), initial=True)
    assert db_json(session, {}) == json.dumps(eager.model_dump(), sort_keys=True, default=str)
    session, _ = lazy_db(lazy_base(Store, raw_store()), initial=True)
    assert materialize(session).model_dump() == eager.model_dump()


class Checked(BaseModel):
    rows: dict[str, Record]

    @model_validator(mode="after")
    def _checked(self) -> Checked:
        return self


def test_what_cannot_be_validated_by_record_is_validated_whole() -> None:
    whole = lazy_base(Checked, {"rows": raw_store()["rows"]})
    assert type(whole.rows) is dict
    assert type(lazy_base(Store, {**raw_store(), "extra": {}}).rows) is dict  # a key that is not a table
    with pytest.raises(ValidationError):
        lazy_base(Store, {"rows": {}})  # a table missing: refused as model_validate refuses it
    with pytest.raises(ValidationError):
        lazy_base(Store, {"rows": {"a": [1]}, "other": {}})  # not a table of objects: validated whole, refused


def test_a_bad_raw_record_fails_when_first_asked_for() -> None:
    raw = raw_store()
    raw["rows"]["a"]["value"] = "not a number"
    lazy = lazy_base(Store, raw)
    assert lazy.rows["b"].value == 1
    with pytest.raises(InvalidRecord, match="rows record 'a' of the domain's DB does not validate"):
        lazy.rows["a"]


def test_sessions_share_validated_reads_and_copy_writes_from_raw() -> None:
    base = lazy_base(Store, raw_store())
    db, flag = lazy_db(base, initial=True)
    assert raw_count(base.rows) == 3 and raw_count(db.rows) == 3  # starting a session validates nothing
    flag.call(read_only=True)
    read = db.rows["a"]
    flag.done()
    assert read is base.rows["a"] and not db.rows._owned  # a read-only call: the shared record, validated once
    mine = db.rows["a"]  # a fetch outside a read-only call: a private copy
    mine.tags.append("x")
    flag.call(read_only=False)
    db.rows["b"].value = 50  # still raw in the base: copied from the raw record
    flag.done()
    twin, _ = fork_db(db)
    twin.rows["b"].value = 60
    assert (db.rows["a"].tags, db.rows["b"].value, twin.rows["b"].value) == (["a", "x"], 50, 60)
    assert materialize(base) == Store.model_validate(raw_store())


def _walk(value: Any, found: dict[int, Any]) -> dict[int, Any]:
    """Every mutable object reachable from ``value`` (models, their dicts, dicts, lists), by id."""
    if isinstance(value, BaseModel):
        found[id(value)] = value
        value = value.__dict__
    if isinstance(value, dict | list):
        found[id(value)] = value
        for child in value.values() if isinstance(value, dict) else value:
            _walk(child, found)
    return found


def _lazy_domain(name: str) -> Any:
    """A domain whose base DB is a fresh lazy one (the cached domain's may be validated by other tests)."""
    domain = load_domain(name)
    raw = json.loads((domain.data_dir / "tau2" / "domains" / name / "db.json").read_text(encoding="utf-8"))
    return dataclasses.replace(domain, base_db=lazy_base(domain.db_class, raw)), raw


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_a_private_copy_shares_nothing_with_the_base(name: str) -> None:
    domain, raw = _lazy_domain(name)
    base = domain.base_db
    assert materialize(lazy_base(domain.db_class, raw)) == domain.db_class.model_validate(raw)
    for table_name in type(base).model_fields:
        table = getattr(base, table_name)
        assert isinstance(table, LazyTable)
        for key in list(table)[:40]:
            shared = _walk(table._raw[key], {}) | _walk(table[key], {})
            assert not _walk(table.fresh(key), {}).keys() & shared.keys(), (table_name, key)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["airline", "retail"])
@pytest.mark.parametrize("lazy", [True, False])
def test_replaying_every_recorded_call_leaves_the_shared_base_unchanged(
    shared_data: Path, name: str, lazy: bool
) -> None:
    """Every rollout of the real file replayed in strict sessions (read-only tools on the shared records), over a
    lazy and over an eagerly validated base: the base's dump is the pristine DB's afterwards."""
    domain, raw = _lazy_domain(name)
    if not lazy:
        domain = dataclasses.replace(domain, base_db=domain.db_class.model_validate(raw))
    pristine = domain.db_class.model_validate(raw).model_dump()
    results = read_results(shared_data / "tau" / f"gpt-4.1_{name}_1trial.json")
    env = TauEnvironment(domain, results.tasks)
    reads = [
        c for r in results.rollouts for c in r.actions if c.name in domain.tools and domain.tools[c.name].read_only
    ]
    assert len(reads) > 20
    for rollout in results.rollouts:
        replay(rollout, env.bind(rollout))
        session = env.start(rollout.task_id, strict=False)  # tau2's session: no check stops a call
        for call in rollout.actions:
            session.step(ToolCall(call.name, call.arguments))
    assert materialize(domain.base_db).model_dump() == pristine


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_db_json_parses_to_what_json_loads_gives(name: str) -> None:
    path = load_domain(name).data_dir / "tau2" / "domains" / name / "db.json"
    assert _parse_json(path.read_bytes()) == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("text", [b'{"flights": {', b'\xff{"flights": {}}'])
def test_an_unreadable_db_json_is_an_input_error(tmp_path: Path, text: bytes) -> None:
    folder = tmp_path / "tau2" / "domains" / "airline"
    folder.mkdir(parents=True)
    (folder / "db.json").write_bytes(text)
    (folder / "tasks.json").write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match="cannot read the airline domain data"):
        load_domain("airline", tmp_path)


def test_a_whole_table_validation_leaves_its_records_in_the_oldest_generation() -> None:
    """Validated with the collector paused, then moved to the oldest generation in one pass (not walked as
    young objects again and again); the collector's state is what it was."""
    assert gc.isenabled()
    table = lazy_base(Store, raw_store()).rows
    table.validate_all()
    assert gc.isenabled()
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(record) in oldest for record in table.values())
    gc.disable()
    try:
        table = lazy_base(Store, raw_store()).rows
        table.validate_all()
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("strict", [True, False])
def test_a_sessions_db_dumps_as_tau2s_whatever_its_records_state(strict: bool) -> None:
    """A session's public ``db`` is what a library user dumps; over a lazy base its storage holds raw records,
    whose dump silently lacks tau2's defaults (an airline reservation's ``status``), so it is read validated."""
    domain, raw = _lazy_domain("airline")
    session = TauEnvironment(domain).start("0", strict=strict)
    assert any(type(v) is dict for v in dict.values(session._db.reservations))  # raw records in its storage
    reservation = next(iter(raw["reservations"]))
    session.step(ToolCall("get_reservation_details", {"reservation_id": reservation}))
    expected = domain.db_class.model_validate(raw).model_dump()
    assert session.db.model_dump() == expected


@pytest.mark.parametrize("strict", [True, False])
def test_a_bad_record_of_the_domain_data_is_an_input_error_not_a_tool_error(strict: bool) -> None:
    """Validated eagerly, a record tau2's model refuses failed the domain's load. Validated when a call first
    reads it, its ValidationError must not come back as the tool's error message (the agent's failure, with a
    label): the data is broken, whatever the agent did."""
    domain, raw = _lazy_domain("airline")
    user = next(iter(raw["users"]))
    raw = {**raw, "users": {**raw["users"], user: {**raw["users"][user], "membership": 7}}}
    domain = dataclasses.replace(domain, base_db=lazy_base(domain.db_class, raw))
    session = TauEnvironment(domain).start("0", strict=strict)
    with pytest.raises(InputError, match=f"users.*{user}"):
        session.step(ToolCall("get_user_details", {"user_id": user}))
    with pytest.raises(InputError, match=f"users.*{user}"):
        session.step(ToolCall("send_certificate", {"user_id": user, "amount": 100}))
    with pytest.raises(InputError, match=f"users.*{user}"):
        db_hash(TauEnvironment(domain), "0", [("get_user_details", {"user_id": user})])


def test_the_regrade_benchmarks_baseline_writes_tau2s_text_over_a_lazy_base(monkeypatch: pytest.MonkeyPatch) -> None:
    """benchmarks/regrade.py's baseline (tau2's whole ``model_dump``) must hash what ``db_json`` hashes, whether
    or not the side timed before it validated the base's records (a raw record dumps without its defaults)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # as when run as a script: its helpers beside it
    spec = importlib.util.spec_from_file_location("regrade_benchmark", BENCHMARKS / "regrade.py")
    assert spec is not None and spec.loader is not None
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    domain, _ = _lazy_domain("retail")
    db, _ = lazy_db(domain.base_db, initial=True)
    assert benchmark.whole_dump(db, {}) == db_json(db, {})
