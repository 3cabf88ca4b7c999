"""Adversarial calls: nothing a model writes is ever run as code, and each such action is a schema failure.

Every crafted call would create ``pwned`` in the working directory if it were evaluated (as BFCL's own
execution code would evaluate it). Two valid calls come first, so the failure must sit at depth 3.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval")

from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess, load_task
from prefix_exec.envs.bfcl.invocation import invoke
from prefix_exec.importers.bfcl import decode_result
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel, Rollout, ToolCall

TOUCH = "open('pwned', 'w').write('x')"
PROMPTING_ATTACKS = [
    f"[ls(a={TOUCH})]",  # nested call in an argument
    "[cd(folder=__import__('os').system('touch pwned'))]",  # dunder + attribute + call
    "[os.system('touch pwned')]",  # attribute access as the function
    "[__import__('os').system('touch pwned')]",
    f"[(lambda: {TOUCH})()]",  # lambda as the function
    f"[ls(a=(lambda: {TOUCH}))]",  # lambda as an argument
    f"[ls(a=[{TOUCH} for _ in range(1)])]",  # comprehension
    f'[eval("{TOUCH}")]',  # a name that is not a tool
    f'[exec("{TOUCH}")]',
    f"[cd(folder='a' + {TOUCH})]",  # operator expression
    f"[ls(a=f'{{{TOUCH}}}')]",  # f-string
    f"[ls(**{{'a': {TOUCH}}})]",  # ** expansion
    "[__builtins__(x=1)]",  # dunder name
    "[ls(a=True).__class__()]",  # attribute on a call result
]
FC_ATTACKS = [
    {"eval": f'{{"source": "{TOUCH}"}}'},
    {"__import__": '{"name": "os"}'},
    {"os.system": '{"command": "touch pwned"}'},
    {"ls; import os": '{"a": true}'},
    {"_load_scenario": '{"scenario": {}}'},  # a private backend method
    {"cd": f'{{"folder": "{TOUCH}"}}'},  # code as a string literal: harmless data, folder does not exist
]
GOOD = [[{"cd": '{"folder": "document"}'}], [{"ls": "{}"}]]


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def score(actions: tuple[ToolCall, ...]) -> tuple[int, FailureLabel | None]:
    env = BfclEnvironment()
    record = replay(Rollout("bfcl", "multi_turn_base_0", "m", "x", actions, success=0), env)
    FinalSuccess(env.templates).check(load_task("multi_turn_base_0"), actions)  # Y's execution path too
    return record.fed, record.label


@pytest.mark.parametrize("attack", PROMPTING_ATTACKS)
def test_prompting_attack_is_a_schema_failure_and_runs_nothing(attack: str, in_tmp: Path) -> None:
    actions, _ = decode_result(["[cd(folder='document')]", "[ls()]", attack])
    assert len(actions) == 3
    assert score(actions) == (3, FailureLabel.SCHEMA)
    assert not (in_tmp / "pwned").exists()


@pytest.mark.parametrize("attack", FC_ATTACKS)
def test_fc_attack_is_rejected_and_runs_nothing(attack: dict[str, str], in_tmp: Path) -> None:
    actions, _ = decode_result([*GOOD, [[attack]]])
    fed, label = score(actions)
    assert fed == 3
    # a code string passed as a plain string argument is only data: the folder simply does not exist
    assert label is (FailureLabel.DEPENDENCY if "cd" in attack else FailureLabel.SCHEMA)
    assert not (in_tmp / "pwned").exists()
    assert not list(in_tmp.iterdir())


def test_huge_power_does_not_hang() -> None:
    env = BfclEnvironment()
    # multi_turn_base_100+ tasks with MathAPI: find one
    task = next(t for t in (load_task(f"multi_turn_base_{i}") for i in range(200)) if "MathAPI" in t.involved_classes)
    session = env.start(task.id)
    # Unbounded, 10 ** 1e9 and its friends run for hours; the bound below is only there to fail instead of
    # hanging, and is generous so that a busy machine never trips it.
    started = time.perf_counter()
    verdict = session.step(ToolCall("power", {"base": 10, "exponent": 1000000000}))
    assert verdict.label is FailureLabel.SCHEMA
    assert "bound" in verdict.reason
    assert session.step(ToolCall("power", {"base": 2, "exponent": 10})).result == '{"result": 1024}'
    for name, arguments in (
        ("logarithm", {"value": 10, "base": 2, "precision": 10**9}),
        ("square_root", {"number": 2, "precision": 10**9}),
        ("round_number", {"number": 5, "decimal_places": -(10**9)}),
    ):
        assert session.step(ToolCall(name, arguments)).label is FailureLabel.SCHEMA
    assert time.perf_counter() - started < 60


def test_the_wall_clock_bound_interrupts_a_python_loop() -> None:
    def spin() -> None:
        while True:
            pass

    started = time.perf_counter()
    outcome = invoke(spin, "spin", {}, time_limit=0.2)
    assert outcome.timed_out
    assert outcome.exceeded
    assert "time bound" in outcome.exceeded
    # the loop never ends by itself: returning at all is the point; the bound only keeps a failure short
    assert time.perf_counter() - started < 30


def test_numeric_precision_set_by_a_call_does_not_leak() -> None:
    import decimal

    before = decimal.getcontext().prec
    env = BfclEnvironment()
    task = next(t for t in (load_task(f"multi_turn_base_{i}") for i in range(200)) if "MathAPI" in t.involved_classes)
    assert env.start(task.id).step(ToolCall("square_root", {"number": 2, "precision": 50})).accepted
    assert decimal.getcontext().prec == before
    assert os.getcwd()  # still in the sandbox cwd


def test_deeply_nested_arguments_exceed_a_bound_not_a_crash() -> None:
    deep: object = "x"
    for _ in range(900):
        deep = {"k": deep}
    task = next(t for t in (load_task(f"multi_turn_base_{i}") for i in range(200)) if "TicketAPI" in t.involved_classes)
    # edit_ticket's `updates` is the one doc parameter typed `dict`, so binding lets any content through
    call = ToolCall("edit_ticket", {"ticket_id": 1, "updates": deep})
    env = BfclEnvironment()
    verdict = env.start(task.id).step(call)
    assert verdict.label is FailureLabel.SCHEMA
    assert "nest 900 levels deep" in verdict.reason
    FinalSuccess(env.templates).check(task, (call,))  # Y's lenient path refuses it too


def test_huge_integer_literals_are_schema_failures_and_records_still_write(tmp_path: Path) -> None:
    # 0x + 5,000 f's: past Python's 4,300-digit int/str limit, so a record holding it could not be written.
    from prefix_exec.cli import main

    line = {"id": "multi_turn_base_0", "result": ["[cd(folder='document')]", "[cd(folder=0x" + "f" * 5000 + ")]"]}
    results = tmp_path / "BFCL_v4_multi_turn_base_result.json"
    results.write_text(json.dumps(line) + "\n")
    out = tmp_path / "records.jsonl"
    assert main(["score", "bfcl", str(results), "--model", "m", "--method", "x", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert (record["fed"], record["label"]) == (2, "schema")
    assert "integer literal" in record["reason"]
    assert score(decode_result(["[logarithm(value=7.0, base=3.0, precision=10000)]"])[0]) == (1, FailureLabel.SCHEMA)


def test_threads_never_see_each_others_math_precision() -> None:
    # mpmath's precision is process-global; without one-call-at-a-time, a logarithm at 5 digits running
    # beside one at 60 digits returns a result computed at the other's precision.
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.math_api import MathAPI

    def log_text(precision: int) -> str:
        return invoke(MathAPI().logarithm, "logarithm", {"value": 7, "base": 3, "precision": precision}).text

    alone = {p: log_text(p) for p in (5, 60)}
    assert alone[5] != alone[60]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        precisions = [5, 60] * 2000
        with ThreadPoolExecutor(4) as pool:
            texts = list(pool.map(log_text, precisions))
    finally:
        sys.setswitchinterval(interval)
    assert all(text == alone[p] for p, text in zip(precisions, texts, strict=True))


SLOW_MPMATH = """
import importlib.abc, importlib.util, sys, threading, time

class SlowLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        time.sleep(0.5)  # another thread looks while this import is half done
        module.mp = type("Context", (), {"dps": 15})()

class SlowFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "mpmath":
            return importlib.util.spec_from_loader(name, SlowLoader())
        return None

sys.modules.pop("mpmath", None)
sys.meta_path.insert(0, SlowFinder())
from prefix_exec.envs.bfcl.invocation import invoke

importer = threading.Thread(target=lambda: __import__("mpmath"))
importer.start()
while "mpmath" not in sys.modules:
    time.sleep(0.001)
print(invoke(lambda: {"ok": 1}, "probe", {}).text)
importer.join()
"""


def test_a_call_waits_for_another_threads_import_of_mpmath() -> None:
    # Runner threads start BFCL sessions concurrently; one may be importing MathAPI (and mpmath) while another
    # runs a call, which reads mpmath's precision. A half-imported mpmath has no ``mp`` yet.
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", SLOW_MPMATH], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '{"ok": 1}'
