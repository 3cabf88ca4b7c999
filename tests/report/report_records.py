"""Crafted records for the report tests: every condition is homogeneous, so every bootstrap interval is
degenerate and every number in the golden tables can be checked by hand."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefix_exec.trajectory import CallCost, FailureLabel, PrefixRecord, ToolCall, Verdict


def record(
    method: str,
    task: str,
    *,
    T: int,
    fed: int,
    success: int,
    model: str = "m1",
    dataset: str = "bfcl_demo",
    label: FailureLabel = FailureLabel.DEPENDENCY,
    cost: Sequence[CallCost] = (),
    metadata: dict[str, Any] | None = None,
) -> PrefixRecord:
    actions = tuple(ToolCall(f"tool_{i + 1}", {"x": i + 1}, turn=0) for i in range(T))
    verdicts = [Verdict.accept(result=f"ok {i + 1}") for i in range(min(fed - 1, T))]
    if fed <= T:
        verdicts.append(Verdict.reject(label, f"step {fed} broke: {label.value}"))
    return PrefixRecord(dataset, task, model, method, 0, T, fed, success, tuple(verdicts), actions,
                        cost=tuple(cost), metadata=metadata or {})


TASKS = ("t1", "t2", "t3", "t4")


def crafted() -> list[PrefixRecord]:
    """Block (bfcl_demo, m1): react and plan-conditioned tie on every column; dual-loop fails at step 2
    everywhere and recovers everywhere. Block (bfcl_demo, m2): both fail at step 1 or never, all unsuccessful."""
    rows: list[PrefixRecord] = []
    for t in TASKS:
        rows.append(record("react", t, T=4, fed=5, success=1))
        rows.append(record("plan-conditioned", t, T=4, fed=5, success=1))
        rows.append(record("dual-loop", t, T=4, fed=2, success=1, label=FailureLabel.SCHEMA))
        rows.append(record("react", t, T=2, fed=1, success=0, model="m2", label=FailureLabel.PRECONDITION))
        rows.append(record("dual-loop", t, T=2, fed=3, success=0, model="m2"))
    return rows
