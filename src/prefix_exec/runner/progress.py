"""The run's progress display: a tqdm bar on a terminal, a status line every ``interval_s`` elsewhere.

Under nohup, Slurm or CI, stderr is a file and a bar would be one long line of carriage returns, so the
runner prints plain lines there instead. Both show units done of all units (including those a ``--resume``
found finished), units failed, tokens and cost so far, retries and the ETA of what is left.
"""

from __future__ import annotations

import time
from typing import Protocol, TextIO

from tqdm import tqdm


class Tally(Protocol):
    """Running totals of a run (:class:`prefix_exec.runner.run.RunReport`)."""

    written: int
    failed: int
    tokens: int
    usd: float
    retries: int


class Progress:
    """``update()`` after each finished unit; ``close()`` at the end. ``total`` counts every unit of the grid,
    ``initial`` those already finished before this process started."""

    def __init__(self, total: int, initial: int, log: TextIO, *, interval_s: float = 30.0) -> None:
        self.total, self.initial, self.log, self.interval_s = total, initial, log, interval_s
        self.started = self.last = time.monotonic()
        self.bar: tqdm[None] | None = None
        if _is_terminal(log):
            self.bar = tqdm(total=total, initial=initial, desc="units", unit="unit", file=log, smoothing=0.1)

    def update(self, tally: Tally) -> None:
        if self.bar is not None:
            self.bar.set_postfix(failed=tally.failed, tokens=tally.tokens, usd=f"{tally.usd:.2f}",
                                 retries=tally.retries, refresh=False)
            self.bar.update(1)
            return
        now = time.monotonic()
        if now - self.last >= self.interval_s:
            self.last = now
            print(self.line(tally, now), file=self.log, flush=True)

    def line(self, tally: Tally, now: float) -> str:
        finished = tally.written + tally.failed
        left = self.total - self.initial - finished
        elapsed = now - self.started
        eta = f"ETA {_clock(elapsed / finished * left)}" if finished else "ETA unknown"
        return (f"prefix-exec run: {self.initial + tally.written}/{self.total} units done, {tally.failed} failed, "
                f"{tally.tokens} tokens, ${tally.usd:.2f}, {tally.retries} retries, {_clock(elapsed)} elapsed, {eta}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
