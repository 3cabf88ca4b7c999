"""The demo's calibration: injected label and depth against what the scorer detected.

Every faulty rollout carries in its metadata the operator, the injected label, the label the scorer is
expected to report and the injected depth. A rollout is *calibrated* when the record's first-failure label
equals the expected label and its FED equals the injected depth. A clean rollout is calibrated when it is
fully executable (no false alarm). Anything else is a miss, and the demo exits non-zero listing them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from prefix_exec.trajectory import FailureLabel, PrefixRecord

LABELS = tuple(label.value for label in FailureLabel)
NONE = "none"
#: Depth buckets of the depth matrix; deeper ones are pooled in the last.
DEPTHS = 10


@dataclass(frozen=True)
class Miss:
    record: PrefixRecord
    why: str

    def describe(self) -> str:
        r = self.record
        m = r.metadata
        return (
            f"{r.method} {r.task_id}: {m.get('operator', 'clean')} ({m.get('detail', 'ground truth')}) "
            f"-> {self.why}; scorer said: {r.reason or 'executable'}"
        )


@dataclass(frozen=True)
class Calibration:
    """``labels[(row, detected)]``: counts, where a row is ``operator: injected -> expected`` or ``clean``;
    ``depths[(injected, detected)]``: counts over faulty rollouts (bucketed at :data:`DEPTHS`)."""

    labels: Counter[tuple[str, str]]
    depths: Counter[tuple[int, int]]
    rows: tuple[str, ...]
    misses: tuple[Miss, ...]
    total: int

    @property
    def ok(self) -> bool:
        return not self.misses


def _bucket(depth: int) -> int:
    return min(depth, DEPTHS)


def calibrate(records: Sequence[PrefixRecord]) -> Calibration:
    labels: Counter[tuple[str, str]] = Counter()
    depths: Counter[tuple[int, int]] = Counter()
    rows: dict[str, None] = {}
    misses: list[Miss] = []
    for r in records:
        m = r.metadata
        detected = r.label.value if r.label else NONE
        if "operator" not in m:
            rows.setdefault("clean (ground truth)")
            labels[("clean (ground truth)", detected)] += 1
            if not r.executable:
                misses.append(Miss(r, f"false alarm at step {r.fed}"))
            continue
        row = f"{m['operator']}: {m['injected_label']} -> {m['expected_label']}"
        rows.setdefault(row)
        labels[(row, detected)] += 1
        depths[(_bucket(int(m["injected_depth"])), _bucket(r.fed))] += 1
        if detected != m["expected_label"] or r.fed != m["injected_depth"]:
            misses.append(
                Miss(r, f"expected {m['expected_label']} at step {m['injected_depth']}, got {detected} at step {r.fed}")
            )
    order = sorted(rows, key=lambda row: (row.startswith("clean"), _label_rank(row), row))
    return Calibration(labels, depths, tuple(order), tuple(misses), len(records))


def _label_rank(row: str) -> int:
    injected = row.split(": ", 1)[-1].split(" ->")[0]
    return LABELS.index(injected) if injected in LABELS else len(LABELS)


def render(cal: Calibration) -> str:
    """Both matrices as fixed-width text for the terminal."""
    cols = (*LABELS, NONE)
    width = max(len(r) for r in cal.rows) + 2
    lines = [
        "Calibration: injected (operator: injected label -> expected label) vs detected first-failure label",
        " " * width + " ".join(f"{c:>17}" for c in cols),
    ]
    for row in cal.rows:
        lines.append(f"{row:<{width}}" + " ".join(f"{cal.labels.get((row, c), 0) or '.':>17}" for c in cols))
    depth_cols = range(1, DEPTHS + 1)
    lines += [
        "",
        "Calibration: injected depth (rows) vs detected FED (columns); 10 = 10 or deeper",
        " " * 10 + "".join(f"{d:>6}" for d in depth_cols),
    ]
    for d in depth_cols:
        counts = [cal.depths.get((d, f), 0) for f in depth_cols]
        if any(counts):
            lines.append(f"{d:>8}  " + "".join(f"{c or '.':>6}" for c in counts))
    verdict = (
        "every fault caught with its expected label at its injected depth, no false alarm"
        if cal.ok
        else f"{len(cal.misses)} MISSED OR MISLABELLED"
    )
    lines += ["", f"{cal.total} rollouts: {verdict}."]
    by_design = [
        row for row in cal.rows if "->" in row and row.split(": ", 1)[1].split(" -> ")[0] != row.split(" -> ")[1]
    ]
    if by_design:
        lines.append(
            "Off the diagonal by design (the scorer cannot tell these apart; see docs/demo.md): "
            + ", ".join(row.split(":")[0] for row in by_design)
            + "."
        )
    return "\n".join(lines) + "\n"
