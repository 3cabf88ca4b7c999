"""Per-condition results with intervals: the numbers behind Table 2, Figure 1 and Table G.1.

A *condition* is one (dataset, model, method). Rows of all conditions of a dataset share one task-level
resample-count matrix, so every interval and every paired difference within a dataset uses the same draws.
Any two conditions of one dataset can be compared (:meth:`Summary.paired`, named by the selectors of
:mod:`prefix_exec.analysis.selection`): the difference is taken over the tasks the two have in common, on those same
draws. :func:`to_json` is the machine-readable form of a summary.

A dataset of several domains (tau3: airline + retail, task ids ``airline/18``) is one condition per (model,
method) over all its tasks, as the paper reports it; :attr:`Summary.domains` adds each domain on its own as an
extra view (:mod:`prefix_exec.envs.tau.pooled`).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from prefix_exec.analysis import metrics
from prefix_exec.analysis.rows import MetricRow
from prefix_exec.analysis.selection import Condition, Selector, pair_conditions
from prefix_exec.analysis.stats import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    Estimate,
    bootstrap_replicates,
    dataset_rng,
    estimates,
    paired_difference,
    wilson_interval,
)
from prefix_exec.analysis.sums import (
    SCALARS,
    Arrays,
    TaskSums,
    condition_sums,
    denominator_columns,
    statistic_names,
    task_sums,
)
from prefix_exec.envs.tau.pooled import view_name
from prefix_exec.json_types import JsonObject

#: Depths k = 1..DEFAULT_CI_DEPTH get a bootstrap interval for PEC(k) (the paper's checkpoints).
DEFAULT_CI_DEPTH = 10


@dataclass(frozen=True)
class ConditionSummary:
    """Every reported quantity of one condition. Curves are lists indexed from k = 1.

    ``RR`` is ``None`` when ``RR_eligible`` is 0: recovery is undefined, not zero. ``PEC_elig`` holds
    ``None`` where ``n_k`` is 0. ``PEC_CI`` covers k = 1..min(ci_depth, len(PEC)).

    Y may be absent (not recorded) for some records: ``success_known`` of the ``N`` have it, and ``RR_known`` of
    the ``RR_eligible``. ``success``, ``RR`` and ``decomposition`` are over those records only, and ``None`` (absent,
    never 0) when there are none; TER, AUC-PEC, mean FED and the curves use all ``N``.
    """

    dataset: str
    model: str
    method: str
    N: int
    n_tasks: int
    TER: Estimate
    AUC_PEC: Estimate
    mean_FED: Estimate
    success: Estimate | None
    success_known: int
    RR: Estimate | None
    RR_eligible: int
    RR_successes: int
    RR_known: int
    mean_T: float
    PEC: tuple[float, ...]
    PEC_CI: tuple[Estimate, ...]
    PEC_elig: tuple[float | None, ...]
    n_k: tuple[int, ...]
    decomposition: metrics.Decomposition | None
    labels: dict[str, int] = field(default_factory=dict)

    @property
    def condition(self) -> Condition:
        return (self.dataset, self.model, self.method)

    def as_dict(self) -> JsonObject:
        d = self.decomposition
        return {
            "dataset": self.dataset,
            "model": self.model,
            "method": self.method,
            "N": self.N,
            "n_tasks": self.n_tasks,
            "TER": self.TER.as_dict(),
            "AUC_PEC": self.AUC_PEC.as_dict(),
            "mean_FED": self.mean_FED.as_dict(),
            "mean_T": self.mean_T,
            "success": self.success.as_dict() if self.success else None,
            "success_known": self.success_known,
            "RR": self.RR.as_dict() if self.RR else None,
            "RR_eligible": self.RR_eligible,
            "RR_successes": self.RR_successes,
            "RR_known": self.RR_known,
            "PEC": list(self.PEC),
            "PEC_CI": [e.as_dict() for e in self.PEC_CI],
            "PEC_elig": list(self.PEC_elig),
            "n_k": list(self.n_k),
            "decomposition": {"q": d.q, "s": d.s, "r": d.r, "success": d.success} if d else None,
            "labels": dict(self.labels),
        }


@dataclass(frozen=True)
class Summary:
    """All conditions, plus the bootstrap replicates needed for paired differences.

    ``replicates[condition]`` maps a statistic name (``TER``, ``AUC_PEC``, ``mean_FED``, ``success``,
    ``PEC@k``) to its (resamples,) replicate vector. ``task_sums[condition]`` holds the per-task sums the
    replicates came from; ``tasks[dataset]`` the dataset's sorted task ids (the columns of its draws).
    """

    conditions: tuple[ConditionSummary, ...]
    resamples: int
    seed: int
    level: float
    replicates: dict[Condition, dict[str, np.ndarray]] = field(repr=False)
    task_sums: dict[Condition, TaskSums] = field(repr=False, default_factory=dict)
    tasks: dict[str, tuple[str, ...]] = field(repr=False, default_factory=dict)
    #: The extra per-domain view of pooled datasets (:mod:`prefix_exec.envs.tau.pooled`): a summary of its own whose
    #: datasets are ``<dataset>-<domain>``, each domain bootstrapped on its own tasks; ``None`` when no
    #: dataset holds two or more domains.
    domains: Summary | None = field(repr=False, default=None)

    def get(self, dataset: str, model: str, method: str) -> ConditionSummary:
        for c in self.conditions:
            if c.condition == (dataset, model, method):
                return c
        raise KeyError(f"no condition dataset={dataset} model={model} method={method}")

    def difference(self, a: Condition, b: Condition, statistic: str) -> Estimate:
        """Paired difference a - b of one statistic over the two conditions' common tasks (see
        :meth:`compare_conditions`)."""
        return self.compare_conditions(a, b, (statistic,)).differences[statistic]

    def compare_conditions(self, a: Condition, b: Condition, statistics: Sequence[str] = SCALARS) -> PairedComparison:
        """Differences a - b of two conditions of one dataset, each with a percentile CI.

        Both sides are restricted to the tasks the two conditions have in common and computed on the
        dataset's shared task draws (the same resample-count matrix every interval of the dataset uses), so
        the difference is paired. When both ran the same tasks this is the difference of their replicates.
        A statistic a resample cannot form (no common task drawn; for success, no known Y drawn on a side) is
        left out of that replicate's interval. A success difference where a side has no known Y on the common
        tasks is undefined (NaN) and named in :attr:`PairedComparison.unrecorded`.
        """
        if a[0] != b[0]:
            raise ValueError(f"paired differences need one dataset, got {a[0]!r} and {b[0]!r}")
        ra, rb = self.replicates[a], self.replicates[b]
        for statistic in statistics:
            if statistic not in ra or statistic not in rb:
                raise KeyError(f"statistic {statistic!r} is not bootstrapped; choose from {sorted(ra)}")
        sa, sb = self.task_sums[a], self.task_sums[b]
        common = sa.tasks() & sb.tasks()
        n_common = int(common.sum())
        nan = float("nan")
        if n_common == 0:
            return PairedComparison(a[0], a, b, 0, {s: Estimate(nan, nan, nan) for s in statistics})
        if np.array_equal(sa.tasks(), sb.tasks()):
            diffs = {
                s: paired_difference(_point(self.get(*a), s), ra[s], _point(self.get(*b), s), rb[s], self.level)
                for s in statistics
            }
        else:
            diffs = self._restricted(a, b, statistics, common)
        unrecorded = tuple(
            s
            for s in statistics
            if not (sa.denominator(s)[common].sum() and sb.denominator(s)[common].sum())  # no known Y on a side
        )
        diffs.update({s: Estimate(nan, nan, nan) for s in unrecorded})
        return PairedComparison(a[0], a, b, n_common, diffs, unrecorded)

    def _restricted(
        self, a: Condition, b: Condition, statistics: Sequence[str], common: np.ndarray
    ) -> dict[str, Estimate]:
        """Differences a - b on the tasks ``common`` only (a mask over the dataset's tasks), on the same draws."""
        sa, sb = self.task_sums[a], self.task_sums[b]
        cols = [sa.names.index(s) for s in statistics]
        num = np.concatenate([sa.numerators[:, cols], sb.numerators[:, cols]], axis=1) * common[:, None]
        counts = [side.denominator(s) for side in (sa, sb) for s in statistics]
        den = np.column_stack(counts) * common[:, None]  # a count column per statistic: success counts known Ys
        point, reps = bootstrap_replicates(
            len(self.tasks[a[0]]), self.resamples, dataset_rng(self.seed, a[0]), num, den
        )
        m = len(cols)
        return {
            s: paired_difference(float(point[i]), reps[:, i], float(point[m + i]), reps[:, m + i], self.level)
            for i, s in enumerate(statistics)
        }

    def paired(self, a: Selector, b: Selector, statistics: Sequence[str] = SCALARS) -> list[PairedComparison]:
        """Paired differences ``a - b``: one per dataset (or per (dataset, model) block) where the two
        selectors name one condition each. A selector is a model, a method, ``model/method`` or a
        (dataset, model, method) tuple (see :func:`prefix_exec.analysis.selection.pair_conditions`). An unknown or
        ambiguous selector is an :class:`~prefix_exec.errors.InputError` listing the candidates."""
        pairs = pair_conditions([c.condition for c in self.conditions], a, b)
        return [self.compare_conditions(x, y, statistics) for x, y in pairs]


@dataclass(frozen=True)
class PairedComparison:
    """Differences a - b of two conditions of one dataset over their ``common_tasks`` shared tasks, each
    with a CI from the dataset's shared task draws. Undefined (NaN) when they share no task."""

    dataset: str
    a: Condition
    b: Condition
    common_tasks: int
    differences: dict[str, Estimate]
    #: Statistics left undefined because a side records no Y on the common tasks (``success``).
    unrecorded: tuple[str, ...] = ()

    def as_dict(self) -> JsonObject:
        doc: JsonObject = {
            "dataset": self.dataset,
            "a": {"model": self.a[1], "method": self.a[2]},
            "b": {"model": self.b[1], "method": self.b[2]},
            "common_tasks": self.common_tasks,
            "differences": {k: v.as_dict() for k, v in self.differences.items()},
        }
        if self.unrecorded:
            doc["unrecorded"] = list(self.unrecorded)
        return doc


def to_json(summary: Summary, comparisons: Sequence[PairedComparison] | None = None) -> str:
    """The summary as JSON: ``resamples``, ``seed``, ``level``, one object per condition
    (:meth:`ConditionSummary.as_dict`), and ``paired`` (:meth:`PairedComparison.as_dict`) when given.

    Per condition: ``N``; ``TER``, ``AUC_PEC``, ``mean_FED`` and ``success`` as ``{point, low, high}``;
    ``RR`` as ``{point, low, high}`` or null (undefined when nothing failed); ``RR_eligible``; ``PEC``,
    ``PEC_elig`` and ``n_k`` as lists from k = 1. Undefined numbers are null. ``per_domain`` holds the
    conditions of the per-domain view (:attr:`Summary.domains`) when there is one.
    """
    doc: JsonObject = {
        "resamples": summary.resamples,
        "seed": summary.seed,
        "level": summary.level,
        "conditions": [c.as_dict() for c in summary.conditions],
    }
    if summary.domains is not None:
        doc["per_domain"] = [c.as_dict() for c in summary.domains.conditions]
    if comparisons is not None:
        doc["paired"] = [p.as_dict() for p in comparisons]
    return json.dumps(doc, indent=2)


def _point(c: ConditionSummary, statistic: str) -> float:
    if statistic.startswith("PEC@"):
        return c.PEC[int(statistic[4:]) - 1]
    value: Estimate | None = getattr(c, statistic)
    return value.point if value is not None else float("nan")  # a success with no known Y


def summarize(
    rows: Iterable[MetricRow],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    ci_depth: int = DEFAULT_CI_DEPTH,
) -> Summary:
    """Point estimates and intervals for every (dataset, model, method) in ``rows``.

    Bootstrapped (task-level percentile, ``resamples`` draws, seeded per dataset): TER, AUC-PEC, mean FED,
    final success and PEC(k) for k <= ``ci_depth``. RR gets a Wilson interval on its RR-Eligible count.
    Curves run to the largest T in the dataset so conditions of one dataset align.

    A dataset whose rows name two or more domains (``MetricRow.domain``: tau3's airline and retail) is
    summarized pooled, over the distinct (domain-qualified) task ids of all its domains, and again per domain
    in :attr:`Summary.domains`, whose datasets ``<dataset>-<domain>`` get their own draws.
    """
    rows = list(rows)
    main = _summarize(rows, resamples=resamples, seed=seed, level=level, ci_depth=ci_depth)
    pooled: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        if row.domain is not None:
            pooled[row.dataset].add(row.domain)
    split = [
        replace(row, dataset=view_name(row.dataset, row.domain))
        for row in rows
        if row.domain is not None and len(pooled[row.dataset]) > 1
    ]
    if not split:
        return main
    view = _summarize(split, resamples=resamples, seed=seed, level=level, ci_depth=ci_depth)
    return replace(main, domains=view)


def _summarize(rows: Sequence[MetricRow], *, resamples: int, seed: int, level: float, ci_depth: int) -> Summary:
    by_dataset: dict[str, list[MetricRow]] = defaultdict(list)
    for row in rows:
        by_dataset[row.dataset].append(row)
    if not by_dataset:
        raise ValueError("no rows to summarize")
    out: list[ConditionSummary] = []
    replicates: dict[Condition, dict[str, np.ndarray]] = {}
    sums: dict[Condition, TaskSums] = {}
    tasks: dict[str, tuple[str, ...]] = {}
    for dataset in sorted(by_dataset):
        summaries, reps, dataset_sums = _summarize_dataset(
            dataset, by_dataset[dataset], resamples, dataset_rng(seed, dataset), level, ci_depth
        )
        out.extend(summaries)
        replicates.update(reps)
        sums.update(dataset_sums)
        tasks[dataset] = tuple(sorted({r.task_id for r in by_dataset[dataset]}))
    return Summary(tuple(out), resamples, seed, level, replicates, sums, tasks)


def _summarize_dataset(
    dataset: str,
    rows: Sequence[MetricRow],
    resamples: int,
    rng: np.random.Generator,
    level: float,
    ci_depth: int,
) -> tuple[list[ConditionSummary], dict[Condition, dict[str, np.ndarray]], dict[Condition, TaskSums]]:
    tasks = sorted({r.task_id for r in rows})
    groups: dict[Condition, list[MetricRow]] = defaultdict(list)
    for r in rows:
        groups[r.condition].append(r)
    conditions = sorted(groups)
    max_t = max(r.T for r in rows)
    depth = min(ci_depth, max_t)
    names = statistic_names(depth)
    width = len(names)
    num, den, arrays = task_sums(tasks, [groups[cond] for cond in conditions], depth)

    counted_by = denominator_columns(names, len(conditions))  # success: over the known Ys of each resample
    point, reps = bootstrap_replicates(len(tasks), resamples, rng, num, den, groups=counted_by)
    est = estimates(point, reps, level)

    summaries: list[ConditionSummary] = []
    rep_map: dict[Condition, dict[str, np.ndarray]] = {}
    sums: dict[Condition, TaskSums] = {}
    for c_i, cond in enumerate(conditions):
        sums[cond] = condition_sums(names, num, den, c_i)
        block = dict(zip(names, est[c_i * width : (c_i + 1) * width], strict=True))
        rep_map[cond] = {name: reps[:, c_i * width + j] for j, name in enumerate(names)}
        summaries.append(_condition_summary(cond, groups[cond], arrays[c_i], block, max_t, depth, level))
    return summaries, rep_map, sums


def _condition_summary(
    cond: Condition,
    group: Sequence[MetricRow],
    arrays: Arrays,
    block: dict[str, Estimate],
    max_t: int,
    depth: int,
    level: float,
) -> ConditionSummary:
    """One condition's summary from its rows, their ``(fed, T, y)`` arrays and its bootstrapped estimates
    (``block``, by statistic name); curves run to ``max_t``, the dataset's largest T. Success, RR and the
    decomposition are over the rows whose Y is known (RR's Wilson interval on those of the RR-Eligible), and
    ``None`` without any."""
    fed, T, y = arrays
    rec = metrics.recovery(fed, T, y)
    wilson = wilson_interval(rec.successes, rec.known, level)
    known = int(metrics.known(y).sum())
    elig = metrics.pec_elig(fed, T, max_t)
    return ConditionSummary(
        dataset=cond[0],
        model=cond[1],
        method=cond[2],
        N=len(fed),
        n_tasks=len({r.task_id for r in group}),
        TER=block["TER"],
        AUC_PEC=block["AUC_PEC"],
        mean_FED=block["mean_FED"],
        success=block["success"] if known else None,
        success_known=known,
        RR=Estimate(rec.rate, *wilson) if rec.rate is not None and wilson else None,
        RR_eligible=rec.eligible,
        RR_successes=rec.successes,
        RR_known=rec.known,
        mean_T=float(T.mean()),
        PEC=tuple(float(v) for v in metrics.pec(fed, T, max_t)),
        PEC_CI=tuple(block[f"PEC@{k}"] for k in range(1, depth + 1)),
        PEC_elig=tuple(None if np.isnan(v) else float(v) for v in elig),
        n_k=tuple(int(v) for v in metrics.n_k(T, max_t)),
        decomposition=metrics.decompose(fed, T, y),
        labels=dict(Counter(r.label for r in group if r.label)),
    )
