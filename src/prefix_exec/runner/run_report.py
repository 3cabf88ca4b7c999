"""What a run did and what it cost: :class:`RunReport` (the line ``prefix-exec run`` prints last, and the running
totals its progress bar shows), each rollout's LLM calls priced by the grid model that made them
(:func:`charge`, :func:`call_prices`).
"""

from __future__ import annotations

from dataclasses import dataclass

from prefix_exec.agents.episode import USAGE_READ_AS_0
from prefix_exec.records.values import metadata_count, note_zeroed
from prefix_exec.runner.grid import Grid
from prefix_exec.trajectory import Rollout

#: The run directory's file of failed units (:mod:`.run_dir`; the report's line names it).
FAILURES = "failures.jsonl"


@dataclass
class RunReport:
    planned: int = 0
    written: int = 0
    failed: int = 0
    resumed: int = 0
    rescored: int = 0
    tokens: int = 0
    usd: float = 0.0
    retries: int = 0
    seconds: float = 0.0
    aborted: str = ""
    #: Answers whose server-reported token counts no call can have (read as 0): ``metadata.usage_read_as_0``.
    usage_read_as_0: int = 0

    def describe(self) -> str:
        """What the run did, in one line (``prefix-exec run`` prints it last)."""
        text = (
            f"{self.written} of {self.planned} units written in {self.seconds:.1f} s; the run holds "
            f"{self.tokens} agent tokens"
        )
        # Each clause only when its count (or reason) is non-zero, in this order.
        clauses = (
            (self.usd, f", ${self.usd:.2f}"),
            (self.retries, f", {self.retries} LLM requests retried (429/5xx/408/409/timeouts/connection/bad answers)"),
            (self.resumed, f"; {self.resumed} already done (--resume)"),
            (self.rescored, f"; {self.rescored} rollouts scored from the file"),
            (self.failed, f"; {self.failed} failed (see {FAILURES}; --resume retries them)"),
            (
                self.usage_read_as_0,
                f"; {self.usage_read_as_0} answers had token counts no call can have in their usage, read as 0 "
                "(metadata.usage_read_as_0)",
            ),
            (self.aborted, f"; stopped early: {self.aborted}"),
        )
        return text + "".join(clause for shown, clause in clauses if shown)


def charge(report: RunReport, grid: Grid, rollout: Rollout, where: tuple[str, int] | None = None) -> None:
    """Add the rollout's retries, and the tokens and price of its LLM calls, to the run's totals. A rollout read
    from ``where`` (file, line) whose ``metadata.retries`` no rollout can have (negative, not an integer, past
    :data:`~prefix_exec.records.values.MAX_COUNT`: an older version or another tool wrote it) adds 0, noted
    (:func:`~prefix_exec.records.values.note_zeroed`)."""
    raw = rollout.metadata.get("retries", 0)
    retries = metadata_count(raw)
    if retries is None:
        path, line = where if where is not None else (None, None)
        note_zeroed(path, line, "metadata.retries", raw, "retry count")
    report.retries += retries or 0
    report.usage_read_as_0 += metadata_count(rollout.metadata.get(USAGE_READ_AS_0, 0)) or 0
    for cost in rollout.cost:
        price_in, price_out = call_prices(grid, rollout.model, cost.model)
        report.tokens += int(cost.prompt_tokens) + int(cost.completion_tokens)
        report.usd += (cost.prompt_tokens * price_in + cost.completion_tokens * price_out) / 1e6


def call_prices(grid: Grid, unit_model: str, call_model: str | None) -> tuple[float, float]:
    """USD per 1M prompt and completion tokens for one LLM call of a unit of ``unit_model``.

    A call is priced by the grid model that made it: ``CallCost.model`` is the served id (``endpoint.model``)
    or a grid name. The unit's own model is tried first, then the verifier model, then the others in grid
    order; a call no grid model matches is charged at the unit model's price.
    """
    unit = grid.model(unit_model)
    candidates = [unit]
    if grid.verifier_model is not None:
        candidates.append(grid.model(grid.verifier_model))
    candidates += [m for m in grid.models if m not in candidates]
    spec = next((m for m in candidates if call_model in (m.name, m.endpoint.model)), unit)
    return spec.usd_per_mtok_prompt, spec.usd_per_mtok_completion
