"""Cost tables on crafted telemetry: means, the dual-loop vs plan-conditioned change, verifier sensitivity."""

from __future__ import annotations

from report_records import TASKS, record

from prefix_exec.analysis.summary import summarize
from prefix_exec.report.cost import condition_costs, cost_tables
from prefix_exec.report.inputs import metric_rows
from prefix_exec.report.layout import Anchors
from prefix_exec.trajectory import CallCost, PrefixRecord


def _calls(tokens: int, seconds: float) -> list[CallCost]:
    # one planner and one executor call; the simulator call must not count as agent cost
    return [
        CallCost("planner", tokens // 2, tokens // 4, reasoning_tokens=999, latency_s=seconds / 2),
        CallCost("executor", tokens // 8, tokens // 8, latency_s=seconds / 2),
        CallCost("simulator", 10_000, 10_000, latency_s=100.0),
    ]


def _dual_loop(
    t: str, verifier: str, k: int, *, method: str = "dual-loop", fed: int = 4, tokens: int = 1200, seconds: float = 3.0
) -> PrefixRecord:
    """Task ``t`` under a dual-loop method with that verifier setting: T 3, success 1, two agent calls."""
    metadata = {"verifier_model": verifier, "k_val": k}
    return record(method, t, T=3, fed=fed, success=1, cost=_calls(tokens, seconds), metadata=metadata)


def _grid() -> list:
    rows = []
    for t in TASKS:
        rows.append(record("plan-conditioned", t, T=3, fed=2, success=1, cost=_calls(1000, 2.0)))
        rows.append(_dual_loop(t, "v-large", 5))
        fed = 4 if t != "t1" else 1
        rows.append(_dual_loop(t, "v-small", 1, method="dual-loop-small", fed=fed, tokens=1120, seconds=2.5))
    rows.append(record("react", "t1", T=3, fed=4, success=1))  # no telemetry: absent from cost tables
    return rows


def test_condition_costs_means() -> None:
    costs = condition_costs(_grid())
    plan = costs[("bfcl_demo", "m1", "plan-conditioned")]
    assert (plan.n, plan.tokens, plan.latency_s, plan.calls) == (4, 1000.0, 2.0, 2.0)
    assert ("bfcl_demo", "m1", "react") not in costs


def test_cost_tables_relative_change_and_sensitivity() -> None:
    rows = _grid()
    s = summarize(metric_rows(rows), resamples=200, seed=0)
    tables = {t.name: t for t in cost_tables(s, rows, Anchors.of(s))}
    assert set(tables) == {"cost", "cost_relative", "verifier_sensitivity"}
    cost = {r[2].text: [c.text for c in r[3:]] for r in tables["cost"].rows}
    assert cost["dual-loop"] == ["4", "1200", "3.0", "2.0"]
    assert "react" not in cost
    rel = [[c.text for c in r] for r in tables["cost_relative"].rows]
    # (1200 - 1000) / 1000 = +20%, (3.0 - 2.0) / 2.0 = +50%; (1120-1000)/1000 = +12%, 0.5/2 = +25%
    assert ["bfcl_demo", "m1", "dual-loop", "plan-conditioned", "+20.0%", "+50.0%"] in rel
    assert ["bfcl_demo", "m1", "dual-loop-small", "plan-conditioned", "+12.0%", "+25.0%"] in rel
    sens = {r[2].text: [c.text for c in r[3:]] for r in tables["verifier_sensitivity"].rows}
    # dual-loop executes every task, plan-conditioned none: ΔTER = +1 exactly (homogeneous conditions)
    assert sens["dual-loop"] == [
        "v-large",
        "5",
        "plan-conditioned",
        "1.000 [1.000, 1.000]",
        "0.667 [0.667, 0.667]",
        "200",
        "1.0",
    ]
    assert sens["dual-loop-small"][:3] == ["v-small", "1", "plan-conditioned"]


def test_no_telemetry_no_cost_tables() -> None:
    rows = [record("react", t, T=2, fed=3, success=1) for t in TASKS]
    s = summarize(metric_rows(rows), resamples=50, seed=0)
    assert cost_tables(s, rows, Anchors.of(s)) == []


def test_single_verifier_setting_gives_no_sensitivity_table() -> None:
    rows = [r for r in _grid() if r.method != "dual-loop-small"]
    s = summarize(metric_rows(rows), resamples=50, seed=0)
    assert "verifier_sensitivity" not in {t.name for t in cost_tables(s, rows, Anchors.of(s))}


def test_one_method_name_with_two_verifier_settings_is_split(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from prefix_exec.records.codec import write_records
    from prefix_exec.report.inputs import load

    rows = [record("plan-conditioned", t, T=3, fed=2, success=1, cost=_calls(1000, 2.0)) for t in TASKS]
    for model, k in (("v-large", 5), ("v-small", 1)):
        # two sensitivity runs under the same method name: same rollout keys, different verifier settings
        rows_k = [_dual_loop(t, model, k) for t in TASKS]
        write_records(tmp_path / f"records-{model}.jsonl", rows_k)
    write_records(tmp_path / "records-plan.jsonl", rows)
    loaded = load([tmp_path])
    methods = {r.method for r in loaded}
    assert methods == {
        "plan-conditioned",
        "dual-loop [verifier=v-large, K_val=5]",
        "dual-loop [verifier=v-small, K_val=1]",
    }
    s = summarize(metric_rows(loaded), resamples=50, seed=0)
    tables = {t.name: t for t in cost_tables(s, loaded, Anchors.of(s))}
    assert len(tables["verifier_sensitivity"].rows) == 2
