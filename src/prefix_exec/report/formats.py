"""The renderings of a :class:`~prefix_exec.report.cells.Table`: Markdown, CSV, LaTeX and HTML.

Renderers never compute anything: they print the cells' text, bold flags and links as the table holds them.
LaTeX separates blocks with a rule; HTML tags rows with their block.
"""

from __future__ import annotations

import csv
import html
import io
import math

from prefix_exec.report.cells import Cell, Table
from prefix_exec.terminal import escaped


def _md_escape(text: str) -> str:
    """A Markdown table cell: pipes escaped, raw HTML shown as text (``<script>`` from a method name must
    not become markup in a rendered README), line breaks flattened so a cell stays on its row, other control
    characters escaped (a terminal showing the file would obey them: :mod:`prefix_exec.terminal`)."""
    return escaped(
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("\r", " ")
        .replace("\n", " ")
    )


#: First characters a spreadsheet reads as a formula (CSV injection: ``=HYPERLINK(...)``, ``@SUM(...)``).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: a formula-like cell gets a leading ``'``; numbers (``-0.05``)
    are left as they are."""
    if not text.startswith(_FORMULA_START):
        return text
    try:
        float(text)
    except ValueError:
        return "'" + text
    return text


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
    writer.writerow([csv_cell(h) for h in header])
    for row in table.rows:
        out: list[str] = []
        for i, cell in enumerate(row):
            parts = cell.csv if cell.csv is not None else (cell.text,)
            out += list(parts) + [""] * (len(heads[i]) - len(parts))
            if i in table.bold_columns:
                out.append("1" if cell.bold else "0")
        writer.writerow([csv_cell(c) for c in out])
    return buf.getvalue()


_LATEX_SPECIAL = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
}


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
    lines = [
        f"% {table.title}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(latex_escape(c) for c in table.columns) + r" \\",
        r"\midrule",
    ]
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
