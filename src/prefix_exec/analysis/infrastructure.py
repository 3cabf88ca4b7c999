"""Records of rollouts that an infrastructure failure ended, in the tables: left out by default, or kept under
their own label.

A record is an infrastructure failure when its ``metadata.infrastructure`` holds the failure's text: the guard
writes it when the MCP server exits, stops answering or writes garbage mid-connection; ``score bfcl`` and
``score tau`` write it for the rollouts they keep with ``--keep-infrastructure-failures``
(:mod:`prefix_exec.importers.infrastructure`). Such a rollout says nothing of the agent, so ``metrics`` and
``report`` leave it out of PEC/FED/TER by default and say so (the count, the ids, N with and without them);
with ``--keep-infrastructure-failures`` it is counted, its first-failure label :data:`LABEL`, outside the
paper's five.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from prefix_exec.analysis.rows import MetricRow

#: The first-failure label of a kept infrastructure failure (not one of the five: the agent did not fail).
LABEL = "infrastructure"
#: The metadata key that marks one (the importers' and the guard's).
KEY = "infrastructure"
#: A cheap test before a line is parsed: lines without it are not read twice.
_NEEDLE = f'"{KEY}"'
#: Ids listed in the note before the rest are counted.
LISTED = 20

#: (dataset, task id, model, method, trial): a rollout's identity in a records file.
Key = tuple[str, str, str, str, int]


def marked(paths: Iterable[str | Path]) -> dict[Key, str]:
    """The records of ``paths`` marked as infrastructure failures, by identity, with the failure's text. Lines
    that are not JSON objects with that mark are passed over (the records reader reports bad lines)."""
    found: dict[Key, str] = {}
    for path in paths:
        with Path(path).open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if _NEEDLE not in line:
                    continue
                try:
                    data = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                key, text = _mark(data)
                if key is not None and text is not None:
                    found[key] = text
    return found


def _mark(data: object) -> tuple[Key | None, str | None]:
    if not isinstance(data, Mapping) or not isinstance(data.get("metadata"), Mapping):
        return None, None
    text = data["metadata"].get(KEY)
    fields = [data.get(name) for name in ("dataset", "task_id", "model", "method")]
    trial = data.get("trial", 0)
    if not isinstance(text, str) or not all(isinstance(f, str) for f in fields) or not isinstance(trial, int):
        return None, None
    return (str(fields[0]), str(fields[1]), str(fields[2]), str(fields[3]), trial), text


@dataclass(frozen=True)
class Applied:
    """The rows the tables read, and what was done with the infrastructure failures among the rows given."""

    rows: list[MetricRow]
    excluded: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()

    def note(self) -> str | None:
        """One line for stderr, or ``None`` when there was none."""
        if self.kept:
            n = len(self.rows)
            return (
                f"{len(self.kept)} infrastructure failure{'s' if len(self.kept) != 1 else ''} kept under the label "
                f"'{LABEL}' (--keep-infrastructure-failures): N = {n} with them, {n - len(self.kept)} without: "
                f"{_listed(self.kept)}"
            )
        if not self.excluded:
            return None
        n, count = len(self.rows), len(self.excluded)
        return (
            f"{count} rollout{'s' if count != 1 else ''} ended by an infrastructure failure (the system's, not the "
            f"agent's) left out of PEC/FED/TER: N = {n} without them, {n + count} with them "
            f"(--keep-infrastructure-failures keeps them): {_listed(self.excluded)}"
        )


def apply(rows: Sequence[MetricRow], failures: Mapping[Key, str], *, keep: bool) -> Applied:
    """``rows`` without those ``failures`` names (or, with ``keep``, with them labelled :data:`LABEL`)."""
    if not failures:
        return Applied(list(rows))
    out: list[MetricRow] = []
    hit: list[str] = []
    for row in rows:
        key = (row.dataset, row.task_id, row.model, row.method, row.trial)
        if key not in failures:
            out.append(row)
            continue
        hit.append(f"{row.dataset}/{row.task_id} ({row.model}, {row.method}, trial {row.trial})")
        if keep:
            out.append(replace(row, label=LABEL))
    return Applied(out, kept=tuple(hit)) if keep else Applied(out, excluded=tuple(hit))


def _listed(items: Sequence[str]) -> str:
    more = len(items) - LISTED
    return ", ".join(items[:LISTED]) + (f" and {more} more" if more > 0 else "")
