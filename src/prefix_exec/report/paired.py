"""Paired differences as a table: A − B of any two conditions of a dataset, over their common tasks.

One renderer serves ``prefix-exec metrics --compare`` and the report (its per-block pairs and the
leaderboard's differences against a reference); the numbers come from
:meth:`prefix_exec.summary.Summary.compare_conditions`.
"""

from __future__ import annotations

from collections.abc import Sequence

from prefix_exec.report.cells import Cell, Table, estimate_cell, number_cell, text_cell
from prefix_exec.report.layout import Anchors, Block, blocks_of
from prefix_exec.selection import label, pair_conditions, split_pair
from prefix_exec.summary import Condition, PairedComparison, Summary

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
    """Condition pairs named by ``A:B`` texts (see :mod:`prefix_exec.selection`); unknown or ambiguous names
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
    columns = ("dataset", "A", "B", "common tasks", *(heading for _, heading in PAIRED_STATISTICS))
    csv_cols = (
        ("dataset",),
        ("A",),
        ("B",),
        ("common_tasks",),
        *((f"d_{s}", f"d_{s}_low", f"d_{s}_high") for s, _ in PAIRED_STATISTICS),
    )
    rows: list[tuple[Cell, ...]] = []
    tags: list[str] = []
    for p in found:
        cells = [
            estimate_cell(p.differences[s]) if p.common_tasks else Cell("undefined", None, csv=("", "", ""))
            for s, _ in PAIRED_STATISTICS
        ]
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
