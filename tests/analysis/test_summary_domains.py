"""The pooled tau3 condition and its per-domain view (Summary.domains): colliding ids are distinct tasks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prefix_exec.analysis.rows import MetricRow
from prefix_exec.analysis.summary import summarize, to_json


def tau_rows(method: str, results: dict[str, list[tuple[int, int, int]]]) -> list[MetricRow]:
    """``results[domain]`` lists (fed, T, y) for the domain's tasks 18, 19, ... (the same ids in each domain)."""
    return [
        MetricRow("tau3", f"{domain}/{18 + i}", "m", method, 0, T, fed, y, domain=domain)
        for domain, rollouts in results.items()
        for i, (fed, T, y) in enumerate(rollouts)
    ]


def test_colliding_ids_are_two_tasks_in_the_pooled_bootstrap() -> None:
    """Two tasks "18", one per domain, one executable and one not. Resampled as two tasks, TER is 0, 1/2 or 1
    (each with probability 1/4, 1/2, 1/4), so the 95% interval is [0, 1]; merged into one task "18" it
    would be 1/2 in every resample."""
    rows = tau_rows("a", {"airline": [(3, 2, 1)], "retail": [(1, 2, 0)]})
    s = summarize(rows, resamples=4000, seed=3)
    pooled = s.get("tau3", "m", "a")
    assert (pooled.N, pooled.n_tasks, pooled.TER.point) == (2, 2, 0.5)
    assert (pooled.TER.low, pooled.TER.high) == (0.0, 1.0)
    assert s.tasks["tau3"] == ("airline/18", "retail/18")
    merged = summarize([MetricRow("tau3", "18", "m", "a", 0, r.T, r.fed, r.success) for r in rows], resamples=400)
    assert merged.get("tau3", "m", "a").n_tasks == 1
    assert (merged.get("tau3", "m", "a").TER.low, merged.get("tau3", "m", "a").TER.high) == (0.5, 0.5)


def test_the_per_domain_view_is_each_domain_bootstrapped_alone() -> None:
    rng = np.random.default_rng(7)

    def draws(n: int) -> list[tuple[int, int, int]]:
        Ts = rng.integers(1, 9, n)
        return [(int(rng.integers(1, t + 2)), int(t), int(rng.integers(0, 2))) for t in Ts]

    results = {"airline": draws(12), "retail": draws(25)}
    s = summarize(tau_rows("a", results), resamples=800, seed=11)
    assert [c.dataset for c in s.conditions] == ["tau3"]
    assert s.get("tau3", "m", "a").N == 37
    assert s.domains is not None
    assert [(c.dataset, c.N) for c in s.domains.conditions] == [("tau3-airline", 12), ("tau3-retail", 25)]
    for domain, rollouts in results.items():
        # the oracle: the domain's rows alone, as the dataset tau3-<domain> (the layout before pooling)
        alone = [
            MetricRow(f"tau3-{domain}", str(18 + i), "m", "a", 0, T, fed, y) for i, (fed, T, y) in enumerate(rollouts)
        ]
        want = summarize(alone, resamples=800, seed=11).conditions[0].as_dict()
        got = s.domains.get(f"tau3-{domain}", "m", "a").as_dict()
        assert got == want
    doc = json.loads(to_json(s))
    assert [c["dataset"] for c in doc["conditions"]] == ["tau3"]
    assert [c["dataset"] for c in doc["per_domain"]] == ["tau3-airline", "tau3-retail"]


def test_one_domain_alone_has_no_extra_view_and_other_datasets_none() -> None:
    only = summarize(tau_rows("a", {"airline": [(3, 2, 1), (1, 2, 0)]}), resamples=100)
    assert only.domains is None
    other = summarize([MetricRow("bfcl", "t1", "m", "a", 0, 2, 3, 1)], resamples=100)
    assert other.domains is None
    assert "per_domain" not in json.loads(to_json(other))


def test_paired_differences_work_on_the_pooled_condition_and_per_domain() -> None:
    a = tau_rows("a", {"airline": [(3, 2, 1), (3, 2, 1), (1, 2, 0)], "retail": [(3, 2, 1), (2, 2, 0)]})
    b = tau_rows("b", {"airline": [(1, 2, 0), (3, 2, 1), (1, 2, 0)], "retail": [(3, 2, 1), (1, 2, 1)]})
    s = summarize(a + b, resamples=500, seed=2)
    (pooled,) = s.paired("a", "b")
    assert pooled.dataset == "tau3"
    assert pooled.common_tasks == 5  # airline/18..20 and retail/18..19: the two "18"s and "19"s count apart
    assert pooled.differences["TER"].point == pytest.approx(3 / 5 - 2 / 5)  # FED = T + 1: executable
    assert s.domains is not None
    by_domain = {p.dataset: p for p in s.domains.paired("a", "b")}
    assert {d: p.common_tasks for d, p in by_domain.items()} == {"tau3-airline": 3, "tau3-retail": 2}
    assert by_domain["tau3-airline"].differences["TER"].point == pytest.approx(2 / 3 - 1 / 3)
    assert by_domain["tau3-retail"].differences["TER"].point == pytest.approx(1 / 2 - 1 / 2)
