"""Domain-qualified task ids and the old per-domain tau layout (envs.tau.pooled), and how the readers use them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prefix_exec.envs.tau.pooled import domain_of, legacy, local_id, qualify, read_key, view_name
from prefix_exec.errors import InputError
from prefix_exec.records.codec import read_metric_rows, read_records, record_from_json

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


def test_only_the_old_tau_layout_is_mapped() -> None:
    assert legacy("tau3-airline", "18") == ("tau3", "airline/18", "airline")
    assert legacy("tau3-retail", "18") == ("tau3", "retail/18", "retail")
    assert legacy("tau3-retail", "retail/18") is None  # already qualified: a dataset someone named so
    assert legacy("bfcl", "18") is None
    assert legacy("tau3", "airline/18") is None
    assert view_name("tau3", "airline") == "tau3-airline"


def test_the_domain_comes_from_metadata_else_from_a_tau3_id() -> None:
    assert read_key("tau3", "airline/18", {}) == ("tau3", "airline/18", "airline", None)
    assert read_key("tau3", "retail/18", {"domain": "retail"}).domain == "retail"
    assert read_key("custom", "a/b", {}).domain is None  # a '/' in another dataset's id means nothing
    assert read_key("custom", "x", {"domain": "hr"}).domain == "hr"
    assert read_key("tau3-airline", "18", {}) == ("tau3", "airline/18", "airline", "tau3-airline")


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


def test_old_records_read_as_the_pooled_layout(tmp_path: Path) -> None:
    old = _write(tmp_path / "old.jsonl", [_record("tau3-airline", "18"), _record("tau3-retail", "18", reward=1.0)])
    records = list(read_records(old))
    assert [(r.dataset, r.task_id) for r in records] == [("tau3", "airline/18"), ("tau3", "retail/18")]
    assert records[1].metadata == {"reward": 1.0, "domain": "retail", "renamed_from": "tau3-retail"}
    rows = read_metric_rows([old])
    assert [(r.dataset, r.task_id, r.domain, r.renamed_from) for r in rows] == [
        ("tau3", "airline/18", "airline", "tau3-airline"),
        ("tau3", "retail/18", "retail", "tau3-retail"),
    ]
    new = record_from_json(_record("tau3", "airline/18", domain="airline"))
    assert (new.dataset, new.task_id, new.metadata) == ("tau3", "airline/18", {"domain": "airline"})


def test_one_rollout_in_both_layouts_is_counted_once_only(tmp_path: Path) -> None:
    """An old file and its re-scored copy hold the same rollouts: read together they would count each twice."""
    old = _write(tmp_path / "old.jsonl", [_record("tau3-airline", "18")])
    new = _write(tmp_path / "new.jsonl", [_record("tau3", "airline/18", domain="airline")])
    with pytest.raises(InputError, match="already at"):
        read_metric_rows([old, new])
