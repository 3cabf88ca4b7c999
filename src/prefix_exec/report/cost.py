"""Cost tables from the agent-call telemetry that records carry (``cost``: one entry per LLM call).

Agent cost counts the roles in :data:`AGENT_ROLES` only; simulator and evaluator calls are excluded. Tokens
per call are ``prompt_tokens + completion_tokens``: OpenAI-style usage already counts reasoning tokens inside
completion tokens, so ``reasoning_tokens`` is not added again. Latency is the sum of the agent calls'
``latency_s`` over a rollout (cumulative agent-call latency, not wall time). Means are over the rollouts of a
condition that carry any agent telemetry.

Verifier sensitivity reads ``metadata.verifier_model`` and ``metadata.k_val`` (or ``K_val``) from records: a
condition whose records carry either is a verifier variant, compared against the plan-conditioned method of
its block. The table appears when the grid holds two or more distinct (verifier model, K_val) settings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from prefix_exec.analysis.rows import MetricRow
from prefix_exec.analysis.selection import Condition
from prefix_exec.analysis.summary import ConditionSummary, Summary
from prefix_exec.report.cells import Cell, Table, difference_columns, estimate_cell, number_cell, text_cell
from prefix_exec.report.inputs import verifier_setting
from prefix_exec.report.layout import Anchors, blocks_of, is_dual_loop, is_plan_conditioned, tagged_rows
from prefix_exec.trajectory import AgentCost, PrefixRecord, agent_cost

__all__ = ["ConditionCost", "condition_costs", "cost_tables", "row_costs"]


@dataclass(frozen=True)
class ConditionCost:
    """Mean agent tokens, latency (s) and calls per rollout over the ``n`` rollouts that carry telemetry."""

    n: int
    tokens: float
    latency_s: float
    calls: float


def condition_costs(records: Iterable[PrefixRecord]) -> dict[Condition, ConditionCost]:
    """Mean agent cost per condition of ``records`` (rollouts without agent telemetry left out)."""
    return mean_costs((r.condition, agent_cost(r.cost)) for r in records)


def row_costs(rows: Iterable[MetricRow]) -> dict[Condition, ConditionCost]:
    """:func:`condition_costs` of metric rows (``prefix-exec metrics``), from their :attr:`MetricRow.agent_cost`."""
    return mean_costs((r.condition, r.agent_cost) for r in rows)


def mean_costs(found: Iterable[tuple[Condition, AgentCost | None]]) -> dict[Condition, ConditionCost]:
    sums: dict[Condition, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for condition, cost in found:
        if cost is None:
            continue
        s = sums[condition]
        s[0] += 1
        s[1] += cost.tokens
        s[2] += cost.seconds
        s[3] += cost.calls
    return {k: ConditionCost(int(n), tok / n, lat / n, calls / n) for k, (n, tok, lat, calls) in sums.items()}


def cost_table(summary: Summary, costs: Mapping[Condition, ConditionCost], anchors: Anchors) -> Table:
    columns = (
        "dataset",
        "model",
        "method",
        "rollouts with telemetry",
        "mean agent tokens",
        "mean agent-call latency (s)",
        "mean agent calls",
    )

    def row(c: ConditionSummary, cost: ConditionCost) -> tuple[Cell, ...]:
        link = anchors.condition(c.condition)
        return (
            text_cell(c.dataset),
            text_cell(c.model),
            text_cell(c.method),
            number_cell(cost.n, link=link),
            number_cell(cost.tokens, digits=0, link=link),
            number_cell(cost.latency_s, digits=1, link=link),
            number_cell(cost.calls, digits=1, link=link),
        )

    rows, tags = tagged_rows(
        blocks_of(summary), lambda block: (row(c, costs[c.condition]) for c in block.rows if c.condition in costs)
    )
    note = (
        "Agent calls only (planner, verifier, executor); tokens = prompt + completion; latency = sum of agent "
        "call latencies per rollout."
    )
    return Table("cost", "Agent-side cost per method", columns, rows, tags, note)


def _change(new: float, old: float) -> float | None:
    return None if old == 0 else (new - old) / old


def _percent_cell(x: float | None) -> Cell:
    if x is None:
        return Cell("undefined", None, csv=("",))
    return Cell(f"{100 * x:+.1f}%", x, csv=(repr(round(x, 6)),))


def relative_cost(summary: Summary, costs: Mapping[Condition, ConditionCost]) -> Table:
    """Dual-loop against plan-conditioned per block: relative change of mean tokens and latency."""
    columns = ("dataset", "model", "dual-loop", "plan-conditioned", "Δ tokens", "Δ latency")
    rows: list[tuple[Cell, ...]] = []
    for block in blocks_of(summary):
        plans = [c for c in block.rows if is_plan_conditioned(c.method) and c.condition in costs]
        duals = [c for c in block.rows if is_dual_loop(c.method) and c.condition in costs]
        for plan in plans[:1]:
            for dual in duals:
                p, d = costs[plan.condition], costs[dual.condition]
                rows.append(
                    (
                        text_cell(block.dataset),
                        text_cell(block.model),
                        text_cell(dual.method),
                        text_cell(plan.method),
                        _percent_cell(_change(d.tokens, p.tokens)),
                        _percent_cell(_change(d.latency_s, p.latency_s)),
                    )
                )
    note = "(dual-loop − plan-conditioned) / plan-conditioned, on mean agent tokens and cumulative agent latency."
    return Table("cost_relative", "Cost of dual-loop relative to plan-conditioned", columns, tuple(rows), note=note)


def verifier_settings(records: Iterable[PrefixRecord]) -> dict[Condition, tuple[str, str]]:
    """(verifier model, K_val) per condition, as text; conditions without either key are absent."""
    found: dict[Condition, set[tuple[str, str]]] = defaultdict(set)
    for r in records:
        setting = verifier_setting(r)
        if setting is not None:
            found[r.condition].add(setting)
    return {cond: sorted(values)[0] if len(values) == 1 else ("mixed", "mixed") for cond, values in found.items()}


#: The paired differences the verifier-sensitivity table shows: (statistic, heading).
VERIFIER_STATISTICS = (("TER", "ΔTER"), ("AUC_PEC", "ΔAUC-PEC"))


def verifier_sensitivity(
    summary: Summary,
    settings: Mapping[Condition, tuple[str, str]],
    costs: Mapping[Condition, ConditionCost],
) -> Table | None:
    """Each verifier variant against its block's plan-conditioned run: paired ΔTER and ΔAUC-PEC with CIs,
    and the extra mean tokens and seconds. ``None`` unless the grid varies the verifier setting."""
    if len(set(settings.values())) < 2:
        return None
    columns, csv_cols = difference_columns(
        ("dataset", "model", "variant", "verifier model", "K_val", "baseline"),
        ("dataset", "model", "variant", "verifier_model", "K_val", "baseline"),
        VERIFIER_STATISTICS,
        ("+tokens", "+seconds"),
    )
    rows: list[tuple[Cell, ...]] = []
    for block in blocks_of(summary):
        bases = [c for c in block.rows if is_plan_conditioned(c.method) and c.condition not in settings]
        if not bases:
            continue
        base = bases[0].condition
        for c in block.rows:
            if c.condition not in settings:
                continue
            model, k_val = settings[c.condition]
            extra = cost_difference(costs, c.condition, base)
            rows.append(
                (
                    text_cell(block.dataset),
                    text_cell(block.model),
                    text_cell(c.method),
                    text_cell(model),
                    text_cell(k_val),
                    text_cell(base[2]),
                    *(
                        estimate_cell(summary.difference(c.condition, base, s), digits=3)
                        for s, _ in VERIFIER_STATISTICS
                    ),
                    number_cell(extra[0], digits=0),
                    number_cell(extra[1], digits=1),
                )
            )
    note = "Paired differences variant − plan-conditioned on shared task draws; cost differences are of means."
    return Table("verifier_sensitivity", "Verifier sensitivity", columns, tuple(rows), note=note, csv_columns=csv_cols)


def cost_difference(
    costs: Mapping[Condition, ConditionCost], a: Condition, b: Condition
) -> tuple[float | None, float | None]:
    """Mean tokens and seconds per rollout of ``a`` minus those of ``b``; ``(None, None)`` unless both have
    telemetry."""
    if a not in costs or b not in costs:
        return (None, None)
    return (costs[a].tokens - costs[b].tokens, costs[a].latency_s - costs[b].latency_s)


def cost_tables(summary: Summary, records: Sequence[PrefixRecord], anchors: Anchors) -> list[Table]:
    """The cost tables that apply: none when no record carries agent telemetry."""
    costs = condition_costs(records)
    tables: list[Table] = []
    if costs:
        tables.append(cost_table(summary, costs, anchors))
        relative = relative_cost(summary, costs)
        if relative.rows:
            tables.append(relative)
    sensitivity = verifier_sensitivity(summary, verifier_settings(records), costs)
    if sensitivity is not None and sensitivity.rows:
        tables.append(sensitivity)
    return tables
