"""The per-condition metric tables of a report: Table 2, PEC@k checkpoints (Table G.1), first-failure label
counts and the decomposition of final success.

Bold marks the block maximum per column at the displayed precision, ties included; bold is not
significance. RR-Eligible is a count, not a score, and is never bold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from prefix_exec.analysis.stats import Estimate
from prefix_exec.analysis.summary import ConditionSummary, Summary
from prefix_exec.records import infrastructure
from prefix_exec.report.cells import (
    Cell,
    Table,
    absent_cell,
    block_maxima,
    estimate_cell,
    estimate_headers,
    number_cell,
    plain_headers,
    recorded_cell,
    text_cell,
)
from prefix_exec.report.layout import Anchors, Block, blocks_of, tagged_rows
from prefix_exec.trajectory import FailureLabel

#: Default PEC@k checkpoints: our choice of early depths (the paper's Table G.1 is in an appendix we lack).
DEFAULT_CHECKPOINTS = (1, 2, 3, 4, 5, 10)
LABELS = tuple(label.value for label in FailureLabel)
#: The column of the rollouts an infrastructure failure ended, apart from the five labels.
INFRASTRUCTURE = infrastructure.LABEL


def _ident(c: ConditionSummary) -> list[Cell]:
    return [text_cell(c.dataset), text_cell(c.model), text_cell(c.method)]


TABLE2_COLUMNS = ("N", "TER", "mean FED", "AUC-PEC", "RR-Eligible", "RR", "success")
TABLE2_CSV = (
    ("N",),
    estimate_headers("TER"),
    estimate_headers("mean_FED"),
    estimate_headers("AUC_PEC"),
    ("RR_eligible",),
    estimate_headers("RR"),
    estimate_headers("success"),
)
#: Columns of :data:`TABLE2_COLUMNS` (0-based) where block maxima are bolded.
TABLE2_BOLD = (1, 2, 3, 5, 6)
TABLE2_NOTE = (
    "RR: Wilson interval on RR-Eligible, undefined when nothing failed. Bold: block maximum per column at "
    "the shown precision, ties included (not significance). N counts agents' rollouts: one an infrastructure "
    "failure ended (an inference crash, a model server error, a dead MCP server, tau2's infrastructure_error) "
    "is left out and counted on stderr and in summary.json, unless --keep-infrastructure-failures counts it "
    "under the label 'infrastructure' (never one of the five)."
)
#: Added to the notes of the tables that use Y when some record's Y is not recorded (:func:`absent_note`).
ABSENT_NOTE = (
    "Final success Y is not recorded for some records (success null: traces scored without --success-field): "
    "success, RR and the decomposition are over the records whose Y is recorded (the cell says for how many it is "
    "not), n/a where none is, never 0; N, TER, mean FED, AUC-PEC and PEC use every record."
)


def absent_note(summary: Summary) -> str:
    """:data:`ABSENT_NOTE` with a leading space when a condition of ``summary`` has a record without Y, else ``""``
    (so that tables over records that all carry Y read as before)."""
    return f" {ABSENT_NOTE}" if any(c.success_known < c.N for c in summary.conditions) else ""


def table2_cells(block: Block, anchors: Anchors | None = None) -> list[tuple[Cell, ...]]:
    """Per row of ``block``: the :data:`TABLE2_COLUMNS` cells, block maxima bold, linked with ``anchors``.

    A block of one condition has nothing to compare, so nothing in it is bold."""
    cs = block.rows
    names = ("TER", "mean_FED", "AUC_PEC", "RR", "success")
    if len(cs) > 1:
        bold = {name: block_maxima([_stat(c, name) for c in cs]) for name in names}
    else:
        bold = {name: [False] for name in names}
    out: list[tuple[Cell, ...]] = []
    for i, c in enumerate(cs):
        link = anchors.condition(c.condition) if anchors else None
        out.append(
            (
                number_cell(c.N, link=link),
                estimate_cell(c.TER, bold=bold["TER"][i], link=link),
                estimate_cell(c.mean_FED, bold=bold["mean_FED"][i], link=link),
                estimate_cell(c.AUC_PEC, bold=bold["AUC_PEC"][i], link=link),
                number_cell(c.RR_eligible, link=link),
                recorded_cell(c.RR, c.RR_known, c.RR_eligible, bold=bold["RR"][i], link=link),
                recorded_cell(c.success, c.success_known, c.N, bold=bold["success"][i], link=link),
            )
        )
    return out


def intervals_note(summary: Summary) -> str:
    return f"95% task-level percentile bootstrap ({summary.resamples} resamples, seed {summary.seed})"


def table2(summary: Summary, anchors: Anchors | None = None, *, note: str | None = None) -> Table:
    """One block per dataset x model, one row per method; with ``anchors`` every cell links to the
    condition's rollouts; ``note`` (what was done with infrastructure failures) ends the table's note.
    ``prefix-exec metrics`` prints this table too (without links)."""
    columns = ("dataset", "model", "method", *TABLE2_COLUMNS)
    csv_cols = (*plain_headers("dataset", "model", "method"), *TABLE2_CSV)
    rows, tags = tagged_rows(
        blocks_of(summary),
        lambda block: ((*_ident(c), *cells) for c, cells in zip(block.rows, table2_cells(block, anchors), strict=True)),
    )
    return Table(
        "table2",
        "Table 2: prefix-level metrics and final success",
        columns,
        rows,
        tags,
        f"{intervals_note(summary)}; {TABLE2_NOTE}" + (f" Here: {note}" if note else "") + absent_note(summary),
        csv_cols,
        bold_columns=tuple(3 + i for i in TABLE2_BOLD),
    )


DOMAINS_NOTE = (
    "An extra view: the rows of a pooled dataset (tau3 = airline + retail) split by domain, each domain "
    "bootstrapped on its own tasks. The pooled rows of Table 2 are the numbers the paper reports."
)


def table2_domains(view: Summary) -> Table:
    """Table 2 for the per-domain view of pooled datasets (:attr:`Summary.domains`, rows ``tau3-airline``,
    ``tau3-retail``), without links: its conditions have no rollout anchors of their own."""
    table = table2(view)
    return replace(
        table,
        name="table2_domains",
        title="Table 2 per domain (extra view of pooled datasets)",
        note=f"{DOMAINS_NOTE} {table.note}",
    )


def _stat(c: ConditionSummary, name: str) -> float | None:
    value: Estimate | None = getattr(c, name)  # RR undefined, or success or RR not recorded: None, never bold
    return value.point if value is not None else None


def checkpoints(summary: Summary, anchors: Anchors, ks: Sequence[int] = DEFAULT_CHECKPOINTS) -> Table:
    """PEC@k with its bootstrap interval where one was computed (k <= ci depth), else the point alone.

    Beyond the dataset's longest rollout no rollout reaches k, so the fixed-cohort PEC(k) is exactly 0 in
    the sample and in every resample: ``0.00 [0.00, 0.00]``, not ``n/a`` (as in the paper's Table G.1)."""
    columns = ("dataset", "model", "method", *(f"PEC@{k}" for k in ks))
    csv_cols = (*plain_headers("dataset", "model", "method"), *(estimate_headers(f"PEC@{k}") for k in ks))

    def row(c: ConditionSummary) -> tuple[Cell, ...]:
        link = anchors.condition(c.condition)
        cells = []
        for k in ks:
            if k > len(c.PEC):
                cells.append(Cell("0.00 [0.00, 0.00]", 0.0, link=link, csv=("0.0", "0.0", "0.0")))
            elif k <= len(c.PEC_CI):
                cells.append(estimate_cell(c.PEC_CI[k - 1], link=link))
            else:
                cells.append(
                    Cell(f"{c.PEC[k - 1]:.2f}", c.PEC[k - 1], link=link, csv=(repr(round(c.PEC[k - 1], 6)), "", ""))
                )
        return (*_ident(c), *cells)

    rows, tags = tagged_rows(blocks_of(summary), lambda block: map(row, block.rows))
    note = (
        "Fixed-cohort PEC(k) = #{FED > k} / N (no censoring correction), with 95% bootstrap intervals; 0 where "
        "no rollout reaches k."
    )
    return Table("pec_checkpoints", "Table G.1: PEC@k checkpoints", columns, rows, tags, note, csv_cols)


def reach(summary: Summary, ks: Sequence[int] = DEFAULT_CHECKPOINTS) -> Table:
    """n_k = #{T ≥ k} at the checkpoint depths, with N and PEC_elig(k): how many rollouts each PEC@k and
    PEC_elig(k) rests on (a PEC@k of 0.00 on n_k = 0 means that nobody reached k, not that all failed)."""
    columns = ("dataset", "model", "method", "N", *(f"n_{k}" for k in ks), *(f"PEC_elig@{k}" for k in ks))
    csv_cols = (*plain_headers("dataset", "model", "method", "N"), *((f"n_{k}",) for k in ks))
    csv_cols += tuple((f"PEC_elig@{k}",) for k in ks)

    def row(c: ConditionSummary) -> tuple[Cell, ...]:
        counts = [c.n_k[k - 1] if k <= len(c.n_k) else 0 for k in ks]
        elig = [c.PEC_elig[k - 1] if k <= len(c.PEC_elig) else None for k in ks]
        return (
            *_ident(c),
            Cell(str(c.N), float(c.N)),
            *(Cell(str(n), float(n)) for n in counts),
            *(
                Cell("undefined", None, csv=("",)) if e is None else Cell(f"{e:.2f}", e, csv=(repr(round(e, 6)),))
                for e in elig
            ),
        )

    rows, tags = tagged_rows(blocks_of(summary), lambda block: map(row, block.rows))
    note = (
        "n_k = #{T ≥ k}: the rollouts that reach depth k. PEC_elig(k) = #{T ≥ k, FED > k} / n_k, undefined where "
        "n_k = 0. The full curves (PEC, PEC_elig, n_k) are in metrics --format json and a report's summary.json."
    )
    return Table("reach", "Reach: n_k and PEC_elig at the checkpoints", columns, rows, tags, note, csv_cols)


def label_counts(summary: Summary, anchors: Anchors) -> Table:
    """Per condition: how many first failures got each label, the fully executable count and N.

    Each non-zero count links to exactly the rollouts it counts. Rollouts an infrastructure failure ended, kept
    with ``--keep-infrastructure-failures``, get their own column (:data:`INFRASTRUCTURE`), apart from the five
    labels; it is there only when some were kept."""
    shown = (*LABELS, INFRASTRUCTURE) if any(INFRASTRUCTURE in c.labels for c in summary.conditions) else LABELS
    columns = ("dataset", "model", "method", *shown, "executable", "N")

    def row(c: ConditionSummary) -> tuple[Cell, ...]:
        cond = c.condition
        counts = [
            number_cell(n, link=anchors.label(cond, label) if n else None)
            for label in shown
            for n in [c.labels.get(label, 0)]
        ]
        executable = c.N - sum(c.labels.values())
        return (
            *_ident(c),
            *counts,
            number_cell(executable, link=anchors.label(cond, None) if executable else None),
            number_cell(c.N, link=anchors.condition(cond)),
        )

    rows, tags = tagged_rows(blocks_of(summary), lambda block: map(row, block.rows))
    note = (
        "One label per first failure, by the order schema < dependency < precondition < state_consistency "
        "< information."
    )
    if INFRASTRUCTURE in shown:
        note += (
            f" {INFRASTRUCTURE}: rollouts an infrastructure failure ended (the system's, not the agent's), kept with "
            "--keep-infrastructure-failures; not a first failure of the agent, and not in the executable column."
        )
    return Table("labels", "First-failure label counts", columns, rows, tags, note)


def decomposition(summary: Summary, anchors: Anchors) -> Table:
    """q = TER, s = Pr(Y=1 | executable), r = RR, and q·s + (1−q)·r next to the observed final success, and
    the share of the successes that came after an invalid prefix, (1−q)·r / Pr(Y=1), with its counts (the
    paper's worked example: 138/148 = 93.2%; undefined when nothing succeeded)."""
    columns = (
        "dataset",
        "model",
        "method",
        "q (TER)",
        "s",
        "r (RR)",
        "q·s + (1−q)·r",
        "success",
        "successes after an invalid prefix",
    )

    def row(c: ConditionSummary) -> tuple[Cell, ...]:
        d = c.decomposition
        link = anchors.condition(c.condition)
        if d is None:  # no record of the condition has Y
            return (*_ident(c), *(absent_cell(link) for _ in range(5)), _recovered_share(c, link))
        return (
            *_ident(c),
            number_cell(d.q, link=link),
            number_cell(d.s, link=link),
            number_cell(d.r, link=link),
            number_cell(d.recombined(), link=link),
            number_cell(d.success, link=link),
            _recovered_share(c, link),
        )

    rows, tags = tagged_rows(blocks_of(summary), lambda block: map(row, block.rows))
    note = (
        "Pr(Y=1) = q·s + (1−q)·r (eq. 12); s is undefined when nothing is executable, r when nothing failed. "
        "The last column is the share of successful rollouts whose success came after an invalid prefix."
    )
    if absent := absent_note(summary):
        note += absent + " Here q is the TER of those records."
    return Table("decomposition", "Decomposition of final success", columns, rows, tags, note)


def _recovered_share(c: ConditionSummary, link: str | None) -> Cell:
    """Successes with FED <= T over all successes, as ``93.2% (138/148)``; ``n/a`` without any success or any
    recorded Y."""
    if c.success is None:
        return Cell("n/a (Y not recorded)", None, csv=("",))
    successes = round(c.success.point * c.success_known)  # a mean of zeros and ones: exact after rounding
    recovered = c.RR_successes
    if successes == 0:
        return Cell("n/a (no success)", None, csv=("",))
    share = recovered / successes
    return Cell(f"{100 * share:.1f}% ({recovered}/{successes})", share, link=link, csv=(repr(round(share, 6)),))
