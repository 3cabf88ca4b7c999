"""What every figure of the report shares: matplotlib, file names and files, series styles, titles and legends.

matplotlib is imported lazily (:func:`pyplot`) with the Agg backend (no display needed). Files are deterministic
for the same input (:func:`save`): SVG ids are salted with a constant and no creation date is written.

- every series gets its own colour × marker × line-style combination (:func:`series_styles`);
- legends sit outside the axes, to the right (:func:`legend`), and titles are laid out by constrained layout;
- names from the records are drawn as plain text (:func:`plain_text`: ``text.parse_math`` off, a ``$`` is a dollar
  sign), cut to :data:`LABEL_LENGTH` characters in legends and labels (:func:`short`);
- file names are a bounded slug of the name plus a short hash of the full name (:func:`file_stem`), so
  ``org/model-a``, ``org:model-a`` and ``org_model-a`` get three files and a 300-character name still fits.
"""

from __future__ import annotations

import hashlib
import io
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prefix_exec.analysis.summary import Summary
from prefix_exec.extras import install_hint
from prefix_exec.json_types import JsonObject
from prefix_exec.records.outputs import write_new
from prefix_exec.report.layout import blocks_of

SYNTHETIC_MARK = "SYNTHETIC DEMO DATA (fault-injected, not model output)"
#: Longest slug kept in a file name (the hash makes it unique).
SLUG_LENGTH = 40
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")
Style = tuple[str, str, str]


def pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(f"plots need matplotlib: {install_hint('matplotlib')}") from exc
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "prefix-exec"
    import matplotlib.pyplot as plt

    return plt


@contextmanager
def plain_text() -> Iterator[None]:
    """Names from records are text, never mathtext (``$\\frac`` would crash or render as math)."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        yield


def save(fig: Any, out: Path, stem: str) -> list[Path]:
    """Save ``fig`` as ``stem``.png and .svg in ``out``, each written beside its name and renamed over it
    (:func:`~prefix_exec.records.outputs.write_new`: a link or FIFO at the name is replaced, never written through)."""
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    settings: list[JsonObject] = [{"dpi": 110, "metadata": {"Software": None}}, {"metadata": {"Date": None}}]
    for path, options in zip(paths, settings, strict=True):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=path.suffix[1:], **options)
        write_new(path, buffer.getvalue())
    return paths


def slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "-" for ch in text).strip("-") or "x"


def file_stem(prefix: str, name: str) -> str:
    """``prefix-<slug of name, at most 40 characters>-<8 hex digits of its SHA-1>``: unique per name."""
    digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{prefix}-{slug(name)[:SLUG_LENGTH].rstrip('-.')}-{digest}"


#: Longest name drawn in a legend or label (longer ones end in "…"; the tables keep them whole).
LABEL_LENGTH = 40


def short(name: str) -> str:
    return name if len(name) <= LABEL_LENGTH else name[: LABEL_LENGTH - 1] + "…"


def series_styles(names: Sequence[str]) -> dict[str, Style]:
    """(colour, marker, line style) per name, in order; the first 40 names all differ in colour and line
    style together, and markers cycle on a different period so neighbours differ in marker too."""
    out: dict[str, Style] = {}
    for i, name in enumerate(dict.fromkeys(names)):
        out[name] = (
            COLORS[i % len(COLORS)],
            MARKERS[i % len(MARKERS)],
            LINESTYLES[(i // len(COLORS)) % len(LINESTYLES)],
        )
    return out


def method_styles(summary: Summary) -> dict[str, Style]:
    """One style per method across every per-model panel and figure, in report order."""
    return series_styles([c.method for b in blocks_of(summary) for c in b.rows])


def set_title(fig: Any, text: str, synthetic: bool) -> None:
    """The figure's title, in red and marked as synthetic for synthetic data."""
    fig.suptitle(
        text + (f"\n{SYNTHETIC_MARK}" if synthetic else ""), fontsize=10, color="firebrick" if synthetic else "black"
    )


def line_style(styles: dict[str, Style], label: str) -> dict[str, Any]:
    color, marker, linestyle = styles[label]
    return {"color": color, "marker": marker, "linestyle": linestyle, "markersize": 4, "linewidth": 1.4}


def legend(axes: Sequence[Any]) -> None:
    """One legend for all panels, outside the last one on the right (constrained layout makes room)."""
    handles: JsonObject = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    if handles:
        axes[-1].legend(
            list(handles.values()),
            list(handles),
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
            fontsize=8,
            frameon=False,
            handlelength=3.0,
        )


def height(series: int) -> float:
    """Figure height (inches) that fits one legend row per series beside the axes."""
    return max(4.2, 1.3 + 0.19 * series)


def finish(
    plt: Any, fig: Any, axes: Sequence[Any], title: str, caption: str, synthetic: bool, stem: Path
) -> list[Path]:
    """Legend, title and caption, then the PNG and SVG at ``stem``; the figure is closed."""
    legend(axes)
    set_title(fig, title, synthetic)
    # About 15 characters of 7.5 pt text per inch of figure width.
    width = int(fig.get_figwidth() * 15)
    text = "\n".join(textwrap.fill(part, width) for part in caption.split("\n"))
    fig.supxlabel(text, fontsize=7.5, color="#333333", x=0.01, ha="left", multialignment="left")
    written = save(fig, stem.parent, stem.name)
    plt.close(fig)
    return written
