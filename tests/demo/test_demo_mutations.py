"""Every fault-injection operator, on every BFCL base task it applies to, is caught by the real BFCL
environment with its expected label at its injected depth, in both the plain and the repaired variant."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from prefix_exec.demo import bfcl
from prefix_exec.demo.mutations import OPERATORS, apply
from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel, Rollout, ToolCall


@pytest.fixture(scope="module")
def env() -> BfclEnvironment:
    return BfclEnvironment()


@pytest.fixture(scope="module")
def outcomes(env: BfclEnvironment) -> list[tuple[str, str, int, int, str | None, int, int]]:
    """(operator, variant, injected depth, FED, detected label, expected-label match, success) rows."""
    checker = FinalSuccess(env.templates)
    rows = []
    for task in bfcl.tasks("base", 200):
        truth = bfcl.truth_calls(task)
        docs = bfcl.docs(task)
        witness = bfcl.Witness(task, env.templates)
        for op in OPERATORS:
            m = apply(op, truth, docs, witness, random.Random(f"test:{op.name}:{task.id}"))
            if m is None:
                continue
            for variant, calls in (("plain", m.calls), ("repaired", m.repaired)):
                rec = replay(Rollout("bfcl", task.id, "m", "x", calls, success=0), env)
                detected = rec.label.value if rec.label else None
                rows.append(
                    (
                        op.name,
                        variant,
                        m.depth,
                        rec.fed,
                        detected,
                        int(detected == m.expected.value),
                        bfcl.success(checker, task, calls),
                    )
                )
    return rows


def test_ground_truth_is_executable_and_successful(env: BfclEnvironment) -> None:
    checker = FinalSuccess(env.templates)
    for task in bfcl.tasks("base", 40):
        truth = bfcl.truth_calls(task)
        assert bfcl.Witness(task, env.templates)(truth) is None
        assert replay(Rollout("bfcl", task.id, "m", "x", truth, success=1), env).executable
        assert bfcl.success(checker, task, truth) == 1


def test_every_operator_applies_somewhere(outcomes: list) -> None:
    counts = Counter(row[0] for row in outcomes if row[1] == "plain")
    assert set(counts) == {op.name for op in OPERATORS}
    assert min(counts.values()) >= 5


def test_every_fault_is_caught_at_its_depth_with_its_expected_label(outcomes: list) -> None:
    misses = [row for row in outcomes if row[2] != row[3] or not row[5]]
    assert misses == []


def test_only_invent_id_is_off_diagonal() -> None:
    off = [op.name for op in OPERATORS if op.injected != op.expected]
    assert off == ["invent_id"]
    assert {op.injected for op in OPERATORS} == set(FailureLabel)


def test_repair_recovers_and_plain_faults_mostly_do_not(outcomes: list) -> None:
    # final success is BFCL's own rule: a repaired rollout usually reaches the goal, a plain one rarely
    repaired = [row[6] for row in outcomes if row[1] == "repaired" and row[0] != "create_twice"]
    plain = [row[6] for row in outcomes if row[1] == "plain" and row[0] != "create_twice"]
    assert sum(repaired) / len(repaired) > 0.8
    assert sum(plain) / len(plain) < 0.2


def test_static_operators_on_a_known_task() -> None:
    task = bfcl.tasks("base", 1)[0]  # multi_turn_base_0: cd, mkdir, mv, | cd, grep | sort | cd .., mv, cd, diff
    truth = bfcl.truth_calls(task)
    assert [c.name for c in truth][:3] == ["cd", "mkdir", "mv"]
    env = BfclEnvironment()
    witness = bfcl.Witness(task, env.templates)
    docs = bfcl.docs(task)
    twice = apply(next(op for op in OPERATORS if op.name == "create_twice"), truth, docs, witness, random.Random(0))
    assert twice is not None
    assert twice.depth == 3
    assert [c.name for c in twice.calls][:3] == ["cd", "mkdir", "mkdir"]
    rec = replay(Rollout("bfcl", task.id, "m", "x", twice.calls, success=0), env)
    assert (rec.fed, rec.label) == (3, FailureLabel.STATE_CONSISTENCY)
    # dropping cd('document') makes the mv of final_report.pdf refer to a file that is not there
    drop = apply(next(op for op in OPERATORS if op.name == "drop_prerequisite"), truth, docs, witness, random.Random(0))
    assert drop is not None
    rec = replay(Rollout("bfcl", task.id, "m", "x", drop.calls, success=0), env)
    assert (rec.fed, rec.label) == (drop.depth, FailureLabel.DEPENDENCY)
    assert isinstance(drop.repaired[drop.depth], ToolCall)
    assert drop.repaired[drop.depth].name == "cd"
