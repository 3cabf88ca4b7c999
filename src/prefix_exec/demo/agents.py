"""Synthetic "agents": seeded fault mixes over BFCL ground truth that stand in for methods in the demo.

They are not models. Each agent, for each task, either replays the ground truth cleanly or injects one fault
with an operator drawn from its mix, and then either repairs it (a recovering agent: fault, fix, rest of the
ground truth) or goes on as if nothing happened. The three mixes mimic the paper's story: an agent that
fails early and often but recovers reaches the goal about as often as a careful one, yet its prefixes are
far less executable, so outcome-only and prefix-level rankings diverge.

Telemetry is synthetic too (tokens and seconds drawn per call), so the report's cost tables have input.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from prefix_exec.demo.mutations import BY_NAME, Calls, Docs, Mutation, Witness, apply
from prefix_exec.trajectory import CallCost


@dataclass(frozen=True)
class Agent:
    """``clean``: chance of a fault-free rollout. ``mix``: operator -> weight. ``repair``: chance that a
    faulty rollout is repaired. ``verifier``: adds synthetic verifier calls to the telemetry."""

    method: str
    clean: float
    mix: Mapping[str, float]
    repair: float
    verifier: bool = False


AGENTS: tuple[Agent, ...] = (
    Agent(
        "react (synthetic)",
        clean=0.50,
        mix={"rename_argument": 3, "retype_argument": 2, "misspell_tool": 2, "invent_id": 2, "drop_prerequisite": 1},
        repair=0.35,
    ),
    Agent(
        "plan-conditioned (synthetic)",
        clean=0.20,
        mix={
            "drop_prerequisite": 3,
            "skip_engine_start": 3,
            "skip_authentication": 3,
            "create_twice": 2,
            "invent_id": 2,
            "rename_argument": 1,
        },
        repair=0.95,
    ),
    Agent(
        "dual-loop (synthetic)",
        clean=0.85,
        mix={"retype_argument": 2, "invent_id": 2, "create_twice": 1, "misspell_tool": 1},
        repair=0.25,
        verifier=True,
    ),
)
MODEL = "synthetic-agents"


@dataclass(frozen=True)
class Plan:
    """What one agent did on one task: the calls, and the fault injected (``None`` for a clean rollout)."""

    calls: Calls
    mutation: Mutation | None
    repaired: bool


def plan(agent: Agent, truth: Calls, docs: Docs, witness: Witness, rng: random.Random) -> Plan:
    if rng.random() < agent.clean:
        return Plan(truth, None, False)
    names = list(agent.mix)
    weights = [agent.mix[n] for n in names]
    order: list[str] = []
    while names:  # a weighted order without replacement: try the drawn operator first
        pick = rng.choices(range(len(names)), weights)[0]
        order.append(names.pop(pick))
        weights.pop(pick)
    repaired = rng.random() < agent.repair
    for name in order:
        mutation = apply(BY_NAME[name], truth, docs, witness, rng)
        if mutation is not None:
            return Plan(mutation.repaired if repaired else mutation.calls, mutation, repaired)
    return Plan(truth, None, False)


def telemetry(agent: Agent, calls: int, rng: random.Random) -> tuple[CallCost, ...]:
    """Synthetic agent-call costs: one planner call, one executor call per action, verifier calls for
    agents with a verifier. Seeded; not measurements."""
    costs = [
        CallCost("planner", rng.randint(900, 1400), rng.randint(150, 400), latency_s=rng.uniform(1.5, 3.0), model=MODEL)
    ]
    for _ in range(max(calls, 1)):
        costs.append(
            CallCost(
                "executor", rng.randint(1200, 2200), rng.randint(30, 90), latency_s=rng.uniform(0.6, 1.4), model=MODEL
            )
        )
        if agent.verifier:
            costs.append(
                CallCost(
                    "verifier",
                    rng.randint(700, 1100),
                    rng.randint(20, 60),
                    latency_s=rng.uniform(0.4, 0.9),
                    model=MODEL,
                )
            )
    return tuple(costs)
