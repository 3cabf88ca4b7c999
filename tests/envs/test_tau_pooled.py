"""Domain-qualified task ids (envs.tau.pooled), how the readers use them, and the old per-domain layout refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prefix_exec.analysis.rows import read_metric_rows
from prefix_exec.envs.tau.pooled import (
    domain_named,
    domain_of,
    domain_of_record,
    inspect_domain,
    local_id,
    qualify,
    variant_note,
    variant_of,
    view_name,
)
from prefix_exec.errors import InputError
from prefix_exec.records.codec import read_records, record_from_json

bare_ids = st.text(alphabet="0123456789abc_-", min_size=1, max_size=6)


@given(st.sampled_from(["airline", "retail"]), bare_ids)
def test_qualify_and_local_id_invert_each_other(domain: str, task_id: str) -> None:
    qualified = qualify(domain, task_id)
    assert qualified == f"{domain}/{task_id}"
    assert qualify(domain, qualified) == qualified  # qualifying twice changes nothing
    assert local_id(domain, qualified) == local_id(domain, task_id) == task_id
    assert domain_of(qualified) == domain
    assert domain_of(task_id) is None


def test_an_id_of_another_domain_is_not_this_domains() -> None:
    with pytest.raises(KeyError, match="retail task, not airline"):
        local_id("airline", "retail/18")


def test_view_names() -> None:
    assert view_name("tau3", "airline") == "tau3-airline"


def test_the_domain_comes_from_metadata_else_from_a_tau3_id() -> None:
    assert domain_of_record("tau3", "airline/18", {}) == "airline"
    assert domain_of_record("tau3", "retail/18", {"domain": "retail"}) == "retail"
    assert domain_of_record("custom", "a/b", {}) is None  # a '/' in another dataset's id means nothing
    assert domain_of_record("custom", "x", {"domain": "hr"}) == "hr"
    assert domain_of_record("tau3", "18", None) is None


def _record(dataset: str, task_id: str, **metadata: object) -> dict[str, object]:
    return {
        "kind": "record",
        "schema_version": 1,
        "dataset": dataset,
        "task_id": task_id,
        "model": "m",
        "method": "react",
        "T": 2,
        "fed": 3,
        "success": 1,
        "verdicts": [],
        "actions": [],
        "metadata": metadata,
    }


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("dataset", ["tau3-airline", "tau3-retail"])
def test_old_records_are_refused_with_the_version_and_the_fix(tmp_path: Path, dataset: str) -> None:
    """The layout before tau3 was pooled (0.1.0 until 2026-12-01) is no longer mapped: every reader refuses it."""
    old = _write(tmp_path / "old.jsonl", [_record("tau3", "airline/7"), _record(dataset, "18")])
    for read in (lambda: list(read_records(old)), lambda: read_metric_rows([old])):
        with pytest.raises(InputError) as caught:
            read()
        error = caught.value
        assert (error.path, error.line, error.field) == (str(old), 2, "dataset")
        assert "prefix-exec 0.1.0 wrote before tau3 was pooled" in error.message
        assert f"'{dataset.removeprefix('tau3-')}/18'" in error.message
        assert error.hint is not None and "re-score the source log with this version" in error.hint


def test_a_qualified_id_under_an_old_name_is_a_dataset_someone_named_so(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.jsonl", [_record("tau3-retail", "retail/18")])
    assert [(r.dataset, r.task_id) for r in read_records(path)] == [("tau3-retail", "retail/18")]
    new = record_from_json(_record("tau3", "airline/18", domain="airline"))
    assert (new.dataset, new.task_id, new.metadata) == ("tau3", "airline/18", {"domain": "airline"})


def test_one_rollout_in_two_files_is_counted_once_only(tmp_path: Path) -> None:
    """A file and its copy hold the same rollouts: read together they would count each twice."""
    one = _write(tmp_path / "one.jsonl", [_record("tau3", "airline/18")])
    two = _write(tmp_path / "two.jsonl", [_record("tau3", "airline/18", domain="airline")])
    with pytest.raises(InputError, match="already at"):
        read_metric_rows([one, two])


@pytest.mark.parametrize(
    ("name", "domain", "variant"),
    [
        ("airline", "airline", None),
        ("retail", "retail", None),
        ("airline_tighter_policy", "airline", "airline"),
        ("airline-relaxed", "airline", "airline"),
        ("retail_v2", "retail", "retail"),
        ("airlines", None, None),  # not the domain's name followed by _ or -
        ("telecom", None, None),
        ("medical", None, None),
        ("", None, None),
    ],
)
def test_one_rule_for_a_domain_name(name: str, domain: str | None, variant: str | None) -> None:
    """The rule both score tau (a file's domain_name) and score inspect (a task's name) read a domain with."""
    assert (domain_named(name), variant_of(name)) == (domain, variant)
    assert (variant_note(name) is not None) == (variant is not None)
    assert inspect_domain(f"tau2_{name}") == domain
    assert inspect_domain(name) is None  # an inspect task of tau2 is named tau2_<domain>


def test_a_variant_note_says_what_was_done() -> None:
    assert variant_note("airline-relaxed") == (
        "domain 'airline-relaxed' read as airline, a policy variant of it (the same tools and database; replay "
        "checks calls, not the policy text); its tasks are airline's (airline/N): score variants to separate --out "
        "files to keep them apart"
    )
