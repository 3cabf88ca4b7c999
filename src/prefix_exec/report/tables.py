"""The report's tables built from a :class:`~prefix_exec.summary.Summary`: Table 2, PEC@k checkpoints
(Table G.1), first-failure label counts, the decomposition, ranking divergence and paired differences.

Bold marks the block maximum per column at the displayed precision, ties included; bold is not
significance. RR-Eligible is a count, not a score, and is never bold.
"""

from __future__ import annotations

from collections.abc import Sequence

from prefix_exec.report.layout import Anchors, Block, blocks_of
from prefix_exec.report.table import (
    Cell,
    Table,
    block_maxima,
    estimate_cell,
    number_cell,
    text_cell,
)
from prefix_exec.summary import ConditionSummary, Summary
from prefix_exec.trajectory import FailureLabel

#: Statistics of the paired-differences table, in column order, with their column headings.
PAIRED_STATISTICS = (("TER", "ΔTER"), ("mean_FED", "Δmean FED"), ("AUC_PEC", "ΔAUC-PEC"), ("success", "Δsuccess"))
#: Default PEC@k checkpoints (Table G.1 reports early depths).
DEFAULT_CHECKPOINTS = (1, 2, 3, 4, 5, 10)
LABELS = tuple(label.value for label in FailureLabel)


def _ident(c: ConditionSummary) -> list[Cell]:
    return [text_cell(c.dataset), text_cell(c.model), text_cell(c.method)]


def table2(summary: Summary, anchors: Anchors) -> Table:
    """One block per dataset x model, one row per method; every cell links to the condition's rollouts."""
    columns = ("dataset", "model", "method", "N", "TER", "mean FED", "AUC-PEC", "RR-Eligible", "RR", "success")
    csv_cols = (("dataset",), ("model",), ("method",), ("N",), ("TER", "TER_low", "TER_high"),
                ("mean_FED", "mean_FED_low", "mean_FED_high"), ("AUC_PEC", "AUC_PEC_low", "AUC_PEC_high"),
                ("RR_eligible",), ("RR", "RR_low", "RR_high"), ("success", "success_low", "success_high"))
    rows: list[tuple[Cell, ...]] = []
    tags: list[str] = []
    for block in blocks_of(summary):
        cs = block.rows
        bold = {
            name: block_maxima([_stat(c, name) for c in cs])
            for name in ("TER", "mean_FED", "AUC_PEC", "RR", "success")
        }
        for i, c in enumerate(cs):
            link = anchors.condition(c.condition)
            rows.append((
                *_ident(c),
                number_cell(c.N, link=link),
                estimate_cell(c.TER, bold=bold["TER"][i], link=link),
                estimate_cell(c.mean_FED, bold=bold["mean_FED"][i], link=link),
                estimate_cell(c.AUC_PEC, bold=bold["AUC_PEC"][i], link=link),
                number_cell(c.RR_eligible, link=link),
                estimate_cell(c.RR, bold=bold["RR"][i], link=link),
                estimate_cell(c.success, bold=bold["success"][i], link=link),
            ))
            tags.append(block.label)
    note = (f"95% task-level percentile bootstrap ({summary.resamples} resamples, seed {summary.seed}); RR: Wilson "
            "interval on RR-Eligible, undefined when nothing failed. Bold: block maximum per column at the shown "
            "precision, ties included (not significance).")
    return Table("table2", "Table 2: prefix-level metrics and final success", columns, tuple(rows), tuple(tags),
                 note, csv_cols, bold_columns=(4, 5, 6, 8, 9))


def _stat(c: ConditionSummary, name: str) -> float | None:
    if name == "RR":
        return c.RR.point if c.RR else None
    value: float = getattr(c, name).point
    return value


def checkpoints(summary: Summary, anchors: Anchors, ks: Sequence[int] = DEFAULT_CHECKPOINTS) -> Table:
    """PEC@k with its bootstrap interval where one was computed (k <= ci depth), else the point alone;
    ``n/a`` beyond the dataset's longest rollout."""
    columns = ("dataset", "model", "method", *(f"PEC@{k}" for k in ks))
    csv_cols = (("dataset",), ("model",), ("method",), *((f"PEC@{k}", f"PEC@{k}_low", f"PEC@{k}_high") for k in ks))
    rows: list[tuple[Cell, ...]] = []
    tags: list[str] = []
    for block in blocks_of(summary):
        for c in block.rows:
            link = anchors.condition(c.condition)
            cells = []
            for k in ks:
                if k > len(c.PEC):
                    cells.append(Cell("n/a", None, csv=("", "", "")))
                elif k <= len(c.PEC_CI):
                    cells.append(estimate_cell(c.PEC_CI[k - 1], link=link))
                else:
                    cells.append(Cell(f"{c.PEC[k - 1]:.2f}", c.PEC[k - 1], link=link,
                                      csv=(repr(round(c.PEC[k - 1], 6)), "", "")))
            rows.append((*_ident(c), *cells))
            tags.append(block.label)
    note = "Fixed-cohort PEC(k) = #{FED > k} / N (no censoring correction), with 95% bootstrap intervals."
    return Table("pec_checkpoints", "Table G.1: PEC@k checkpoints", columns, tuple(rows), tuple(tags), note,
                 csv_cols)


def label_counts(summary: Summary, anchors: Anchors) -> Table:
    """Per condition: how many first failures got each label, the fully executable count and N.

    Each non-zero count links to exactly the rollouts it counts."""
    columns = ("dataset", "model", "method", *LABELS, "executable", "N")
    rows: list[tuple[Cell, ...]] = []
    tags: list[str] = []
    for block in blocks_of(summary):
        for c in block.rows:
            cond = c.condition
            counts = [number_cell(n, link=anchors.label(cond, label) if n else None)
                      for label in LABELS for n in [c.labels.get(label, 0)]]
            executable = c.N - sum(c.labels.values())
            rows.append((*_ident(c), *counts,
                         number_cell(executable, link=anchors.label(cond, None) if executable else None),
                         number_cell(c.N, link=anchors.condition(cond))))
            tags.append(block.label)
    note = ("One label per first failure, by the order schema < dependency < precondition < state_consistency "
            "< information.")
    return Table("labels", "First-failure label counts", columns, tuple(rows), tuple(tags), note)


def decomposition(summary: Summary, anchors: Anchors) -> Table:
    """q = TER, s = Pr(Y=1 | executable), r = RR, and q·s + (1−q)·r next to the observed final success."""
    columns = ("dataset", "model", "method", "q (TER)", "s", "r (RR)", "q·s + (1−q)·r", "success")
    rows: list[tuple[Cell, ...]] = []
    tags: list[str] = []
    for block in blocks_of(summary):
        for c in block.rows:
            d = c.decomposition
            link = anchors.condition(c.condition)
            rows.append((*_ident(c), number_cell(d.q, link=link), number_cell(d.s, link=link),
                         number_cell(d.r, link=link), number_cell(d.recombined(), link=link),
                         number_cell(d.success, link=link)))
            tags.append(block.label)
    note = "Pr(Y=1) = q·s + (1−q)·r (eq. 12); s is undefined when nothing is executable, r when nothing failed."
    return Table("decomposition", "Decomposition of final success", columns, tuple(rows), tuple(tags), note)


# ---------------------------------------------------------------------------------------------- ranking


def competition_ranks(values: Sequence[float | None], digits: int = 2) -> list[int | None]:
    """1 for the best; equal values (at the shown precision) share the better rank ("1, 1, 3")."""
    shown = [None if v is None else round(v, digits) for v in values]
    return [None if v is None else 1 + sum(1 for w in shown if w is not None and w > v) for v in shown]


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Kendall's tau-b between two score lists (ties handled); ``None`` when either list is constant."""
    concordant = discordant = ties_a = ties_b = 0
    n = len(a)
    for i in range(n):
        for j in range(i + 1, n):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = ((concordant + discordant + ties_a) * (concordant + discordant + ties_b)) ** 0.5
    return None if denominator == 0 else (concordant - discordant) / denominator


def _leaders(block: Block, ranks: Sequence[int | None]) -> str:
    return ", ".join(c.method for c, r in zip(block.rows, ranks, strict=True) if r == 1)


def ranking(summary: Summary, anchors: Anchors) -> Table:
    """Per method: outcome-only rank (final success) against prefix-level ranks (AUC-PEC and TER)."""
    columns = ("dataset", "model", "method", "success", "outcome rank", "AUC-PEC", "prefix rank (AUC-PEC)",
               "TER", "TER rank", "rank shift")
    rows: list[tuple[Cell, ...]] = []
    tags: list[str] = []
    for block in blocks_of(summary):
        cs = block.rows
        outcome = competition_ranks([c.success.point for c in cs])
        prefix = competition_ranks([c.AUC_PEC.point for c in cs])
        ter = competition_ranks([c.TER.point for c in cs])
        for i, c in enumerate(cs):
            link = anchors.condition(c.condition)
            shift = (outcome[i] or 0) - (prefix[i] or 0)
            rows.append((*_ident(c), number_cell(c.success.point, link=link), number_cell(outcome[i], link=link),
                         number_cell(c.AUC_PEC.point, link=link), number_cell(prefix[i], link=link),
                         number_cell(c.TER.point, link=link), number_cell(ter[i], link=link),
                         Cell(f"{shift:+d}", float(shift), bold=shift != 0, link=link, csv=(str(shift),))))
            tags.append(block.label)
    note = ("Ranks at the shown precision (ties share the better rank). rank shift = outcome rank − prefix rank: "
            "positive means the method looks worse by final success than by prefix reliability.")
    return Table("ranking", "Ranking divergence: final success against prefix executability", columns,
                 tuple(rows), tuple(tags), note)


def ranking_agreement(summary: Summary) -> Table:
    """Per block: who leads by final success, who leads by AUC-PEC and by TER, and Kendall's tau-b."""
    columns = ("dataset", "model", "leader by success", "leader by AUC-PEC", "leader by TER",
               "Kendall τ (success, AUC-PEC)", "diverges")
    rows: list[tuple[Cell, ...]] = []
    for block in blocks_of(summary):
        cs = block.rows
        outcome = competition_ranks([c.success.point for c in cs])
        prefix = competition_ranks([c.AUC_PEC.point for c in cs])
        ter = competition_ranks([c.TER.point for c in cs])
        tau = kendall_tau([round(c.success.point, 2) for c in cs], [round(c.AUC_PEC.point, 2) for c in cs])
        diverges = _leaders(block, outcome) != _leaders(block, prefix)
        rows.append((text_cell(block.dataset), text_cell(block.model), text_cell(_leaders(block, outcome)),
                     text_cell(_leaders(block, prefix)), text_cell(_leaders(block, ter)),
                     number_cell(tau), Cell("yes" if diverges else "no", None, bold=diverges, csv=(str(diverges),))))
    note = "A block diverges when the best method by final success is not the best by AUC-PEC."
    return Table("ranking_agreement", "Do outcome-only and prefix-level rankings agree?", columns, tuple(rows),
                 note=note)


# ---------------------------------------------------------------------------------------------- paired


def default_pairs(block: Block) -> list[tuple[str, str]]:
    """Every later method against every earlier one, in method order (A − B with A later)."""
    names = [c.method for c in block.rows]
    return [(names[j], names[i]) for i in range(len(names)) for j in range(i + 1, len(names))]


def paired_differences(
    summary: Summary, pairs: Sequence[tuple[str, str]] | None = None, anchors: Anchors | None = None
) -> Table:
    """Paired A − B differences with percentile CIs from the dataset's shared task draws.

    ``pairs`` are (A, B) method names; a pair is shown in every block that has both methods. ``None`` means
    :func:`default_pairs`. With ``anchors``, the A and B cells link to the two conditions' rollouts."""
    columns = ("dataset", "model", "A", "B", *(heading for _, heading in PAIRED_STATISTICS))
    csv_cols = (("dataset",), ("model",), ("A",), ("B",),
                *((f"d_{s}", f"d_{s}_low", f"d_{s}_high") for s, _ in PAIRED_STATISTICS))
    rows: list[tuple[Cell, ...]] = []
    tags: list[str] = []
    for block in blocks_of(summary):
        present = {c.method for c in block.rows}
        chosen = default_pairs(block) if pairs is None else [p for p in pairs if p[0] in present and p[1] in present]
        for a, b in chosen:
            ca, cb = (block.dataset, block.model, a), (block.dataset, block.model, b)
            cells = [estimate_cell(summary.paired(ca, cb, s)) for s, _ in PAIRED_STATISTICS]
            link_a = anchors.condition(ca) if anchors else None
            link_b = anchors.condition(cb) if anchors else None
            rows.append((text_cell(block.dataset), text_cell(block.model), text_cell(a, link_a),
                         text_cell(b, link_b), *cells))
            tags.append(block.label)
    note = "A − B on the same bootstrap task draws (paired); an interval that excludes 0 separates the two."
    return Table("paired", "Paired differences", columns, tuple(rows), tuple(tags), note, csv_cols)
