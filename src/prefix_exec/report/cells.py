"""A report table as data: :class:`Table` rows of :class:`Cell`, and the cell constructors every table uses.

A cell carries its display text, a sort value, a bold flag and an optional link (an HTML fragment id of the
rollouts behind it). ``blocks`` groups rows (Table 2's dataset x model blocks). Every number and every bold
flag is decided here, when a table is built; :mod:`prefix_exec.report.formats` only renders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from prefix_exec.analysis.stats import Estimate


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


def recorded_cell(e: Estimate | None, known: int, total: int, *, bold: bool = False, link: str | None = None) -> Cell:
    """An estimate over the ``known`` of ``total`` records whose Y is recorded (success, RR): as
    :func:`estimate_cell` when every Y is; else with ``(not recorded for M of total)`` after it, or ``n/a`` before
    it when none is (CSV: empty, never 0)."""
    if known == total:
        return estimate_cell(e, bold=bold, link=link)
    missing = f"not recorded for {total - known} of {total}"
    if e is None:
        return Cell(f"n/a ({missing})", None, False, link, ("", "", ""))
    cell = estimate_cell(e, bold=bold, link=link)
    return Cell(f"{cell.text} ({missing})", cell.value, cell.bold, link, cell.csv)


def absent_cell(link: str | None = None, *, width: int = 1) -> Cell:
    """``n/a``: a value that needs final success Y where none is recorded (CSV: ``width`` empty values)."""
    return Cell("n/a", None, False, link, ("",) * width)


def estimate_headers(name: str) -> tuple[str, str, str]:
    """The CSV headers of an :func:`estimate_cell` column: ``name``, ``name_low``, ``name_high``."""
    return (name, f"{name}_low", f"{name}_high")


def plain_headers(*names: str) -> tuple[tuple[str], ...]:
    """The CSV headers of one-value columns (text and number cells): one header a column, its name."""
    return tuple((name,) for name in names)


def difference_columns(
    headings: Sequence[str],
    csv_headers: Sequence[str],
    statistics: Sequence[tuple[str, str]],
    cost_headings: Sequence[str] = (),
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """The headings and CSV headers of a table of paired differences: the identity columns (``headings``,
    one CSV header each), then a column per ``(statistic, heading)`` (CSV ``d_<statistic>`` with its
    interval), then, with ``cost_headings``, the token and seconds differences (CSV ``d_tokens``,
    ``d_seconds``)."""
    columns = (*headings, *(heading for _, heading in statistics), *cost_headings)
    cost_csv = plain_headers("d_tokens", "d_seconds") if cost_headings else ()
    csv = (*plain_headers(*csv_headers), *(estimate_headers(f"d_{s}") for s, _ in statistics), *cost_csv)
    return columns, csv


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
