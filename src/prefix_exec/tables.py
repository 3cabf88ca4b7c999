"""Plain renderings of a :class:`~prefix_exec.summary.Summary`: JSON, CSV and a Markdown table.

These are what ``prefix-exec metrics`` prints. The JSON is the machine-readable contract: per condition,
``N``; ``TER``, ``AUC_PEC``, ``mean_FED`` and ``success`` as ``{point, low, high}``; ``RR`` as
``{point, low, high}`` or null (undefined when nothing failed); ``RR_eligible``; and ``PEC``, ``PEC_elig`` and
``n_k`` as lists from k = 1.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from prefix_exec.stats import Estimate
from prefix_exec.summary import ConditionSummary, PairedComparison, Summary

CSV_COLUMNS = (
    "dataset", "model", "method", "N", "TER", "TER_low", "TER_high", "mean_FED", "mean_FED_low",
    "mean_FED_high", "mean_T", "AUC_PEC", "AUC_PEC_low", "AUC_PEC_high", "RR_eligible", "RR", "RR_low",
    "RR_high", "success", "success_low", "success_high",
)


def to_json(summary: Summary, comparisons: list[PairedComparison] | None = None) -> str:
    doc: dict[str, Any] = {
        "resamples": summary.resamples,
        "seed": summary.seed,
        "level": summary.level,
        "conditions": [c.as_dict() for c in summary.conditions],
    }
    if comparisons is not None:
        doc["paired"] = [p.as_dict() for p in comparisons]
    return json.dumps(doc, indent=2)


def _triple(e: Estimate | None) -> list[Any]:
    return ["", "", ""] if e is None else [e.point, e.low, e.high]


def to_csv(summary: Summary, comparisons: list[PairedComparison] | None = None) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for c in summary.conditions:
        writer.writerow(
            [c.dataset, c.model, c.method, c.N, *_triple(c.TER), *_triple(c.mean_FED), c.mean_T,
             *_triple(c.AUC_PEC), c.RR_eligible, *_triple(c.RR), *_triple(c.success)]
        )
    if comparisons:
        writer.writerow([])
        writer.writerow(["dataset", "model", "a", "b", "statistic", "difference", "low", "high"])
        for p in comparisons:
            for name, e in p.differences.items():
                writer.writerow([p.dataset, p.model, p.method_a, p.method_b, name, e.point, e.low, e.high])
    return buf.getvalue()


def format_estimate(e: Estimate | None, digits: int = 2) -> str:
    """``0.47 [0.40, 0.54]``; ``undefined`` for a missing estimate (RR with nothing failed)."""
    if e is None:
        return "undefined"
    return f"{e.point:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}]"


def to_markdown(summary: Summary, comparisons: list[PairedComparison] | None = None) -> str:
    header = "| dataset | model | method | N | TER | mean FED (mean T) | AUC-PEC | RR-Eligible | RR | success |"
    lines = [
        f"Intervals: 95% task-level percentile bootstrap ({summary.resamples} resamples, seed {summary.seed});"
        " RR: Wilson on RR-Eligible.",
        "",
        header,
        "|" + "---|" * (header.count("|") - 1),
    ]
    for c in summary.conditions:
        lines.append(_markdown_row(c))
    if comparisons:
        names = list(comparisons[0].differences)
        lines += ["", "Paired differences A - B (same task draws):", "",
                  "| dataset | model | A | B | " + " | ".join(names) + " |", "|---" * (4 + len(names)) + "|"]
        for p in comparisons:
            diffs = (format_estimate(e, 3) for e in p.differences.values())
            cells = [p.dataset, p.model, p.method_a, p.method_b, *diffs]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _markdown_row(c: ConditionSummary) -> str:
    cells = [
        c.dataset, c.model, c.method, str(c.N), format_estimate(c.TER),
        f"{format_estimate(c.mean_FED)} ({c.mean_T:.2f})", format_estimate(c.AUC_PEC), str(c.RR_eligible),
        format_estimate(c.RR), format_estimate(c.success),
    ]
    return "| " + " | ".join(cells) + " |"


RENDERERS = {"json": to_json, "csv": to_csv, "md": to_markdown}
