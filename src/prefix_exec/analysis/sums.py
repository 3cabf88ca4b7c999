"""Per-task sums: the task-level bootstrap's inputs (:func:`prefix_exec.analysis.stats.bootstrap_replicates`).

Every statistic the protocol bootstraps is a mean of one per-rollout value (:data:`metrics.PER_ROLLOUT`, then
PEC(k)'s survival indicators), so per task it is a sum over the task's rollouts over a count of them. The success
rate's values are absent where Y is (NaN, :func:`metrics.as_arrays`): its sum is over the rollouts whose Y is known
and its count is theirs (:data:`metrics.OVER_KNOWN_Y`), so a resample's success rate is over the known Ys it drew
(NaN when it drew none, which the interval leaves out), never with an absent Y as 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prefix_exec.analysis import metrics
from prefix_exec.analysis.rows import MetricRow

#: Scalar statistics bootstrapped for every condition, in column order (:data:`analysis.metrics.PER_ROLLOUT`).
SCALARS = tuple(metrics.PER_ROLLOUT)
#: One group's ``(fed, T, y)`` arrays (:func:`metrics.as_arrays`: ``y`` NaN where absent).
Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class TaskSums:
    """One condition's per-task sums over its dataset's task list.

    ``numerators[j, s]`` is the sum of statistic ``names[s]`` over the condition's rollouts of task j (over those
    whose Y is known, for :data:`metrics.OVER_KNOWN_Y`); ``denominators[j]`` their count (0 for a task the
    condition did not run) and ``known[j]`` the count of those whose Y is known. Shapes (tasks, statistics),
    (tasks,) and (tasks,).
    """

    names: tuple[str, ...]
    numerators: np.ndarray
    denominators: np.ndarray
    known: np.ndarray

    def tasks(self) -> np.ndarray:
        """Boolean mask (tasks,) of the tasks this condition ran."""
        return self.denominators > 0

    def denominator(self, name: str) -> np.ndarray:
        """The per-task count statistic ``name`` is a mean over: ``known`` for a Y statistic, else every rollout."""
        return self.known if name in metrics.OVER_KNOWN_Y else self.denominators


def statistic_names(depth: int) -> list[str]:
    """The bootstrapped statistics of a dataset: :data:`SCALARS`, then ``PEC@1`` .. ``PEC@depth``."""
    return [*SCALARS, *(f"PEC@{k}" for k in range(1, depth + 1))]


def task_sums(
    tasks: Sequence[str], groups: Sequence[Sequence[MetricRow]], depth: int
) -> tuple[np.ndarray, np.ndarray, list[Arrays]]:
    """Per-task sums of each statistic (numerators: a row per task of ``tasks``, and per group of rows, one column
    per statistic of :func:`statistic_names`) and per-task counts (denominators: two columns per group, its
    rollouts then those whose Y is known); and each group's ``(fed, T, y)`` arrays."""
    task_index = {t: j for j, t in enumerate(tasks)}
    width = len(SCALARS) + depth
    num = np.zeros((len(tasks), width * len(groups)))
    den = np.zeros((len(tasks), 2 * len(groups)))
    arrays: list[Arrays] = []
    for c_i, group in enumerate(groups):
        fed, T, y = metrics.as_arrays(
            [r.fed for r in group], [r.T for r in group], metrics.outcomes(r.success for r in group)
        )
        arrays.append((fed, T, y))
        per_rollout = [metrics.PER_ROLLOUT[name](fed, T, y) for name in SCALARS]
        values = np.column_stack([*per_rollout, metrics.survival_matrix(fed, depth)]).astype(np.float64)
        ti = np.array([task_index[r.task_id] for r in group])
        cols = slice(c_i * width, (c_i + 1) * width)
        np.add.at(num[:, cols], ti, np.nan_to_num(values, nan=0.0))  # an absent Y adds nothing, and is not counted
        np.add.at(den[:, 2 * c_i], ti, 1.0)
        np.add.at(den[:, 2 * c_i + 1], ti, metrics.known(y).astype(np.float64))
    return num, den, arrays


def denominator_columns(names: Sequence[str], groups: int) -> np.ndarray:
    """For each statistic column of :func:`task_sums`'s numerators (``groups`` blocks of ``names``), the column of
    its denominators that counts it (the ``groups`` argument of :func:`stats.bootstrap_ratios`)."""
    offsets = np.array([1 if name in metrics.OVER_KNOWN_Y else 0 for name in names], dtype=np.int64)
    return np.asarray((2 * np.arange(groups, dtype=np.int64)[:, None] + offsets[None, :]).ravel())


def condition_sums(names: Sequence[str], num: np.ndarray, den: np.ndarray, c_i: int) -> TaskSums:
    """Group ``c_i``'s :class:`TaskSums` out of :func:`task_sums`'s matrices."""
    width = len(names)
    return TaskSums(tuple(names), num[:, c_i * width : (c_i + 1) * width], den[:, 2 * c_i], den[:, 2 * c_i + 1])
