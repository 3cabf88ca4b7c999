"""The run's plan store: plans persist across openings (resume), are written once, are made once when several
threads or processes need the same one, and a bad store or ``[run] plans`` value is an input error."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from prefix_exec.agents.shared_plan import SharedPlan
from prefix_exec.cli import main
from prefix_exec.errors import InputError
from prefix_exec.runner.grid import parse_grid
from prefix_exec.runner.plan_store import PlanStore
from prefix_exec.trajectory import CallCost

UNIT = ("bfcl", "multi_turn_base_0", "m", 0)
PLAN = SharedPlan('{"steps": []}', CallCost("planner", 11, 5, 2, latency_s=0.25, model="m"), "plan-conditioned")


def test_a_plan_is_kept_across_openings_and_written_once(tmp_path: Path) -> None:
    first = PlanStore(tmp_path / "plans.sqlite").for_unit(*UNIT)
    assert first.obtain(0, "r" * 64, lambda: PLAN) is PLAN
    other = SharedPlan("{}", CallCost("planner"), "dual-loop")
    again = PlanStore(tmp_path / "plans.sqlite")  # a resumed run opens the file anew
    assert again.for_unit(*UNIT).obtain(0, "r" * 64, lambda: other) == PLAN
    assert again.put((*UNIT, 0, "r" * 64), other) == PLAN  # never replaced
    # another turn, request, trial or task is another plan
    assert again.for_unit(*UNIT).obtain(1, "r" * 64, lambda: other) is other
    assert again.for_unit(*UNIT[:3], 1).obtain(0, "r" * 64, lambda: other) is other
    assert len(again) == 3


def test_threads_needing_one_plan_make_it_once(tmp_path: Path) -> None:
    made: list[int] = []
    results: list[SharedPlan] = []

    def make() -> SharedPlan:
        made.append(1)
        time.sleep(0.05)  # widens the window in which a second maker would start; no timing is asserted
        return SharedPlan(f"plan {len(made)}", CallCost("planner"), "dual-loop")

    def worker() -> None:  # each thread has its own store object, as each runner thread has its own worker
        results.append(PlanStore(tmp_path / "plans.sqlite").for_unit(*UNIT).obtain(0, "x", make))

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1
    assert {r.content for r in results} == {"plan 1"}


def _obtain_in_process(path: str, marks: str) -> None:
    def make() -> SharedPlan:
        with open(marks, "a") as f:
            f.write("made\n")
        time.sleep(0.05)
        return SharedPlan("from a process", CallCost("planner"), "dual-loop")

    PlanStore(path).for_unit(*UNIT).obtain(0, "x", make)


def test_processes_needing_one_plan_make_it_once(tmp_path: Path) -> None:
    PlanStore(tmp_path / "plans.sqlite")
    marks = tmp_path / "marks"
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_obtain_in_process, args=(str(tmp_path / "plans.sqlite"), str(marks))) for _ in range(4)
    ]
    for p in processes:
        p.start()
    for p in processes:
        p.join(120)
    assert [p.exitcode for p in processes] == [0] * 4
    assert marks.read_text() == "made\n"


def test_an_unreadable_store_or_row_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "junk.sqlite").write_text("not a database, " * 100)
    with pytest.raises(InputError, match="plan store cannot be opened"):
        PlanStore(tmp_path / "junk.sqlite")
    store = PlanStore(tmp_path / "plans.sqlite")
    with sqlite3.connect(tmp_path / "plans.sqlite") as db:
        db.execute(
            "INSERT INTO plans VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*UNIT, 0, "x", '"plan"', '{"role": "planner", "prompt_tokens": "many"}', "react"),
        )
    with pytest.raises(InputError, match=r"cost.prompt_tokens': expected int or float, got str 'many'"):
        store.get((*UNIT, 0, "x"))


@pytest.mark.parametrize("value", [3, "", "  ", ["a"]])
def test_run_plans_must_be_a_path(tmp_path: Path, value: object) -> None:
    grid = {
        "methods": ["dual-loop"],
        "run": {"plans": value},
        "datasets": [{"name": "t", "kind": "custom", "spec": "tools.yaml"}],
        "models": [{"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": ""}],
    }
    with pytest.raises(InputError, match="must be a file path") as caught:
        parse_grid(grid, base_dir=tmp_path)
    assert caught.value.field == "run.plans"


def test_run_plans_resolve_against_the_grid_and_a_bad_store_exits_2(tmp_path: Path, ticketing: Path) -> None:
    grid = {
        "methods": ["dual-loop"],
        "run": {"plans": "other/plans.sqlite"},
        "datasets": [{"name": "t", "kind": "custom", "spec": str(ticketing / "tools.yaml")}],
        "models": [{"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": ""}],
    }
    assert parse_grid(grid, base_dir=tmp_path).plan_store == tmp_path / "other" / "plans.sqlite"
    assert parse_grid({**grid, "run": {}}, base_dir=tmp_path).plan_store is None  # outside a run: no sharing
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "plans.sqlite").write_text("not a database, " * 100)
    path = tmp_path / "grid.toml"
    path.write_text(f"""
methods = ["dual-loop"]
[run]
plans = "other/plans.sqlite"
[[datasets]]
name = "t"
kind = "custom"
spec = "{ticketing / "tools.yaml"}"
[[models]]
model = "m"
base_url = "http://127.0.0.1:9/v1"
api_key_env = ""
""")
    assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 2
    assert not (tmp_path / "run" / "rollouts.jsonl").exists() or not (tmp_path / "run" / "rollouts.jsonl").read_text()


@pytest.mark.parametrize("content", ["[" * 100_000 + "]" * 100_000, "9" * 5000])
def test_a_stored_plan_no_reader_takes_is_an_input_error(tmp_path: Path, content: str) -> None:
    # nested 100,000 deep, a plan ended the run in a RecursionError traceback
    store = PlanStore(tmp_path / "plans.sqlite")
    with sqlite3.connect(tmp_path / "plans.sqlite") as db:
        db.execute("INSERT INTO plans VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (*UNIT, 0, "x", content, "{}", "react"))
    with pytest.raises(InputError, match="is unreadable"):
        store.get((*UNIT, 0, "x"))
