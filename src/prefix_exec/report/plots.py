"""Figure 1 (PEC curves), its eligible-depth view, the leaderboard's curves and the ranking charts, as PNG and SVG.

Readable from 2 to a few dozen series (styles, legends, plain-text names and file names: :mod:`.drawing`); the
x-axis stops at a stated k_max (:func:`~prefix_exec.report.layout.depth_cut`: BFCL 10, else the 95th percentile of
T), written in each panel's title.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefix_exec.analysis.summary import ConditionSummary, Summary
from prefix_exec.report import curves, drawing
from prefix_exec.report.drawing import Style, file_stem, method_styles, series_styles, short
from prefix_exec.report.layout import Block, blocks_of, depth_cut, leaderboard_blocks, ranked_by_success
from prefix_exec.report.ranking import competition_ranks

#: Below this many rollouts reaching k, a PEC_elig point is drawn hollow: its interval is wide.
FEW = 10
#: Caption under every fixed-cohort PEC figure: what a drop means.
PEC_CAPTION = (
    "PEC(k) = #{FED > k} / N: the share of all N rollouts whose first k calls all executed (fixed cohort). "
    "A drop at k is a failure at step k or a rollout that ended before k (T < k).\n"
    "Thin dashed line, same colour: the reach n_k / N (rollouts with T ≥ k), the most PEC(k) can be; a curve "
    "falling along it means rollouts ended, the gap below it means failures."
)
#: Caption under every eligible-depth figure.
ELIG_CAPTION = (
    "PEC_elig(k) = #{T ≥ k, FED > k} / n_k: of the n_k rollouts that reached k, the share with no failure in "
    "their first k calls; not a survival curve (it can rise).\n"
    f"Bands: 95% Wilson intervals on n_k (up to 6 series); hollow markers: n_k < {FEW}. Lower panels: n_k."
)


def _captioned(caption: str, note: str) -> str:
    """``caption`` with ``note`` as its last line (none when empty)."""
    return f"{caption}\n{note}" if note else caption


def _curve_panel(ax: Any, rows: Sequence[ConditionSummary], dataset: str, styles: dict[str, Style], name: Any) -> None:
    """Fixed-cohort PEC(k) per condition, its reach line n_k / N and (up to 6 series) its bootstrap band."""
    cut = depth_cut(dataset, rows)
    ks = list(range(1, cut.k_max + 1))
    for c in rows:
        # PEC(k) is exactly 0 (and so is its interval) where no rollout reaches k: curves and bands run on to
        # k_max on every panel instead of stopping at the longest rollout.
        style = drawing.line_style(styles, name(c))
        ax.plot(ks, curves.fixed_cohort(c, cut.k_max), label=short(name(c)), **style)
        ax.plot(ks, curves.reach(c, cut.k_max), color=style["color"], linestyle=(0, (4, 3)), linewidth=0.8)
        band = curves.pec_band(c, cut.k_max)
        if band and len(rows) <= 6:  # bands of many series hide each other: the tables keep the intervals
            ks_band = ks[: len(band)]
            ax.fill_between(ks_band, *zip(*band, strict=True), color=style["color"], alpha=0.12, linewidth=0)
    _axes(ax, f"{dataset} ({cut.reason})", "PEC(k) = #{FED > k} / N", cut.k_max)
    ax.set_ylim(-0.02, 1.02)
    # A curve on its reach line hides it: say so, since that curve's whole fall is rollouts ending.
    clean = [short(name(c)) for c in rows if curves.on_reach(c, cut.k_max)]
    if clean:
        who = (
            "every curve" if len(clean) == len(rows) > 1 else ", ".join(clean[:3]) + (" ..." if len(clean) > 3 else "")
        )
        note = f"{who}: PEC(k) = n_k / N for all k ≤ {cut.k_max}\n(no failure: every drop is rollouts ending)"
        # Placed where it covers the fewest points ("best", as a legend is placed): among many curves a fixed
        # corner lands on some of them.
        from matplotlib.legend import Legend  # lazily, as every matplotlib import here

        box = Legend(ax, [], [], title=note, loc="best", title_fontsize=7.5, alignment="left", framealpha=0.85)
        box.get_title().set_color("#333333")
        ax.add_artist(box)
    ax.plot([], [], color="#555555", linestyle=(0, (4, 3)), linewidth=0.8, label="n_k / N (reach: T ≥ k)")


def _eligible_panel(
    ax: Any, counts: Any, rows: Sequence[ConditionSummary], dataset: str, styles: dict[str, Style], name: Any
) -> None:
    """PEC_elig(k) per condition with its Wilson band (up to 6 series), hollow where n_k < FEW; n_k below."""
    cut = depth_cut(dataset, rows)
    for c in rows:
        style = drawing.line_style(styles, name(c))
        points = curves.eligible(c, cut.k_max)
        ks = [p.k for p in points]
        # Filled markers where n_k >= FEW (on the line, so the legend shows them), hollow ones where fewer.
        filled = [p.n >= FEW for p in points]
        ax.plot(ks, [p.value for p in points], label=short(name(c)), markevery=filled, **style)
        few = [p for p in points if p.n < FEW]
        ax.plot(
            [p.k for p in few],
            [p.value for p in few],
            linestyle="None",
            marker=style["marker"],
            markersize=style["markersize"],
            color=style["color"],
            markerfacecolor="white",
        )
        if points and len(rows) <= 6:
            ax.fill_between(ks, [p.low for p in points], [p.high for p in points], color=style["color"], alpha=0.12)
        counts.plot(ks, [p.n for p in points], **{**style, "linewidth": 1.0})
    _axes(ax, f"{dataset} ({cut.reason})", "PEC_elig(k) = #{T ≥ k, FED > k} / n_k", cut.k_max)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("")
    _axes(counts, "", "n_k = #{T ≥ k}", cut.k_max)
    counts.set_ylim(bottom=0)


def _axes(ax: Any, title: str, ylabel: str, k_max: int) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if title:
        ax.set_title(title, fontsize=9)
    ax.set_xlabel("depth k")
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_xlim(0.5, k_max + 0.5)
    ax.grid(alpha=0.3)


def figure1(summary: Summary, out: Path, *, synthetic: bool = False, note: str = "") -> list[Path]:
    """Per model: ``figure1-<model>`` (fixed-cohort PEC with 95% bands and reach lines) and
    ``figure1-elig-<model>`` (eligible-depth PEC_elig with Wilson bands, and n_k below); one panel per dataset,
    one line per method, a caption saying what the curves mean. A model with one method in each dataset, all of
    them on a leaderboard, gets no figure of its own (:func:`leaderboard_figure` has it). ``note`` (what was done
    with infrastructure failures) ends both captions."""
    plt = drawing.pyplot()
    styles = method_styles(summary)
    written: list[Path] = []
    boards = {b.dataset for b in leaderboard_blocks(summary)}
    with drawing.plain_text():
        for model in sorted({c.model for c in summary.conditions}):
            blocks = [b for b in blocks_of(summary) if b.model == model]
            if all(len(b.rows) == 1 and b.dataset in boards for b in blocks):
                continue  # one method per dataset: its curve is on the leaderboard figure
            series = len({c.method for b in blocks for c in b.rows})
            width = 2.6 + 4.6 * len(blocks)
            fig, axes = plt.subplots(
                1, len(blocks), figsize=(width, drawing.height(series) + 0.5), squeeze=False, layout="constrained"
            )
            for ax, block in zip(axes[0], blocks, strict=True):
                _curve_panel(ax, block.rows, block.dataset, styles, lambda c: c.method)
            written += drawing.finish(
                plt,
                fig,
                axes[0],
                f"Figure 1 (fixed-cohort PEC(k), 95% bands): {short(model)}",
                _captioned(PEC_CAPTION, note),
                synthetic,
                out / file_stem("figure1", model),
            )
            fig, axes = plt.subplots(
                2,
                len(blocks),
                figsize=(width, drawing.height(series) + 2.0),
                squeeze=False,
                layout="constrained",
                height_ratios=(3, 1),
                sharex="col",
            )
            for top, bottom, block in zip(axes[0], axes[1], blocks, strict=True):
                _eligible_panel(top, bottom, block.rows, block.dataset, styles, lambda c: c.method)
            written += drawing.finish(
                plt,
                fig,
                axes[0],
                f"Figure 1 (eligible-depth view): {short(model)}",
                _captioned(ELIG_CAPTION, note),
                synthetic,
                out / file_stem("figure1-elig", model),
            )
    return written


def leaderboard_figure(summary: Summary, out: Path, *, synthetic: bool = False, note: str = "") -> list[Path]:
    """Per multi-model dataset: ``leaderboard-<dataset>``, the PEC curves of all its conditions in one
    panel with their reach lines (legend in leaderboard order, best final success first)."""
    plt = drawing.pyplot()
    written: list[Path] = []
    with drawing.plain_text():
        for block in leaderboard_blocks(summary):
            styles = series_styles([block.name(c) for c in block.rows])
            fig, ax = plt.subplots(figsize=(10.0, drawing.height(len(block.rows)) + 0.5), layout="constrained")
            _curve_panel(ax, block.rows, block.dataset, styles, block.name)
            title = f"PEC(k) of every model on {block.dataset} (legend: best final success first)"
            written += drawing.finish(
                plt,
                fig,
                [ax],
                title,
                _captioned(PEC_CAPTION, note),
                synthetic,
                out / file_stem("leaderboard", block.dataset),
            )
    return written


def _bump_panel(ax: Any, block: Block, styles: dict[str, Style]) -> None:
    cs = block.rows
    success = [c.success.point for c in cs if c.success is not None]  # every one (ranked_by_success)
    outcome = competition_ranks(success)
    prefix = competition_ranks([c.AUC_PEC.point for c in cs])
    # tied ranks would stack their labels: spread each side's labels over 1..n in table order
    left = {id(c): i + 1 for i, c in enumerate(sorted(cs, key=lambda c: outcome[cs.index(c)] or 0))}
    right = {id(c): i + 1 for i, c in enumerate(sorted(cs, key=lambda c: prefix[cs.index(c)] or 0))}
    for c, y, a, b in zip(cs, success, outcome, prefix, strict=True):
        color, marker, linestyle = styles[block.name(c)]
        ya, yb = left[id(c)], right[id(c)]
        ax.plot([0, 1], [ya, yb], marker=marker, linestyle=linestyle, color=color, linewidth=2.4 if a != b else 1.1)
        ax.annotate(
            f"#{a} {short(block.name(c))}  {y:.2f}",
            (0, ya),
            xytext=(-8, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=8,
            color=color,
        )
        ax.annotate(
            f"#{b} {short(block.name(c))}  {c.AUC_PEC.point:.2f}",
            (1, yb),
            xytext=(8, 0),
            textcoords="offset points",
            ha="left",
            va="center",
            fontsize=8,
            color=color,
        )
    ax.set_xlim(-1.6, 2.6)
    ax.set_ylim(len(cs) + 0.5, 0.5)
    ax.set_xticks([0, 1], ["rank by\nfinal success", "rank by\nAUC-PEC"])
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(short(block.label), fontsize=9)


def _bump_chart(
    blocks: Sequence[Block], out: Path, stem: str, title: str, synthetic: bool, styles_of: Any
) -> list[Path]:
    plt = drawing.pyplot()
    cols = min(3, len(blocks))
    rows = -(-len(blocks) // cols)
    per_row = max(3, max(len(b.rows) for b in blocks))
    widest = max(len(short(b.name(c))) for b in blocks for c in b.rows)
    width = max(7.0, 3.0 + 0.13 * widest)
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(width * cols, 1.0 + 0.32 * rows * per_row + 0.6 * rows),
        squeeze=False,
        layout="constrained",
    )
    for ax in axes.flat[len(blocks) :]:
        ax.set_visible(False)
    for ax, block in zip(axes.flat, blocks, strict=False):
        _bump_panel(ax, block, styles_of(block))
    drawing.set_title(fig, title, synthetic)
    paths = drawing.save(fig, out, stem)
    plt.close(fig)
    return paths


def ranking_chart(summary: Summary, out: Path, *, synthetic: bool = False) -> list[Path]:
    """``ranking``: one panel per (dataset, model) block of two or more methods; a line joins a method's
    outcome-only rank to its prefix-level rank (thick when they differ). With leaderboards,
    ``leaderboard-ranking-<dataset>`` too. A block where a condition records no Y has no outcome rank: none."""
    styles = method_styles(summary)
    # one condition has nothing to rank; a condition without a recorded Y has no outcome rank
    ranked = [b for b in blocks_of(summary) if len(b.rows) > 1 and ranked_by_success(b)]
    paths: list[Path] = []
    with drawing.plain_text():
        if ranked:
            paths += _bump_chart(
                ranked,
                out,
                "ranking",
                "Ranking divergence: outcome-only rank vs prefix-level rank",
                synthetic,
                lambda b: styles,
            )
        for block in filter(ranked_by_success, leaderboard_blocks(summary)):
            paths += _bump_chart(
                [block],
                out,
                file_stem("leaderboard-ranking", block.dataset),
                f"Ranking divergence across models: {block.dataset}",
                synthetic,
                lambda b: series_styles([b.name(c) for c in b.rows]),
            )
    return paths
