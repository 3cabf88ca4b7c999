"""What a set of records leaves out, so summaries never silently compare unequal task sets.

Two gaps are reported as warnings (the numbers are still computed):

- units of a run directory that failed and have no record (``failures.jsonl`` beside ``records.jsonl``):
  a unit that always fails (a context-length error on long tasks, say) would otherwise drop out of one
  method's N and bias the comparison;
- conditions of one (dataset, model) block with different task counts, where the per-method columns
  and paired differences rest on different tasks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from prefix_exec.records.jsonl import latest_by_unit

FAILURES = "failures.jsonl"


class Keyed(Protocol):
    """A scored rollout's key fields (records and metric rows have them, read-only)."""

    @property
    def dataset(self) -> str: ...
    @property
    def task_id(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def trial(self) -> int: ...


def coverage_warnings(files: Iterable[str | Path], rows: Sequence[Keyed]) -> list[str]:
    """Warnings for ``rows`` read from ``files``: open failures of their run directories, unequal blocks."""
    return failed_units(files, rows) + unequal_blocks(rows)


def failed_units(files: Iterable[str | Path], rows: Sequence[Keyed]) -> list[str]:
    """One warning per run directory whose ``failures.jsonl`` lists units that have no record in ``rows``."""
    have = {(r.dataset, r.task_id, r.model, r.method, r.trial) for r in rows}
    out: list[str] = []
    for folder in sorted({Path(f).parent for f in files}):
        path = folder / FAILURES
        missing = set(latest_by_unit(path)) - have
        if missing:
            out.append(
                f"{len(missing)} units of {folder} failed and have no record, so they are not in these "
                f"numbers (see {path}; 'prefix-exec run ... --resume' retries them)"
            )
    return out


def unequal_blocks(rows: Sequence[Keyed]) -> list[str]:
    """One warning per (dataset, model) block whose methods were scored on different numbers of rollouts."""
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        counts[(r.dataset, r.model)][r.method] += 1
    out = []
    for (dataset, model), by_method in sorted(counts.items()):
        if len(set(by_method.values())) > 1:
            sizes = ", ".join(f"{m} {n}" for m, n in sorted(by_method.items()))
            out.append(
                f"{dataset} / {model}: methods have different numbers of rollouts ({sizes}); their "
                "columns and paired differences rest on different tasks"
            )
    return out
