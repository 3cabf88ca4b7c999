"""Paired differences as a table: A − B of any two conditions of a dataset, over their common tasks.

One renderer serves ``prefix-exec metrics --compare`` and the report (its per-block pairs and the
leaderboard's differences against a reference); the numbers come from
:meth:`prefix_exec.analysis.summary.Summary.compare_conditions`.

The sensitivity table (the paper's Table F.3, :func:`sensitivity_rows`, :func:`sensitivity_table`) is one
set of such pairs, chosen by method: in every (dataset, model) block holding the ``dual-loop-accept-all``
control, dual-loop − control, control − plan-conditioned and dual-loop − plan-conditioned, on TER, AUC-PEC,
PEC@4 and final success, with the difference of mean agent tokens and seconds per rollout
(:mod:`~prefix_exec.report.cost`). ``prefix-exec metrics`` and ``prefix-exec report`` show it whenever such a
block exists.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from prefix_exec.analysis.selection import Condition, label, pair_conditions, split_pair
from prefix_exec.analysis.stats import Estimate
from prefix_exec.analysis.summary import PairedComparison, Summary
from prefix_exec.json_types import JsonObject
from prefix_exec.methods import Method, method_of
from prefix_exec.report.cells import Cell, Table, difference_columns, estimate_cell, number_cell, text_cell
from prefix_exec.report.cost import ConditionCost, cost_difference
from prefix_exec.report.layout import Anchors, Block, blocks_of, is_dual_loop, is_plan_conditioned

#: Statistics of the paired-differences table, in column order, with their column headings.
PAIRED_STATISTICS = (("TER", "ΔTER"), ("mean_FED", "Δmean FED"), ("AUC_PEC", "ΔAUC-PEC"), ("success", "Δsuccess"))
NOTE = (
    "A − B over the tasks both ran, on the same bootstrap task draws (paired); an interval that excludes 0 "
    "separates the two."
)


def default_pairs(block: Block) -> list[tuple[Condition, Condition]]:
    """Every later method against every earlier one, in method order (A − B with A later)."""
    cs = [c.condition for c in block.rows]
    return [(cs[j], cs[i]) for i in range(len(cs)) for j in range(i + 1, len(cs))]


def resolve_pairs(summary: Summary, texts: Sequence[str], *, option: str) -> list[tuple[Condition, Condition]]:
    """Condition pairs named by ``A:B`` texts (see :mod:`prefix_exec.analysis.selection`); unknown or ambiguous names
    are an :class:`~prefix_exec.errors.InputError` that lists the candidates."""
    conditions = [c.condition for c in summary.conditions]
    pairs: list[tuple[Condition, Condition]] = []
    for text in texts:
        a, b = split_pair(text, conditions, option=option)
        pairs += [p for p in pair_conditions(conditions, a, b, option=option) if p not in pairs]
    return pairs


def comparisons(summary: Summary, pairs: Sequence[tuple[Condition, Condition]]) -> list[PairedComparison]:
    names = tuple(s for s, _ in PAIRED_STATISTICS)
    return [summary.compare_conditions(a, b, names) for a, b in pairs]


def comparison_table(
    found: Sequence[PairedComparison],
    anchors: Anchors | None = None,
    *,
    name: str = "paired",
    title: str = "Paired differences",
    note: str = NOTE,
) -> Table:
    """One row per comparison: dataset, A and B as ``model/method``, the common task count, and each
    difference with its CI. With ``anchors`` the A and B cells link to the two conditions' rollouts."""
    columns, csv_cols = difference_columns(
        ("dataset", "A", "B", "common tasks"), ("dataset", "A", "B", "common_tasks"), PAIRED_STATISTICS
    )
    rows: list[tuple[Cell, ...]] = []
    tags: list[str] = []
    for p in found:
        cells = [_difference_cell(p, s, 2) for s, _ in PAIRED_STATISTICS]
        rows.append(
            (
                text_cell(p.dataset),
                text_cell(label(p.a), anchors.condition(p.a) if anchors else None),
                text_cell(label(p.b), anchors.condition(p.b) if anchors else None),
                number_cell(p.common_tasks),
                *cells,
            )
        )
        tags.append(p.dataset if p.a[1] != p.b[1] else f"{p.dataset} / {p.a[1]}")
    return Table(name, title, columns, tuple(rows), tuple(tags), note, csv_cols)


def _difference_cell(p: PairedComparison, statistic: str, digits: int) -> Cell:
    """One difference with its CI; ``undefined`` without a common task, ``n/a`` where a side records no Y."""
    if not p.common_tasks:
        return Cell("undefined", None, csv=("", "", ""))
    if statistic in p.unrecorded:
        return Cell("n/a (Y not recorded)", None, csv=("", "", ""))
    return estimate_cell(p.differences[statistic], digits=digits)


def paired_differences(
    summary: Summary, pairs: Sequence[tuple[Condition, Condition]] | None = None, anchors: Anchors | None = None
) -> Table:
    """The report's paired table: ``pairs`` (condition pairs), or by default :func:`default_pairs` of every
    (dataset, model) block."""
    chosen = [p for block in blocks_of(summary) for p in default_pairs(block)] if pairs is None else list(pairs)
    note = NOTE
    if not chosen:
        note = (
            "No (dataset, model) block holds two methods, so there is no pair by default: name pairs with "
            "--pair A:B (a model, a method or model/method on each side); a dataset with several models has "
            "its differences against a reference in the leaderboard section."
        )
    return comparison_table(comparisons(summary, chosen), anchors, note=note)


# ------------------------------------------------------------------------------------ the F.3 table

#: Depth of the sensitivity table's PEC@k column: the early depth the paper's section 3.2 discusses (PEC@4);
#: the choice of one column is ours (the paper's Table F.3 is not available).
SENSITIVITY_PEC_DEPTH = 4
#: Statistics of the sensitivity table, in column order, with their column headings.
SENSITIVITY_STATISTICS = (
    ("TER", "ΔTER"),
    ("AUC_PEC", "ΔAUC-PEC"),
    (f"PEC@{SENSITIVITY_PEC_DEPTH}", f"ΔPEC@{SENSITIVITY_PEC_DEPTH}"),
    ("success", "ΔY"),
)
SENSITIVITY_NOTE = (
    "The sensitivity controls (the paper's Table F.3): per dataset × model, dual-loop − the accept-all control "
    "(the effect of verification and revision), the control − plan-conditioned (what the dual-loop wrapper "
    "changes without a verifier) and dual-loop − plan-conditioned, all starting from the same initial plans. "
    "Paired differences over the tasks both ran on the dataset's shared task draws (95% percentile CIs); "
    "Δtokens and Δseconds are differences of the mean agent tokens and the mean cumulative agent-call latency "
    "per rollout."
)


@dataclass(frozen=True)
class SensitivityRow:
    """One paired comparison of the sensitivity table and the cost difference a − b of means per rollout
    (``None`` when a side has no agent telemetry)."""

    comparison: PairedComparison
    tokens: float | None
    seconds: float | None

    def as_dict(self) -> JsonObject:
        return {**self.comparison.as_dict(), "d_tokens": self.tokens, "d_seconds": self.seconds}


def sensitivity_pairs(summary: Summary) -> list[tuple[Condition, Condition]]:
    """The F.3 pairs of every (dataset, model) block that holds the accept-all control and another of its
    conditions: each dual-loop − control, control − plan-conditioned, each dual-loop − plan-conditioned (a
    block's first control and first plan-conditioned run; dual-loop runs of several verifier settings each get
    their rows). Empty when no block holds the control."""
    pairs: list[tuple[Condition, Condition]] = []
    for block in blocks_of(summary):
        controls = [c.condition for c in block.rows if method_of(c.method) is Method.DUAL_LOOP_ACCEPT_ALL]
        if not controls:
            continue
        control = controls[0]
        duals = [c.condition for c in block.rows if is_dual_loop(c.method)]
        plans = [c.condition for c in block.rows if is_plan_conditioned(c.method)][:1]
        pairs += [(d, control) for d in duals]
        pairs += [(control, p) for p in plans]
        pairs += [(d, p) for p in plans for d in duals]
    return pairs


def sensitivity_rows(summary: Summary, costs: Mapping[Condition, ConditionCost]) -> list[SensitivityRow]:
    """The F.3 comparisons (:func:`sensitivity_pairs`) with their cost differences.

    ΔPEC@k is exactly 0 when no rollout of the dataset reaches k (PEC is 0 there for every condition), and
    undefined when PEC@k was not bootstrapped (``--ci-depth`` below k)."""
    names = [s for s, _ in SENSITIVITY_STATISTICS]
    rows = []
    for a, b in sensitivity_pairs(summary):
        found = summary.compare_conditions(a, b, [s for s in names if _bootstrapped(summary, a, b, s)])
        differences = {
            s: found.differences[s] if s in found.differences else _unbootstrapped(summary, a, s) for s in names
        }
        comparison = dataclasses.replace(found, differences=differences)
        rows.append(SensitivityRow(comparison, *cost_difference(costs, a, b)))
    return rows


def _bootstrapped(summary: Summary, a: Condition, b: Condition, statistic: str) -> bool:
    return statistic in summary.replicates[a] and statistic in summary.replicates[b]


def _unbootstrapped(summary: Summary, a: Condition, statistic: str) -> Estimate:
    """A PEC@k beyond the dataset's longest rollout is 0 on both sides (difference 0); else undefined."""
    depth = int(statistic.removeprefix("PEC@"))
    if depth > len(summary.get(*a).PEC):
        return Estimate(0.0, 0.0, 0.0)
    nan = float("nan")
    return Estimate(nan, nan, nan)


def sensitivity_table(rows: Sequence[SensitivityRow], anchors: Anchors | None = None) -> Table:
    """The F.3 table: one row per comparison, the paired differences with CIs (three decimals), Δtokens and
    Δseconds per rollout."""
    columns, csv_cols = difference_columns(
        ("dataset", "model", "A", "B", "common tasks"),
        ("dataset", "model", "A", "B", "common_tasks"),
        SENSITIVITY_STATISTICS,
        ("Δtokens / rollout", "Δseconds / rollout"),
    )
    cells: list[tuple[Cell, ...]] = []
    tags: list[str] = []
    for row in rows:
        p = row.comparison
        cells.append(
            (
                text_cell(p.dataset),
                text_cell(p.a[1]),
                text_cell(p.a[2], anchors.condition(p.a) if anchors else None),
                text_cell(p.b[2], anchors.condition(p.b) if anchors else None),
                number_cell(p.common_tasks),
                *(_difference_cell(p, s, 3) for s, _ in SENSITIVITY_STATISTICS),
                number_cell(row.tokens, digits=0),
                number_cell(row.seconds, digits=1),
            )
        )
        tags.append(f"{p.dataset} / {p.a[1]}")
    return Table(
        "sensitivity",
        "Sensitivity controls (Table F.3)",
        columns,
        tuple(cells),
        tuple(tags),
        SENSITIVITY_NOTE,
        csv_cols,
    )
