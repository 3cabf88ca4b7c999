"""The leaderboard view: every condition of a dataset that holds several models, side by side.

For each such dataset (:func:`~prefix_exec.report.layout.leaderboard_blocks`):

- Table 2's columns for every (model, method), best final success first, block maxima bold over the whole
  dataset, with the outcome rank (final success) against the prefix ranks (AUC-PEC, TER);
- paired differences of every condition against a reference (``--reference``: a model, method or
  ``model/method``; default the best by final success among the conditions that ran at least half as many
  tasks as the widest one, so that a one-task run does not become everyone's reference; ties broken by
  AUC-PEC), over the tasks each pair has in common, on the dataset's shared draws.

The per-model method blocks of Table 2 stay as they are for the paper grid.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prefix_exec.analysis.selection import Condition, select
from prefix_exec.analysis.summary import Summary
from prefix_exec.errors import InputError
from prefix_exec.report.cells import Cell, Table, plain_headers, text_cell
from prefix_exec.report.layout import Anchors, Block, leaderboard_blocks, tagged_rows
from prefix_exec.report.metric_tables import (
    TABLE2_BOLD,
    TABLE2_COLUMNS,
    TABLE2_CSV,
    TABLE2_NOTE,
    absent_note,
    intervals_note,
    table2_cells,
)
from prefix_exec.report.paired import comparison_table, comparisons
from prefix_exec.report.ranking import rank_cells


def leaderboard(summary: Summary, anchors: Anchors | None = None, blocks: Sequence[Block] | None = None) -> Table:
    """One row per condition of each multi-model dataset (see the module docstring)."""
    blocks = leaderboard_blocks(summary) if blocks is None else blocks
    columns = (
        "dataset",
        "model",
        "method",
        *TABLE2_COLUMNS,
        "outcome rank",
        "prefix rank (AUC-PEC)",
        "TER rank",
        "rank shift",
    )
    csv_cols = (
        *plain_headers("dataset", "model", "method"),
        *TABLE2_CSV,
        *plain_headers("outcome_rank", "prefix_rank_AUC_PEC", "TER_rank", "rank_shift"),
    )

    def rows_of(block: Block) -> Iterator[tuple[Cell, ...]]:
        for c, cells, ranks in zip(block.rows, table2_cells(block, anchors), rank_cells(block, anchors), strict=True):
            yield (text_cell(c.dataset), text_cell(c.model), text_cell(c.method), *cells, *ranks)

    rows, tags = tagged_rows(blocks, rows_of)
    note = (
        f"Every condition of a dataset that holds several models, best final success first. "
        f"{intervals_note(summary)}; {TABLE2_NOTE} Ranks at the shown precision; rank shift = outcome rank − "
        f"prefix rank.{absent_note(summary)}"
    )
    return Table(
        "leaderboard",
        "Leaderboard: every model and method of a dataset",
        columns,
        rows,
        tags,
        note,
        csv_cols,
        bold_columns=tuple(3 + i for i in TABLE2_BOLD),
    )


def reference_of(block: Block, reference: str | None) -> Condition:
    """The block's reference: the one condition ``reference`` names, or by default (``None``, or a name that
    matches nothing in this dataset) the best by success among the conditions with at least half the
    largest task count (rows are best first). Naming several is an :class:`InputError`."""
    found = [] if reference is None else select([c.condition for c in block.rows], reference)
    if not found:
        widest = max(c.n_tasks for c in block.rows)
        return next(c.condition for c in block.rows if 2 * c.n_tasks >= widest)
    if len(found) > 1:
        raise InputError(
            f"--reference {reference}: ambiguous in dataset {block.dataset!r}: it names "
            + ", ".join(f"{c[1]}/{c[2]}" for c in found),
            hint="name one condition as model/method",
        )
    return found[0]


def check_reference(summary: Summary, reference: str | None) -> None:
    """Resolve ``reference`` in every leaderboard block now, so a bad name fails before anything is written:
    it must name exactly one condition in at least one multi-model dataset, and never several."""
    if reference is None:
        return
    blocks = leaderboard_blocks(summary)
    if not blocks:
        raise InputError(
            f"--reference {reference}: no dataset holds two or more models, so there is no "
            "leaderboard to compare against",
            hint="drop --reference",
        )
    names = [c.condition for b in blocks for c in b.rows]
    if not select(names, reference):
        listing = ", ".join(sorted({f"{c[1]}/{c[2]}" for c in names}))
        raise InputError(
            f"--reference {reference}: no condition of a multi-model dataset has that name",
            hint=f"name a model, a method or model/method of: {listing}",
        )
    for block in blocks:
        reference_of(block, reference)


def against_reference(summary: Summary, anchors: Anchors | None = None, reference: str | None = None) -> Table:
    """Each condition minus its dataset's reference, per leaderboard block."""
    pairs: list[tuple[Condition, Condition]] = []
    for block in leaderboard_blocks(summary):
        ref = reference_of(block, reference)
        pairs += [(c.condition, ref) for c in block.rows if c.condition != ref]
    note = (
        "Each condition (A) minus the reference (B: "
        + (f"{reference}" if reference else "the best by final success")
        + ") over the tasks both ran, on the dataset's shared bootstrap draws."
    )
    return comparison_table(
        comparisons(summary, pairs),
        anchors,
        name="leaderboard_paired",
        title="Leaderboard: paired differences against the reference",
        note=note,
    )
