"""Figure 1 (PEC curves), its eligible-depth view, and the ranking-divergence chart, as PNG and SVG.

matplotlib is imported lazily with the Agg backend (no display needed). Files are deterministic for the same
input: SVG ids are salted with a constant and no creation date is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefix_exec.report.layout import Block, blocks_of, max_depth
from prefix_exec.report.ranking import competition_ranks
from prefix_exec.summary import ConditionSummary, Summary

SYNTHETIC_MARK = "SYNTHETIC DEMO DATA (fault-injected, not model output)"


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError("plots need matplotlib: pip install 'prefix-exec[plot]'") from exc
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "prefix-exec"
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out: Path, stem: str) -> list[Path]:
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=110, metadata={"Software": None})
    fig.savefig(paths[1], metadata={"Date": None})
    return paths


def slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "-" for ch in text).strip("-") or "x"


def method_colors(summary: Summary) -> dict[str, str]:
    """One colour per method across every panel and figure (matplotlib's default cycle, in report order)."""
    methods = list(dict.fromkeys(c.method for b in blocks_of(summary) for c in b.rows))
    return {m: f"C{i % 10}" for i, m in enumerate(methods)}


def _curve_panel(ax: Any, conditions: Sequence[ConditionSummary], dataset: str, elig: bool,
                 colors: dict[str, str]) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    for c in conditions:
        depth = max_depth(dataset, c.PEC)
        ks = list(range(1, depth + 1))
        if elig:
            ys = [float("nan") if v is None else v for v in c.PEC_elig[:depth]]
            ax.plot(ks, ys, marker="o", markersize=3, label=c.method, color=colors[c.method])
            continue
        line = ax.plot(ks, c.PEC[:depth], marker="o", markersize=3, label=c.method, color=colors[c.method])[0]
        band = c.PEC_CI[: min(depth, len(c.PEC_CI))]
        if band:
            ax.fill_between(range(1, len(band) + 1), [e.low for e in band], [e.high for e in band],
                            color=line.get_color(), alpha=0.15, linewidth=0)
    ax.set_title(dataset + (" (k ≤ 10)" if depth_capped(dataset, conditions) else ""))
    ax.set_xlabel("depth k")
    ax.set_ylabel("PEC_elig(k) = #{T ≥ k, FED > k} / n_k" if elig else "PEC(k) = #{FED > k} / N")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")


def depth_capped(dataset: str, conditions: Sequence[ConditionSummary]) -> bool:
    return any(max_depth(dataset, c.PEC) < len(c.PEC) for c in conditions)


def figure1(summary: Summary, out: Path, *, synthetic: bool = False) -> list[Path]:
    """Per model: ``figure1-<model>`` (fixed-cohort PEC with 95% bands) and ``figure1-elig-<model>``
    (eligible-depth PEC_elig); one panel per dataset, one line per method."""
    plt = _pyplot()
    colors = method_colors(summary)
    written: list[Path] = []
    models = sorted({c.model for c in summary.conditions})
    for model in models:
        blocks = [b for b in blocks_of(summary) if b.model == model]
        for elig in (False, True):
            fig, axes = plt.subplots(1, len(blocks), figsize=(max(6.4, 4.6 * len(blocks)), 4.0), squeeze=False)
            for ax, block in zip(axes[0], blocks, strict=True):
                _curve_panel(ax, block.rows, block.dataset, elig, colors)
            view = "eligible-depth view" if elig else "fixed-cohort PEC(k), 95% bands"
            title = f"Figure 1 ({view}): {model}"
            fig.suptitle(title + (f"\n{SYNTHETIC_MARK}" if synthetic else ""), fontsize=10,
                         color="firebrick" if synthetic else "black")
            fig.tight_layout()
            written += _save(fig, out, f"figure1-{'elig-' if elig else ''}{slug(model)}")
            plt.close(fig)
    return written


def _bump_panel(ax: Any, block: Block, colors: dict[str, str]) -> None:
    cs = block.rows
    outcome = competition_ranks([c.success.point for c in cs])
    prefix = competition_ranks([c.AUC_PEC.point for c in cs])
    for c, a, b in zip(cs, outcome, prefix, strict=True):
        line = ax.plot([0, 1], [a, b], marker="o", linewidth=2.5 if a != b else 1.2, color=colors[c.method])[0]
        ax.annotate(f"#{a} {c.method}\nsuccess {c.success.point:.2f}", (0, a), xytext=(-8, 0),
                    textcoords="offset points", ha="right", va="center", fontsize=8, color=line.get_color())
        ax.annotate(f"#{b} {c.method}\nAUC-PEC {c.AUC_PEC.point:.2f}", (1, b), xytext=(8, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=8, color=line.get_color())
    ax.set_xlim(-1.5, 2.5)
    ax.set_ylim(len(cs) + 0.5, 0.5)
    ax.set_xticks([0, 1], ["rank by\nfinal success", "rank by\nAUC-PEC"])
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(block.label, fontsize=9)


def ranking_chart(summary: Summary, out: Path, *, synthetic: bool = False) -> list[Path]:
    """``ranking``: one panel per block; a line joins a method's outcome-only rank to its prefix-level rank
    (thick when they differ)."""
    plt = _pyplot()
    colors = method_colors(summary)
    blocks = blocks_of(summary)
    cols = min(3, len(blocks))
    rows = -(-len(blocks) // cols)
    height = 1.4 + 0.75 * rows * max(3, max(len(b.rows) for b in blocks))
    fig, axes = plt.subplots(rows, cols, figsize=(7.0 * cols, height), squeeze=False)
    for ax in axes.flat[len(blocks):]:
        ax.set_visible(False)
    for ax, block in zip(axes.flat, blocks, strict=False):
        _bump_panel(ax, block, colors)
    title = "Ranking divergence: outcome-only rank vs prefix-level rank"
    fig.suptitle(title + (f"\n{SYNTHETIC_MARK}" if synthetic else ""), fontsize=10,
                 color="firebrick" if synthetic else "black")
    fig.tight_layout()
    paths = _save(fig, out, "ranking")
    plt.close(fig)
    return paths
