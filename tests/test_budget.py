"""Rollout and call budgets: a wall-clock budget per rollout, a memory budget per call, BFCL's unbounded
cases (string repeat in C, exhausted message ids, quadratic listings, deep folders) bounded and reported."""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval")

from prefix_exec import budget
from prefix_exec.cli import main
from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess, api_classes, invocation, load_task
from prefix_exec.replay import replay
from prefix_exec.trajectory import Rollout, ToolCall


def test_check_raises_only_past_the_deadline() -> None:
    budget.check()  # no budget: never
    with budget.rollout_budget(60.0):
        budget.check()
        assert 0 < budget.remaining() <= 60.0
    with budget.rollout_budget(0.01), pytest.raises(budget.OverBudget, match=r"0\.01 s"):
        time.sleep(0.05)
        budget.check()
    assert budget.remaining() == float("inf")


def test_call_memory_fails_one_huge_allocation_and_restores_the_limit() -> None:
    before = resource.getrlimit(resource.RLIMIT_AS)
    with budget.rollout_budget(None, call_memory_mb=64), pytest.raises(MemoryError), budget.call_memory():
        bytearray(2 * 1024**3)
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    with budget.rollout_budget(None, call_memory_mb=64), budget.call_memory():
        assert len(bytearray(8 * 1024**2)) == 8 * 1024**2  # below the budget it runs


def test_exchange_rate_string_repeat_exceeds_the_memory_budget_at_once() -> None:
    task = load_task("multi_turn_base_150")
    instances = api_classes.Templates().fresh(task)
    owners = {"compute_exchange_rate": "TravelAPI"}
    arguments = {"base_currency": "USD", "target_currency": "JPY", "value": "x" * 10_000_000}
    start = time.monotonic()
    with budget.rollout_budget(None, call_memory_mb=256):
        outcome = invocation.invoke_as_bfcl(instances, owners, "compute_exchange_rate", arguments)
    assert outcome.exceeded is not None
    assert "memory budget of 256 MiB" in outcome.exceeded
    assert time.monotonic() - start < 30  # 110 x 10 MB was 3.3 GB and 15.7 s; here it fails at allocation
    small = invocation.invoke_as_bfcl(instances, owners, "compute_exchange_rate", {**arguments, "value": 10.0})
    assert small.ran_clean
    assert "1100" in small.text


def test_exhausted_message_ids_are_stopped_without_waiting() -> None:
    task = load_task("multi_turn_base_14")
    instances = api_classes.Templates().fresh(task)
    instances["MessageAPI"].generated_ids = set(range(10000, 100000))
    owners = {"send_message": "MessageAPI"}
    start = time.monotonic()
    outcome = invocation.invoke_as_bfcl(
        instances, owners, "send_message", {"receiver_id": "USR002", "message": "hi"}, time_limit=30.0
    )
    assert outcome.exceeded is not None
    assert "every message id" in outcome.exceeded
    assert time.monotonic() - start < 5  # without the state check it loops until the 30 s bound
    instances["MessageAPI"].generated_ids = set(range(10000, 99999))  # one id left: it is found
    ok = invocation.invoke_as_bfcl(instances, owners, "send_message", {"receiver_id": "USR002", "message": "hi"})
    assert ok.exceeded is None


def checker_peak(n: int) -> float:
    """Peak traced memory of BFCL's final-success check on n ``touch`` calls then n ``find`` listings."""
    import tracemalloc

    task = load_task("multi_turn_base_1")
    checker = FinalSuccess()
    checker.truth(task)
    calls = [ToolCall("touch", {"file_name": f"file{i:05}.txt"}, f"t0.s0.c{i}", 0) for i in range(n)]
    calls += [ToolCall("find", {"path": "."}, f"t0.s1.c{i}", 0) for i in range(n)]
    tracemalloc.start()
    try:
        assert checker.check(task, calls, None).success == 0
        return float(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()


def test_the_final_success_check_keeps_only_texts_it_compares() -> None:
    # Keeping every listing grows as n * n (9x from n = 200 to 600); the state alone grows as n (3x).
    ratio = checker_peak(600) / checker_peak(200)
    assert ratio < 4.0, f"peak memory grew {ratio:.1f}x for 3x the calls"


def deep_folders(pairs: int) -> list[ToolCall]:
    calls = []
    for i in range(pairs):
        calls.append(ToolCall("mkdir", {"dir_name": f"d{i}"}, f"t0.s0.c{2 * i}", 0))
        calls.append(ToolCall("cd", {"folder": f"d{i}"}, f"t0.s0.c{2 * i + 1}", 0))
    return calls


def test_a_wrong_call_after_hundreds_of_nested_folders_is_a_verdict_not_a_recursion_error() -> None:
    actions = (*deep_folders(400), ToolCall("cd", {"folder": 5}, "t0.s0.c800", 0))
    rollout = Rollout("bfcl", "multi_turn_base_1", "m", "x", actions=actions, success=0)
    record = replay(rollout, BfclEnvironment())
    assert record.fed == 801
    assert "expected string" in record.verdicts[-1].reason
    assert FinalSuccess().check(load_task("multi_turn_base_1"), actions, None).success == 0


def result_file(folder: Path, rows: list[dict[str, object]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "BFCL_v4_multi_turn_base_result.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_rollout_past_its_budget_is_reported_unscorable_and_the_rest_are_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = 4000  # n touch + n find: tens of seconds unbounded
    slow = [
        [
            [{"touch": json.dumps({"file_name": f"f{i}"})} for i in range(n)],
            [{"find": json.dumps({"path": "."})} for _ in range(n)],
        ]
    ]
    good = [[[{"ls": "{}"}]]]
    path = result_file(
        tmp_path / "m-FC", [{"id": "multi_turn_base_1", "result": slow}, {"id": "multi_turn_base_3", "result": good}]
    )
    out = tmp_path / "records.jsonl"
    start = time.monotonic()
    code = main(["score", "bfcl", str(path), "--out", str(out), "--keep-going", "--rollout-budget", "2"])
    assert code == 2
    assert time.monotonic() - start < 60
    err = capsys.readouterr().err
    assert "multi_turn_base_1" in err
    assert "wall-clock budget of 2 s" in err
    assert [json.loads(line)["task_id"] for line in out.read_text().splitlines()] == ["multi_turn_base_3"]


def test_the_address_space_read_follows_allocations_and_forks() -> None:
    import os

    if budget.address_space() is None:
        pytest.skip("no /proc/self/statm here")
    block = 256 * 1024**2
    before = budget.address_space()
    buffer = bytearray(block)
    grown = budget.address_space()
    assert before is not None and grown is not None and grown - before >= block // 2
    del buffer
    # A forked child reads its own size, not the parent's through the descriptor it inherited.
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            start = budget.address_space() or 0
            child_buffer = bytearray(block)
            end = budget.address_space() or 0
            os.write(write, str(end - start).encode())
            del child_buffer
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child_growth = int(pipe.read() or 0)
    os.waitpid(pid, 0)
    assert child_growth >= block // 2
