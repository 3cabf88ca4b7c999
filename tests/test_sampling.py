"""The deterministic greedy multi-label stratified sampler and its label files."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prefix_exec.cli import main
from prefix_exec.errors import InputError
from prefix_exec.sampling import label_deviation, read_labels, read_names, stratified_sample, write_sample

LABELS = [f"L{i}" for i in range(5)]


@st.composite
def pools(draw: st.DrawFn, max_size: int = 40, multi: bool = True) -> tuple[dict[str, list[str]], int]:
    size = draw(st.integers(1, max_size))
    names = [f"t{i:03d}" for i in range(size)]
    if multi:
        labels = st.lists(st.sampled_from(LABELS), max_size=4, unique=True)
    else:
        labels = st.sampled_from(LABELS).map(lambda label: [label])
    pool = {name: draw(labels) for name in names}
    return pool, draw(st.integers(0, size))


def _worst(pool: dict[str, list[str]], sample: list[str] | tuple[str, ...]) -> float:
    return max((abs(v) for v in label_deviation(pool, sample).values()), default=0.0)


@given(pools(), st.integers(0, 2**32 - 1), st.randoms(use_true_random=False))
def test_same_seed_same_pick_whatever_the_input_order(
    case: tuple[dict[str, list[str]], int], seed: int, rng: random.Random
) -> None:
    pool, n = case
    pick = stratified_sample(pool, n, seed=seed)
    shuffled = list(pool.items())
    rng.shuffle(shuffled)
    assert stratified_sample(dict(shuffled), n, seed=seed) == pick
    assert len(pick) == len(set(pick)) == n
    assert set(pick) <= set(pool)


@given(pools(max_size=80, multi=False), st.integers(0, 1000))
def test_disjoint_labels_are_always_within_one_task_of_proportional(
    case: tuple[dict[str, list[str]], int], seed: int
) -> None:
    # with one label per task, rounding every n * c_l / P down or up is always attainable
    pool, n = case
    assert _worst(pool, stratified_sample(pool, n, seed=seed)) <= 1 + 1e-9


@settings(max_examples=300, deadline=None)
@given(pools(max_size=10), st.integers(0, 1000))
def test_multi_label_shares_are_within_one_task_wherever_feasible(
    case: tuple[dict[str, list[str]], int], seed: int
) -> None:
    pool, n = case
    best = min(_worst(pool, combo) for combo in itertools.combinations(sorted(pool), n))
    worst = _worst(pool, stratified_sample(pool, n, seed=seed))
    if best <= 1 + 1e-9:
        assert worst <= 1 + 1e-9
    else:
        assert worst >= best - 1e-9  # infeasible: nothing to assert but consistency


def test_paper_sized_pool_is_close_and_deterministic() -> None:
    rng = random.Random(7)
    pool = {}
    for i in range(1032):
        labels = [
            rng.choice(["SINGLE_TOOL_CALL", "MULTIPLE_TOOL_CALL"]),
            rng.choice(["SINGLE_USER_TURN", "MULTIPLE_USER_TURN"]),
            rng.choice(["NO_DISTRACTION_TOOLS", "THREE_DISTRACTION_TOOLS", "TEN_DISTRACTION_TOOLS"]),
        ]
        labels += [
            c for c in ("STATE_DEPENDENCY", "CANONICALIZATION", "INSUFFICIENT_INFORMATION") if rng.random() < 0.2
        ]
        pool[f"scenario_{i}"] = labels
    pick = stratified_sample(pool, 200, seed=0)
    assert pick == stratified_sample(pool, 200, seed=0)
    assert len(pick) == 200
    assert _worst(pool, pick) <= 1


def test_small_hand_example() -> None:
    # 6 tasks: labels a on 4 of them, b on 2 -> a sample of 3 needs a = 2, b = 1 exactly
    pool = {"t1": ["a"], "t2": ["a"], "t3": ["a"], "t4": ["a"], "t5": ["b"], "t6": ["b"]}
    pick = stratified_sample(pool, 3, seed=1)
    assert sum("a" in pool[name] for name in pick) == 2
    assert label_deviation(pool, pick) == {"a": 0.0, "b": 0.0}


def test_edge_sizes() -> None:
    pool = {"x": ["a"], "y": [], "z": ["a", "b"]}
    assert stratified_sample(pool, 0) == []
    assert stratified_sample(pool, 3) == ["x", "y", "z"]
    with pytest.raises(ValueError):
        stratified_sample(pool, 4)
    assert len(stratified_sample({"p": [], "q": []}, 1)) == 1


def test_label_files(tmp_path: Path, shared_data: Path) -> None:
    summary = read_labels(shared_data / "toolsandbox/run_public/result_summary.json")
    assert len(summary) == 20 and summary["get_wifi"] == [
        "SINGLE_TOOL_CALL",
        "SINGLE_USER_TURN",
        "NO_DISTRACTION_TOOLS",
    ]
    (tmp_path / "list.json").write_text(json.dumps([{"name": "a", "labels": ["x"]}, {"name": "b", "categories": []}]))
    assert read_labels(tmp_path / "list.json") == {"a": ["x"], "b": []}
    (tmp_path / "map.json").write_text(json.dumps({"a": ["x", "y"], "b": "z"}))
    assert read_labels(tmp_path / "map.json") == {"a": ["x", "y"], "b": ["z"]}
    (tmp_path / "l.csv").write_text("scenario,categories\na,x;y\nb,z|x\na,w\n")
    assert read_labels(tmp_path / "l.csv") == {"a": ["x", "y", "w"], "b": ["z", "x"]}
    (tmp_path / "bad.csv").write_text("who,what\na,b\n")
    with pytest.raises(InputError, match="name column"):
        read_labels(tmp_path / "bad.csv")
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(InputError, match="'name'"):
        read_labels(tmp_path / "bad.json")


def test_written_list_round_trips(tmp_path: Path) -> None:
    for name in ("chosen.txt", "chosen.json"):
        write_sample(["a", "b c"], tmp_path / name)
        assert read_names(tmp_path / name) == ["a", "b c"]
    (tmp_path / "broken.json").write_text("[")
    with pytest.raises(InputError, match="not valid JSON"):
        read_names(tmp_path / "broken.json")
    with pytest.raises(InputError, match="cannot read"):
        read_names(tmp_path / "missing.txt")


def test_sample_command_writes_the_chosen_list(tmp_path: Path, shared_data: Path) -> None:
    summary = shared_data / "toolsandbox/run_public/result_summary.json"
    out = tmp_path / "chosen.txt"
    assert main(["sample", str(summary), "-n", "10", "--seed", "3", "--out", str(out)]) == 0
    chosen = read_names(out)
    assert chosen == stratified_sample(read_labels(summary), 10, seed=3)
    assert main(["sample", str(summary), "-n", "21", "--out", str(out)]) == 2
