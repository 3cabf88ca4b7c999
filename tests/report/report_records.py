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
    return PrefixRecord(
        dataset,
        task,
        model,
        method,
        0,
        T,
        fed,
        success,
        tuple(verdicts),
        actions,
        cost=tuple(cost),
        metadata=metadata or {},
    )


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


TOOLS = ("cd", "ls", "mv", "cat", "grep", "post_tweet", "get_flight_status", "book_reservation", "send_message")


def synthetic(n: int, conditions: int = 10, seed: int = 0, dataset: str = "tau3") -> list[PrefixRecord]:
    """``n`` rollouts spread over ``conditions`` models on one dataset, shaped like real logs: T in 1..12,
    tool calls with a few string and integer arguments, a reason of about 80 characters at the first failure,
    about half of the rollouts failing, some of those recovering. Deterministic for a seed."""
    import random

    rng = random.Random(seed)
    labels = list(FailureLabel)
    per = -(-n // conditions)
    rows: list[PrefixRecord] = []
    for i in range(n):
        c, t = divmod(i, per)
        T = rng.randint(1, 12)
        fed = rng.randint(1, T) if rng.random() < 0.5 else T + 1
        actions = tuple(
            ToolCall(
                rng.choice(TOOLS),
                {
                    "path": f"docs/report_{rng.randint(0, 999)}.txt",
                    "count": rng.randint(0, 50),
                    "flag": rng.random() < 0.5,
                },
                turn=k // 3,
            )
            for k in range(T)
        )
        verdicts = [Verdict.accept(result=f"ok {k}") for k in range(fed - 1)]
        if fed <= T:
            label = rng.choice(labels)
            verdicts.append(
                Verdict.reject(
                    label,
                    f"{actions[fed - 1].name}() failed: {label.value} check on "
                    f"argument 'path' (value {rng.randint(0, 10**6)} is unknown)",
                )
            )
        rows.append(
            PrefixRecord(
                dataset,
                f"airline/task_{t}",
                f"org/model-{c}",
                "react",
                0,
                T,
                fed,
                int(rng.random() < (0.3 if fed <= T else 0.7)),
                tuple(verdicts),
                actions,
            )
        )
    return rows
