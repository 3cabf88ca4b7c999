"""A report table as data, and its Markdown, CSV, LaTeX and HTML renderings.

A :class:`Table` is rows of :class:`Cell`; a cell carries its display text, a sort value, a bold flag and an
optional link (an HTML fragment id of the rollouts behind it). ``block`` groups rows (Table 2's dataset x model
blocks): LaTeX separates blocks with a rule, HTML tags rows with it. Renderers never compute anything: every
number and every bold flag is decided when the table is built.
"""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from prefix_exec.stats import Estimate


@dataclass(frozen=True)
class Cell:
    """One table cell. ``value`` sorts the column in HTML (``None`` sorts as text); ``csv`` overrides the
    CSV text (a plain number instead of ``0.47 [0.40, 0.54]``)."""

    text: str
    value: float | None = None
    bold: bool = False
    link: str | None = None
    csv: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Table:
    """``columns[i]`` heads the i-th cell of every row; ``csv_columns[i]`` is the tuple of CSV headers that
    cell expands to (defaults to the column name); ``bold_columns`` are the indices where a block maximum is
    bolded (their CSV gets a ``*_bold`` flag column)."""

    name: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    blocks: tuple[str, ...] = ()
    note: str = ""
    csv_columns: tuple[tuple[str, ...], ...] = field(default=())
    bold_columns: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"{self.name}: a row has {len(row)} cells for {len(self.columns)} columns")
        if self.blocks and len(self.blocks) != len(self.rows):
            raise ValueError(f"{self.name}: {len(self.blocks)} block tags for {len(self.rows)} rows")


# ---------------------------------------------------------------------------------------------- cells


def fmt(x: float | None, digits: int = 2) -> str:
    return "undefined" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def estimate_text(e: Estimate | None, digits: int = 2) -> str:
    """``0.47 [0.40, 0.54]``; ``undefined`` when missing; the interval is dropped when it is NaN."""
    if e is None:
        return "undefined"
    if math.isnan(e.low) or math.isnan(e.high):
        return fmt(e.point, digits)
    return f"{e.point:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}]"


def estimate_cell(e: Estimate | None, *, bold: bool = False, link: str | None = None, digits: int = 2) -> Cell:
    if e is None:
        return Cell("undefined", None, bold, link, ("", "", ""))
    raw = tuple("" if math.isnan(v) else repr(round(v, 6)) for v in (e.point, e.low, e.high))
    return Cell(estimate_text(e, digits), e.point, bold, link, raw)


def number_cell(x: float | int | None, *, digits: int = 2, bold: bool = False, link: str | None = None) -> Cell:
    if x is None:
        return Cell("undefined", None, bold, link, ("",))
    if isinstance(x, int):
        return Cell(str(x), float(x), bold, link, (str(x),))
    return Cell(fmt(x, digits), x, bold, link, (repr(round(x, 6)),))


def text_cell(text: str, link: str | None = None) -> Cell:
    return Cell(text, None, False, link, (text,))


def block_maxima(values: Sequence[float | None], digits: int = 2) -> list[bool]:
    """Bold flags: True for every value equal to the maximum *at the displayed precision* (ties included).

    Undefined values (``None``) are never bold. Rounding first means two cells that print as ``0.94`` are
    both bold, as a reader would expect.
    """
    shown = [None if v is None or math.isnan(v) else round(v, digits) for v in values]
    defined = [v for v in shown if v is not None]
    if not defined:
        return [False] * len(values)
    top = max(defined)
    return [v is not None and v == top for v in shown]


# ---------------------------------------------------------------------------------------------- renderers


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def to_markdown(table: Table) -> str:
    lines = [f"### {table.title}", ""]
    if table.note:
        lines += [table.note, ""]
    lines.append("| " + " | ".join(_md_escape(c) for c in table.columns) + " |")
    lines.append("|" + "---|" * len(table.columns))
    for row in table.rows:
        cells = [f"**{_md_escape(c.text)}**" if c.bold else _md_escape(c.text) for c in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def to_csv(table: Table) -> str:
    """One header row. A cell expands to its ``csv`` parts (an estimate to point, low, high); each column in
    ``bold_columns`` gets a ``<name>_bold`` column holding 1 for a block maximum and 0 otherwise."""
    heads = table.csv_columns or tuple((c,) for c in table.columns)
    header: list[str] = []
    for i, h in enumerate(heads):
        header += list(h)
        if i in table.bold_columns:
            header.append(f"{h[0]}_bold")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in table.rows:
        out: list[str] = []
        for i, cell in enumerate(row):
            parts = cell.csv if cell.csv is not None else (cell.text,)
            out += list(parts) + [""] * (len(heads[i]) - len(parts))
            if i in table.bold_columns:
                out.append("1" if cell.bold else "0")
        writer.writerow(out)
    return buf.getvalue()


_LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                  "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _latex_cell(cell: Cell) -> str:
    text = latex_escape(cell.text)
    if not cell.bold:
        return text
    # Bold only the point estimate, as the paper does; the interval stays regular weight.
    head, sep, tail = text.partition(" [")
    return rf"\textbf{{{head}}}{sep}{tail}"


def to_latex(table: Table) -> str:
    """A booktabs ``tabular`` (needs ``\\usepackage{booktabs}``) with a ``\\midrule`` between blocks."""
    spec = "l" * len(table.columns)
    lines = [f"% {table.title}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             " & ".join(latex_escape(c) for c in table.columns) + r" \\", r"\midrule"]
    previous: str | None = None
    for i, row in enumerate(table.rows):
        block = table.blocks[i] if table.blocks else None
        if block is not None and previous is not None and block != previous:
            lines.append(r"\midrule")
        previous = block
        lines.append(" & ".join(_latex_cell(c) for c in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def to_html(table: Table) -> str:
    """A sortable ``<table>``: every header sorts by the cells' ``data-v`` (numeric) or text."""
    e = html.escape
    parts = [f'<table class="sortable" id="t-{e(table.name)}">', "<thead><tr>"]
    parts += [f'<th title="click to sort">{e(c)}</th>' for c in table.columns]
    parts.append("</tr></thead><tbody>")
    for i, row in enumerate(table.rows):
        block = f' data-block="{e(table.blocks[i])}"' if table.blocks else ""
        parts.append(f"<tr{block}>")
        for cell in row:
            attrs = ""
            if cell.value is not None and not math.isnan(cell.value):
                attrs += f' data-v="{cell.value!r}"'
            if cell.bold:
                attrs += ' class="max"'
            text = e(cell.text)
            if cell.bold:
                text = f"<b>{text}</b>"
            if cell.link:
                text = f'<a href="#{e(cell.link)}" title="show the rollouts">{text}</a>'
            parts.append(f"<td{attrs}>{text}</td>")
        parts.append("</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


RENDERERS = {"md": to_markdown, "csv": to_csv, "tex": to_latex}
