"""Ranking divergence: does ranking by final success agree with ranking by prefix executability?

Per block (a dataset x model block of methods, or a leaderboard of every condition of a dataset):

- ranks by final success (outcome-only), by AUC-PEC and by TER, at the shown precision (ties share the
  better rank);
- Kendall's tau-b between the success ranking and each prefix ranking, with a 95% percentile interval from
  the dataset's shared bootstrap draws: tau is recomputed on every resample's replicates (rounded like the
  points), so the interval says how much of the disagreement could come from which tasks were drawn;
- ``diverges``: ``yes`` when no condition tied for the lead by success is among those tied for the lead by
  AUC-PEC *and* the tau interval excludes 1 (the disagreement is not resampling noise); ``not resolved``
  when the leaders differ but the interval reaches 1; ``no`` when a success leader also leads by AUC-PEC.
- A block with one condition has nothing to rank, and the table says so; nor has a block where a condition
  records no final success (``n/a``: Y not recorded, :func:`~prefix_exec.report.layout.ranked_by_success`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prefix_exec.analysis.stats import Estimate, percentile_interval
from prefix_exec.analysis.summary import ConditionSummary, Summary
from prefix_exec.report.cells import (
    Cell,
    Table,
    absent_cell,
    estimate_cell,
    estimate_headers,
    number_cell,
    plain_headers,
    text_cell,
)
from prefix_exec.report.layout import Anchors, Block, blocks_of, ranked_by_success, tagged_rows

#: Precision at which ranks, ties and tau are taken (the tables print two decimals).
DIGITS = 2
ONE_CONDITION = "one condition: nothing to rank"
#: The verdict of a block where a condition records no final success.
NOT_RECORDED = "n/a: final success not recorded"


def competition_ranks(values: Sequence[float | None], digits: int = DIGITS) -> list[int | None]:
    """1 for the best; equal values (at the shown precision) share the better rank ("1, 1, 3")."""
    shown = [None if v is None else round(v, digits) for v in values]
    return [None if v is None else 1 + sum(1 for w in shown if w is not None and w > v) for v in shown]


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Kendall's tau-b between two score lists (ties handled); ``None`` when either list is constant."""
    tau = kendall_tau_many(np.asarray([a], dtype=np.float64), np.asarray([b], dtype=np.float64))[0]
    return None if math.isnan(tau) else float(tau)


def kendall_tau_many(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall's tau-b row by row: ``a`` and ``b`` of shape (rows, n) give (rows,) taus.

    tau-b = (concordant − discordant) / sqrt(pairs untied in a × pairs untied in b); NaN for a row where
    either side is constant or holds a NaN. O(rows · n²) in n vector steps.
    """
    rows, n = a.shape
    score = np.zeros(rows)
    untied_a = np.zeros(rows)
    untied_b = np.zeros(rows)
    with np.errstate(invalid="ignore"):
        for i in range(n - 1):
            da = np.sign(a[:, i : i + 1] - a[:, i + 1 :])
            db = np.sign(b[:, i : i + 1] - b[:, i + 1 :])
            score += (da * db).sum(axis=1)
            untied_a += (da != 0).sum(axis=1)
            untied_b += (db != 0).sum(axis=1)
        tau = score / np.sqrt(untied_a * untied_b)
    bad = np.isnan(a).any(axis=1) | np.isnan(b).any(axis=1) | (untied_a == 0) | (untied_b == 0)
    tau[bad] = np.nan
    return tau


@dataclass(frozen=True)
class Agreement:
    """One block's verdict: leaders (names, ties included), tau with intervals (``None`` with one condition
    or a constant ranking), and ``diverges`` as ``yes`` / ``no`` / ``not resolved`` / :data:`ONE_CONDITION`."""

    block: Block
    leaders_success: tuple[str, ...]
    leaders_auc: tuple[str, ...]
    leaders_ter: tuple[str, ...]
    tau_auc: Estimate | None
    tau_ter: Estimate | None
    diverges: str


def tau_estimate(summary: Summary, rows: Sequence[ConditionSummary], statistic: str) -> Estimate | None:
    """Kendall tau-b of success against ``statistic`` over ``rows``, with a percentile interval from the
    shared replicates (resamples where a condition drew none of its tasks are left out); ``None`` with one
    condition, or where a condition records no final success."""
    success_points = [c.success.point for c in rows if c.success is not None]
    if len(rows) < 2 or len(success_points) < len(rows):
        return None
    point = kendall_tau(
        [round(v, DIGITS) for v in success_points], [round(getattr(c, statistic).point, DIGITS) for c in rows]
    )
    if point is None:
        return None
    success = np.column_stack([summary.replicates[c.condition]["success"] for c in rows]).round(DIGITS)
    other = np.column_stack([summary.replicates[c.condition][statistic] for c in rows]).round(DIGITS)
    taus = kendall_tau_many(success, other)
    if np.isnan(taus).all():
        return Estimate(point, float("nan"), float("nan"))
    low, high = percentile_interval(taus[:, None], summary.level)
    return Estimate(point, float(low[0]), float(high[0]))


def agreement(summary: Summary, block: Block) -> Agreement:
    cs = block.rows

    def leaders(values: Sequence[float | None]) -> tuple[str, ...]:
        return tuple(block.name(c) for c, r in zip(cs, competition_ranks(values), strict=True) if r == 1)

    by_success = leaders([c.success.point if c.success is not None else None for c in cs])
    by_auc = leaders([c.AUC_PEC.point for c in cs])
    by_ter = leaders([c.TER.point for c in cs])
    tau_auc = tau_estimate(summary, cs, "AUC_PEC")
    tau_ter = tau_estimate(summary, cs, "TER")
    if len(cs) < 2:
        verdict = ONE_CONDITION
    elif not ranked_by_success(block):
        verdict = NOT_RECORDED
    elif set(by_success) & set(by_auc):
        verdict = "no"
    elif tau_auc is not None and tau_auc.high < 1:
        verdict = "yes"
    else:
        verdict = "not resolved"
    return Agreement(block, by_success, by_auc, by_ter, tau_auc, tau_ter, verdict)


def _tau_cell(e: Estimate | None, n: int, recorded: bool = True) -> Cell:
    if n < 2:
        return Cell("n/a (one condition)", None, csv=("", "", ""))
    if not recorded:
        return Cell("n/a (final success not recorded)", None, csv=("", "", ""))
    if e is None:
        return Cell("undefined (a ranking is constant)", None, csv=("", "", ""))
    return estimate_cell(e)


def ranking_agreement(
    summary: Summary, blocks: Sequence[Block] | None = None, *, name: str = "ranking_agreement"
) -> Table:
    """Per block: leaders by success, AUC-PEC and TER, Kendall tau (success vs AUC-PEC, vs TER) with 95%
    intervals, and whether the rankings diverge (module docstring)."""
    columns = (
        "dataset",
        "block",
        "leader by success",
        "leader by AUC-PEC",
        "leader by TER",
        "Kendall τ (success, AUC-PEC)",
        "Kendall τ (success, TER)",
        "diverges",
    )
    csv_cols = (
        *plain_headers("dataset", "block", "leader_success", "leader_AUC_PEC", "leader_TER"),
        estimate_headers("tau_AUC_PEC"),
        estimate_headers("tau_TER"),
        *plain_headers("diverges"),
    )
    rows: list[tuple[Cell, ...]] = []
    for block in blocks_of(summary) if blocks is None else blocks:
        a = agreement(summary, block)
        n = len(block.rows)
        rows.append(
            (
                text_cell(block.dataset),
                text_cell("all models" if block.leaderboard else block.model),
                text_cell(", ".join(a.leaders_success)),
                text_cell(", ".join(a.leaders_auc)),
                text_cell(", ".join(a.leaders_ter)),
                _tau_cell(a.tau_auc, n, ranked_by_success(block)),
                _tau_cell(a.tau_ter, n, ranked_by_success(block)),
                Cell(a.diverges, None, bold=a.diverges == "yes", csv=(a.diverges,)),
            )
        )
    note = (
        "Leaders include ties at the shown precision. τ: Kendall τ-b with a 95% interval from the shared task "
        "draws. diverges = yes when no leader by success is among the leaders by AUC-PEC and the τ (success, "
        "AUC-PEC) interval excludes 1; not resolved when the leaders differ but the interval reaches 1."
    )
    return Table(
        name, "Do outcome-only and prefix-level rankings agree?", columns, tuple(rows), note=note, csv_columns=csv_cols
    )


def rank_cells(block: Block, anchors: Anchors | None) -> list[tuple[Cell, ...]]:
    """Per row of ``block``: outcome rank, prefix rank (AUC-PEC), TER rank and the shift outcome − prefix."""
    cs = block.rows
    outcome = competition_ranks([c.success.point if c.success is not None else None for c in cs])
    prefix = competition_ranks([c.AUC_PEC.point for c in cs])
    ter = competition_ranks([c.TER.point for c in cs])
    out: list[tuple[Cell, ...]] = []
    for i, c in enumerate(cs):
        link = anchors.condition(c.condition) if anchors else None
        rank = outcome[i]
        shift = None if rank is None else rank - (prefix[i] or 0)
        out.append(
            (
                absent_cell(link) if rank is None else number_cell(rank, link=link),  # no recorded Y: no rank
                number_cell(prefix[i], link=link),
                number_cell(ter[i], link=link),
                absent_cell(link)
                if shift is None
                else Cell(f"{shift:+d}", float(shift), bold=shift != 0, link=link, csv=(str(shift),)),
            )
        )
    return out


def ranking(summary: Summary, anchors: Anchors) -> Table:
    """Per method: outcome-only rank (final success) against prefix-level ranks (AUC-PEC and TER)."""
    columns = (
        "dataset",
        "model",
        "method",
        "success",
        "outcome rank",
        "AUC-PEC",
        "prefix rank (AUC-PEC)",
        "TER",
        "TER rank",
        "rank shift",
    )

    def row(c: ConditionSummary, ranks: tuple[Cell, ...]) -> tuple[Cell, ...]:
        outcome, prefix, ter, shift = ranks
        link = anchors.condition(c.condition)
        return (
            text_cell(c.dataset),
            text_cell(c.model),
            text_cell(c.method),
            number_cell(c.success.point, link=link) if c.success is not None else absent_cell(link),
            outcome,
            number_cell(c.AUC_PEC.point, link=link),
            prefix,
            number_cell(c.TER.point, link=link),
            ter,
            shift,
        )

    rows, tags = tagged_rows(
        blocks_of(summary),
        lambda block: (row(c, ranks) for c, ranks in zip(block.rows, rank_cells(block, anchors), strict=True)),
    )
    note = (
        "Ranks at the shown precision (ties share the better rank). rank shift = outcome rank − prefix rank: "
        "positive means the method looks worse by final success than by prefix reliability."
    )
    return Table(
        "ranking",
        "Ranking divergence: final success against prefix executability",
        columns,
        rows,
        tags,
        note,
    )
