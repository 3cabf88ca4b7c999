"""How a report is laid out: blocks (dataset x model), method order, and the HTML anchors of conditions.

Every table and the HTML page use these, so a Table 2 cell and the rollouts it links to agree on one id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from prefix_exec.analysis.selection import Condition
from prefix_exec.analysis.summary import ConditionSummary, Summary
from prefix_exec.methods import Method, method_key, method_of

#: The paper's method order; a record's method name is matched by :func:`~prefix_exec.methods.method_of`.
#: Others (guarded-react, unknown names) follow, alphabetically by :func:`~prefix_exec.methods.method_key`.
METHOD_ORDER = (Method.REACT, Method.PROMPT_PLANNING, Method.PLAN_CONDITIONED, Method.DUAL_LOOP)
#: Largest depth drawn for BFCL datasets in Figure 1 (the paper's panels show k <= 10).
BFCL_MAX_DEPTH = 10


def is_plan_conditioned(name: str) -> bool:
    return method_of(name) is Method.PLAN_CONDITIONED


def is_dual_loop(name: str) -> bool:
    return method_of(name) is Method.DUAL_LOOP


def method_rank(name: str) -> tuple[int, str]:
    method = method_of(name)
    rank = METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER)
    return (rank, method_key(name))


@dataclass(frozen=True)
class Block:
    """One dataset x model block of Table 2 (``rows`` in method order), or with ``leaderboard`` set, every
    condition of one dataset across models (``model`` is empty; ``rows`` by final success, best first)."""

    dataset: str
    model: str
    rows: tuple[ConditionSummary, ...]
    leaderboard: bool = False

    @property
    def label(self) -> str:
        return f"{self.dataset} / all models" if self.leaderboard else f"{self.dataset} / {self.model}"

    def name(self, c: ConditionSummary) -> str:
        """How a row is named inside the block: its method, or ``model/method`` on a leaderboard."""
        return f"{c.model}/{c.method}" if self.leaderboard else c.method


def tagged_rows[Row](
    blocks: Iterable[Block], rows_of: Callable[[Block], Iterable[Row]]
) -> tuple[tuple[Row, ...], tuple[str, ...]]:
    """The rows ``rows_of`` gives for each block in turn, and for each row its block's label (its tag).

    A table of one row per condition (or per chosen condition) of each block is built this way; its
    renderers group the rows under those labels.
    """
    rows: list[Row] = []
    tags: list[str] = []
    for block in blocks:
        for row in rows_of(block):
            rows.append(row)
            tags.append(block.label)
    return tuple(rows), tuple(tags)


def blocks_of(summary: Summary) -> list[Block]:
    """Blocks sorted by dataset then model; methods within a block in :data:`METHOD_ORDER`."""
    keys = sorted({(c.dataset, c.model) for c in summary.conditions})
    out = []
    for dataset, model in keys:
        rows = [c for c in summary.conditions if (c.dataset, c.model) == (dataset, model)]
        out.append(Block(dataset, model, tuple(sorted(rows, key=lambda c: method_rank(c.method)))))
    return out


def leaderboard_blocks(summary: Summary) -> list[Block]:
    """One block per dataset that holds two or more models: all its conditions, best final success first
    (ties: higher AUC-PEC, then model name and method order; conditions without a recorded Y last)."""
    out = []
    for dataset in sorted({c.dataset for c in summary.conditions}):
        rows = [c for c in summary.conditions if c.dataset == dataset]
        if len({c.model for c in rows}) < 2:
            continue
        rows.sort(
            key=lambda c: (
                c.success is None,
                -round(c.success.point, 2) if c.success is not None else 0.0,
                -round(c.AUC_PEC.point, 2),
                c.model,
                method_rank(c.method),
            )
        )
        out.append(Block(dataset, "", tuple(rows), leaderboard=True))
    return out


def ranked_by_success(block: Block) -> bool:
    """Whether every condition of ``block`` has a final success to rank by (Y recorded for some record)."""
    return all(c.success is not None for c in block.rows)


def ordered_conditions(summary: Summary) -> list[ConditionSummary]:
    return [c for block in blocks_of(summary) for c in block.rows]


class Anchors:
    """Stable HTML ids: ``c<i>`` for the i-th condition in report order, ``c<i>-<label>`` for its rollouts
    whose first failure has that label (``c<i>-executable`` for fully executable ones)."""

    def __init__(self, conditions: Iterable[Condition]) -> None:
        self._ids = {cond: f"c{i}" for i, cond in enumerate(conditions)}

    @classmethod
    def of(cls, summary: Summary) -> Anchors:
        return cls(c.condition for c in ordered_conditions(summary))

    def condition(self, cond: Condition) -> str:
        return self._ids[cond]

    def label(self, cond: Condition, label: str | None) -> str:
        return f"{self._ids[cond]}-{label or 'executable'}"

    def rollout(self, cond: Condition, index: int) -> str:
        return f"{self._ids[cond]}-r{index}"


def is_bfcl(dataset: str) -> bool:
    return dataset.lower().startswith("bfcl")


#: Elsewhere the x-axis of Figure 1 stops at this percentile of the dataset's rollout lengths T.
T_PERCENTILE = 95


@dataclass(frozen=True)
class DepthCut:
    """Where Figure 1's x-axis stops for one dataset, and why (shown in the panel title)."""

    k_max: int
    reason: str


def depth_cut(dataset: str, rows: Sequence[ConditionSummary]) -> DepthCut:
    """k_max for a dataset's curves: BFCL's 10 (the paper's panels), else the 95th percentile of T over all
    the dataset's rollouts in ``rows`` (from their n_k counts: n_k = #{T >= k}), so that one very long
    rollout does not squeeze every curve into the first tenth of the axis. BFCL's panel always runs to 10
    (PEC is 0 beyond the longest T); the others never go beyond the longest T."""
    longest = max(len(c.PEC) for c in rows)
    if is_bfcl(dataset):
        return DepthCut(BFCL_MAX_DEPTH, f"k ≤ {BFCL_MAX_DEPTH}, as in the paper")
    total = sum(c.N for c in rows)
    # fraction of rollouts with T > k is n_{k+1} / N; the percentile is the first k where it is <= 5%
    for k in range(1, longest + 1):
        longer = sum(c.n_k[k] for c in rows if k < len(c.n_k))
        if k < longest and longer <= total * (100 - T_PERCENTILE) / 100:
            return DepthCut(k, f"k ≤ {k}, the {T_PERCENTILE}th percentile of T (max T {longest})")
    return DepthCut(longest, f"every depth, k ≤ {longest}")
