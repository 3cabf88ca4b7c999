"""The plans table of a report: where each planning method's plans went before the executor, per condition and
task (:mod:`prefix_exec.analysis.plan_funnel`, read from the records' ``metadata``).

A dual-loop run whose every plan fails the structure check never asks its verifier: Table 2 shows only its
executor's rollouts, so without this table the cause is in the rollouts' metadata alone. Rows are summed over a
task's trials; a condition of two or more tasks ends with an ``all`` row. Methods that plan nothing (react) have
no row, and a report whose records planned nothing has no table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

from prefix_exec.analysis.plan_funnel import PlanFunnel, funnel_of
from prefix_exec.analysis.selection import Condition
from prefix_exec.analysis.summary import Summary
from prefix_exec.report.cells import Cell, Table, number_cell, plain_headers, text_cell
from prefix_exec.report.layout import Anchors, Block, blocks_of, tagged_rows
from prefix_exec.report.rollouts import natural
from prefix_exec.trajectory import PrefixRecord

COLUMNS = (
    "dataset",
    "model",
    "method",
    "task",
    "turns",
    "plans",
    "refused: structure",
    "refused: verifier",
    "no verdict",
    "revisions",
    "accepted",
    "before the executor",
)
CSV = plain_headers(
    "dataset",
    "model",
    "method",
    "task",
    "turns",
    "plans",
    "structure_refused",
    "verifier_refused",
    "no_verdict",
    "revisions",
    "accepted",
    "outcome",
)
NOTE = (
    "Per planning method and task, summed over trials (from the records' metadata): turns planned; plans proposed; "
    "plans refused by the structure check (no plan the executor can follow: the verifier never sees them); plans "
    "the verifier rejected; verifier answers that were no verdict (asked again); revisions (proposals after a "
    "turn's first); turns whose last plan the verifier accepted. Where every plan was refused by the structure "
    "check, the verifier never ran. Methods without a verifier (plan-conditioned) pass their plans on unchecked."
)


def funnels(records: Iterable[PrefixRecord]) -> dict[Condition, dict[str, PlanFunnel]]:
    """The plan funnel of each condition's tasks (summed over trials); conditions that planned nothing are absent."""
    found: dict[Condition, dict[str, PlanFunnel]] = defaultdict(dict)
    for record in records:
        funnel = funnel_of(record.metadata)
        if funnel is not None:
            tasks = found[record.condition]
            tasks[record.task_id] = tasks.get(record.task_id, PlanFunnel()) + funnel
    return dict(found)


def plans_table(summary: Summary, records: Iterable[PrefixRecord], anchors: Anchors) -> Table | None:
    """The plans table (module docstring) in Table 2's block and method order, or ``None`` when no record planned.
    The ``all`` row of a condition links to its rollouts."""
    found = funnels(records)
    if not found:
        return None

    def rows_of(block: Block) -> Iterator[tuple[Cell, ...]]:
        for c in block.rows:
            tasks = found.get(c.condition)
            if not tasks:
                continue
            ident = (text_cell(c.dataset), text_cell(c.model), text_cell(c.method))
            for task in sorted(tasks, key=natural):
                yield (*ident, text_cell(task), *_cells(tasks[task]))
            if len(tasks) > 1:
                total = sum(tasks.values(), PlanFunnel())
                yield (*ident, text_cell("all", anchors.condition(c.condition)), *_cells(total))

    rows, tags = tagged_rows(blocks_of(summary), rows_of)
    return Table("plans", "Plans before the executor", COLUMNS, rows, tags, NOTE, CSV)


def _cells(funnel: PlanFunnel) -> tuple[Cell, ...]:
    counts = (
        funnel.turns,
        funnel.proposed,
        funnel.structure,
        funnel.verifier,
        funnel.unreadable,
        funnel.revised,
        funnel.accepted,
    )
    return (*(number_cell(n) for n in counts), text_cell(funnel.headline()))
