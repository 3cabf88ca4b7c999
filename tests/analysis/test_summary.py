from __future__ import annotations

import json

import numpy as np
import pytest

from prefix_exec.analysis.rows import MetricRow
from prefix_exec.analysis.summary import summarize, to_json
from prefix_exec.cli.metrics import render


def rows_for(dataset, model, method, feds, Ts, ys, tasks=None):
    tasks = tasks or [f"t{i}" for i in range(len(feds))]
    return [MetricRow(dataset, t, model, method, 0, T, f, y) for t, f, T, y in zip(tasks, feds, Ts, ys, strict=True)]


def test_point_estimates_match_the_metrics_and_rr_is_undefined_when_nothing_failed():
    rows = rows_for("d", "m", "a", [4, 1, 3, 2], [3, 2, 4, 1], [1, 1, 0, 0])
    rows += rows_for("d", "m", "b", [4, 3, 5, 2], [3, 2, 4, 1], [1, 0, 1, 1])
    s = summarize(rows, resamples=500, seed=1)
    a, b = s.get("d", "m", "a"), s.get("d", "m", "b")
    assert (a.N, a.TER.point, a.mean_FED.point, a.success.point) == (4, 0.5, 2.5, 0.5)
    assert a.RR_eligible == 2
    assert a.RR.point == 0.5
    assert a.PEC == pytest.approx((0.75, 0.5, 0.25, 0.0))
    assert a.n_k == (4, 3, 2, 1)
    assert b.RR is None
    assert b.RR_eligible == 0
    assert b.TER.point == 1.0
    for e in (a.TER, a.AUC_PEC, a.mean_FED, a.success):
        assert e.low <= e.point <= e.high


def test_same_seed_gives_identical_intervals_and_other_seeds_differ():
    rng = np.random.default_rng(0)
    T = rng.integers(1, 8, 60)
    fed = np.array([rng.integers(1, t + 2) for t in T])
    y = rng.integers(0, 2, 60)
    rows = rows_for("d", "m", "a", fed, T, y)
    one = to_json(summarize(rows, resamples=2000, seed=5))
    assert one == to_json(summarize(rows, resamples=2000, seed=5))
    assert one != to_json(summarize(rows, resamples=2000, seed=6))


def test_a_dataset_keeps_its_intervals_when_another_dataset_joins():
    a = rows_for("bfcl", "m", "a", [2, 1, 3, 3], [2, 2, 2, 3], [1, 0, 1, 1])
    b = rows_for("tau", "m", "a", [1, 2], [1, 1], [0, 1])
    alone = summarize(a, resamples=300, seed=9).get("bfcl", "m", "a")
    together = summarize(a + b, resamples=300, seed=9).get("bfcl", "m", "a")
    assert alone == together


def test_paired_difference_of_identical_conditions_is_exactly_zero():
    feds, Ts, ys = [2, 4, 1, 3], [3, 3, 2, 2], [1, 1, 0, 1]
    rows = rows_for("d", "m", "a", feds, Ts, ys) + rows_for("d", "m", "b", feds, Ts, ys)
    s = summarize(rows, resamples=400, seed=0)
    diff = s.difference(("d", "m", "a"), ("d", "m", "b"), "TER")
    assert (diff.point, diff.low, diff.high) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        s.difference(("d", "m", "a"), ("e", "m", "b"), "TER")


def test_json_has_the_documented_shape():
    rows = rows_for("d", "m", "a", [4, 1, 3, 2], [3, 2, 4, 1], [1, 1, 0, 0])
    doc = json.loads(to_json(summarize(rows, resamples=100, seed=0)))
    cond = doc["conditions"][0]
    for key in ("TER", "AUC_PEC", "mean_FED", "success", "RR"):
        assert set(cond[key]) == {"point", "low", "high"}
    assert cond["N"] == 4
    assert cond["RR_eligible"] == 2
    assert len(cond["PEC"]) == len(cond["PEC_elig"]) == len(cond["n_k"]) == 4
    md = render(summarize(rows, resamples=100, seed=0), None, "md")
    table2 = md.split("### Table G.1")[0].strip().splitlines()
    assert table2[-1].startswith("| d | m | a | 4 |") and "undefined" not in table2[-1]
    # The reach table by hand: T = (3, 2, 4, 1), FED = (4, 1, 3, 2); PEC_elig undefined where no rollout reaches k.
    assert md.strip().splitlines()[-1] == (
        "| d | m | a | 4 | 4 | 3 | 2 | 1 | 0 | 0 | 0.75 | 0.67 | 0.50 | 0.00 | undefined | undefined |"
    )
    assert (
        render(summarize(rows, resamples=100, seed=0), None, "csv")
        .splitlines()[0]
        .startswith("dataset,model,method,N,TER")
    )


def test_conditions_with_multiple_trials_resample_whole_tasks():
    rows = [
        MetricRow("d", f"t{i}", "m", "a", trial, 1, 2 if (i + trial) % 2 else 1, 1)
        for i in range(10)
        for trial in range(3)
    ]
    s = summarize(rows, resamples=200, seed=0).get("d", "m", "a")
    assert s.N == 30
    assert s.n_tasks == 10
    assert s.TER.point == pytest.approx(15 / 30)


@pytest.mark.parametrize(("ci_depth", "max_t"), [(10, 12), (10, 10), (10, 4), (3, 7), (1, 5)])
def test_every_pec_checkpoint_up_to_ci_depth_has_an_interval_holding_its_point(ci_depth, max_t):
    # 24 tasks, rollouts of length 1..max_t with first errors spread over every depth (and clean rollouts).
    T = [1 + i % max_t for i in range(24)]
    fed = [1 + (i * 7) % (t + 1) for i, t in enumerate(T)]
    rows = rows_for("d", "m", "a", fed, T, [i % 2 for i in range(24)])
    s = summarize(rows, resamples=400, seed=2, ci_depth=ci_depth)
    c = s.get("d", "m", "a")
    depth = min(ci_depth, max_t)
    assert len(c.PEC) == max_t
    assert len(c.PEC_CI) == depth
    for k, (point, interval) in enumerate(zip(c.PEC, c.PEC_CI, strict=False), start=1):
        assert interval.point == pytest.approx(point), k
        assert interval.low <= point <= interval.high, (k, interval)
    # replicates are kept for every checkpoint (paired differences use them), and for no deeper one
    pec_replicates = sorted(int(name[4:]) for name in s.replicates[("d", "m", "a")] if name.startswith("PEC@"))
    assert pec_replicates == list(range(1, depth + 1))


def test_paired_pec_at_k_is_the_difference_of_the_two_curves_at_depth_k():
    # Same four tasks for both. a: FED > 1 for 3 of 4, > 2 for 2, > 3 for 1, > 4 for none -> (.75, .5, .25, 0).
    # b: FED = 2, 3, 5, 2 -> FED > 1 for 4, > 2 for 2 (3, 5), > 3 for 1 (5), > 4 for 1 (5) -> (1, .5, .25, .25).
    Ts = [3, 2, 4, 1]
    rows = rows_for("d", "m", "a", [4, 1, 3, 2], Ts, [1, 1, 0, 0])
    rows += rows_for("d", "m", "b", [2, 3, 5, 2], Ts, [1, 0, 1, 1])
    s = summarize(rows, resamples=200, seed=3)
    a, b = ("d", "m", "a"), ("d", "m", "b")
    assert s.get(*a).PEC == pytest.approx((0.75, 0.5, 0.25, 0.0))
    assert s.get(*b).PEC == pytest.approx((1.0, 0.5, 0.25, 0.25))
    (found,) = s.paired("a", "b", ("PEC@1", "PEC@2", "PEC@3", "PEC@4"))
    points = [found.differences[f"PEC@{k}"].point for k in range(1, 5)]
    assert points == pytest.approx([-0.25, 0.0, 0.0, -0.25])
    assert found.common_tasks == 4
    assert (found.dataset, found.a, found.b) == ("d", a, b)
    doc = found.as_dict()
    assert (doc["dataset"], doc["a"], doc["b"]) == ("d", {"model": "m", "method": "a"}, {"model": "m", "method": "b"})
    # The difference's replicates are the two conditions' replicates at the same depth, subtracted.
    for k in range(1, 5):
        d = found.differences[f"PEC@{k}"]
        diff = s.replicates[a][f"PEC@{k}"] - s.replicates[b][f"PEC@{k}"]
        assert d.low == pytest.approx(np.percentile(diff, 2.5)), k
        assert d.high == pytest.approx(np.percentile(diff, 97.5)), k


def test_paired_differences_over_one_common_task_and_over_none():
    # a ran t0, t1, t2; b ran t2 (twice) and t3; c ran t4 only. The only task a and b share is t2, so every
    # difference is t2's, each side its own mean over its rollouts there: a(t2) is FED 3 of T 2 (executable),
    # Y 0; b(t2) is FED 1 and FED 3 of T 2, Y 1 and 0. TER 1 - 1/2; mean FED 3 - 2; success 0 - 1/2; PEC@1
    # 1 - 1/2. Every resample that draws t2 gives exactly that (the others are left out): a one-point interval.
    rows = rows_for("d", "m", "a", [1, 2, 3], [2, 2, 2], [0, 1, 0], tasks=["t0", "t1", "t2"])
    rows += rows_for("d", "m", "b", [1, 2], [2, 1], [1, 1], tasks=["t2", "t3"])
    rows.append(MetricRow("d", "t2", "m", "b", 1, 2, 3, 0))
    rows += rows_for("d", "m", "c", [2], [1], [1], tasks=["t4"])
    s = summarize(rows, resamples=300, seed=4)
    one = s.compare_conditions(("d", "m", "a"), ("d", "m", "b"), ("TER", "mean_FED", "success", "PEC@1"))
    assert one.common_tasks == 1
    assert one.dataset == "d"
    expected = {"TER": 0.5, "mean_FED": 1.0, "success": -0.5, "PEC@1": 0.5}
    for statistic, value in expected.items():
        d = one.differences[statistic]
        assert (d.point, d.low, d.high) == pytest.approx((value, value, value)), statistic
    none = s.compare_conditions(("d", "m", "a"), ("d", "m", "c"), ("TER", "success"))
    assert none.common_tasks == 0
    assert none.dataset == "d"
    assert none.as_dict()["common_tasks"] == 0
    for statistic in ("TER", "success"):
        d = none.differences[statistic]
        assert np.isnan([d.point, d.low, d.high]).all(), statistic


def test_a_difference_over_part_of_the_tasks_uses_the_dataset_draws():
    """a ran 14 tasks, b 12 of them. Over the 12 they share, a - b must be what it is for a condition that
    ran only those 12 with a's rollouts there ("a-common"): both sides of every difference are then ratios
    over the same tasks on the same draws, the dataset's (one resample-count matrix for every interval of
    dataset d). a - b restricts a to the common tasks on its own, so this holds only if it draws from d's
    generator too, not from one seeded by another name (the model's, say)."""
    rng = np.random.default_rng(21)
    tasks = [f"t{j:02}" for j in range(14)]
    Ts = rng.integers(1, 6, 14)
    feds = [int(rng.integers(1, t + 2)) for t in Ts]
    ys = rng.integers(0, 2, 14)
    b_Ts = rng.integers(1, 6, 12)
    b_feds = [int(rng.integers(1, t + 2)) for t in b_Ts]
    b_ys = rng.integers(0, 2, 12)
    rows = rows_for("d", "m", "a", feds, Ts, ys, tasks=tasks)
    rows += rows_for("d", "m", "a-common", feds[:12], Ts[:12], ys[:12], tasks=tasks[:12])
    rows += rows_for("d", "m", "b", b_feds, b_Ts, b_ys, tasks=tasks[:12])
    s = summarize(rows, resamples=2000, seed=8)
    partial = s.compare_conditions(("d", "m", "a"), ("d", "m", "b"))
    common = s.compare_conditions(("d", "m", "a-common"), ("d", "m", "b"))
    assert partial.common_tasks == 12
    # the point is each side's mean over the 12 shared tasks (one rollout each), by hand
    a_ter = np.mean(np.array(feds[:12]) == Ts[:12] + 1)
    b_ter = np.mean(np.array(b_feds) == b_Ts + 1)
    assert partial.differences["TER"].point == pytest.approx(a_ter - b_ter)
    assert partial.differences["success"].point == pytest.approx(np.mean(ys[:12]) - np.mean(b_ys))
    for statistic, d in partial.differences.items():
        same = common.differences[statistic]
        assert d.low < d.high, statistic  # a real interval, which another draw would move
        assert (d.point, d.low, d.high) == pytest.approx((same.point, same.low, same.high)), statistic


def test_task_sums_hold_each_condition_own_per_task_sums():
    # a: t0 twice (FED 3 of T 2, Y 1: executable; FED 1 of T 2, Y 0), t1 once (FED 2 of T 1, Y 1: executable).
    # b: t0 once (FED 2 of T 2, Y 0). Max T is 2, so the statistics are the four scalars, PEC@1 and PEC@2.
    rows = rows_for("d", "m", "a", [3, 1, 2], [2, 2, 1], [1, 0, 1], tasks=["t0", "t0", "t1"])
    rows += rows_for("d", "m", "b", [2], [2], [0], tasks=["t0"])
    s = summarize(rows, resamples=50, seed=0)
    a, b = s.task_sums[("d", "m", "a")], s.task_sums[("d", "m", "b")]
    assert a.names == ("TER", "AUC_PEC", "mean_FED", "success", "PEC@1", "PEC@2")
    assert b.names == a.names
    # per task, the sums over its rollouts of: FED = T + 1, (FED - 1) / T, FED, Y, FED > 1, FED > 2
    np.testing.assert_array_equal(a.numerators, [[1 + 0, 1 + 0, 3 + 1, 1 + 0, 1 + 0, 1 + 0], [1, 1, 2, 1, 1, 0]])
    np.testing.assert_array_equal(a.denominators, [2, 1])
    np.testing.assert_array_equal(b.numerators, [[0, 0.5, 2, 0, 1, 0], [0, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(b.denominators, [1, 0])
    assert b.tasks().tolist() == [True, False]
