"""The run's progress display: a tqdm bar on a terminal, a status line every ``interval_s`` elsewhere.

Under nohup, Slurm or CI, stderr is a file and a bar would be one long line of carriage returns, so the
runner prints plain lines there instead (also on a terminal of unknown width, where tqdm draws nothing).
Both show units done of all units (including those a ``--resume`` found finished), units failed, tokens
and cost so far, retries, the ETA of what is left, and the requests in flight per role with the oldest one's
age (:mod:`prefix_exec.llm.inflight`: a local model takes minutes a request, and a run whose only line was
"0/4 units done" for minutes looked stuck). The bar's clock and the requests in flight are redrawn every
second; off a terminal a line is printed every minute.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, TextIO

from tqdm import tqdm

from prefix_exec.llm.inflight import IN_FLIGHT, describe
from prefix_exec.terminal import draws_bars, unescaped


class Tally(Protocol):
    """Running totals of a run (:class:`prefix_exec.runner.run_report.RunReport`)."""

    written: int
    failed: int
    tokens: int
    usd: float
    retries: int


class Progress:
    """``update()`` after each finished unit; ``close()`` at the end. ``total`` counts every unit of the grid,
    ``initial`` those already finished before this process started; ``tally`` holds the running totals.

    Off a terminal a daemon thread prints a status line every ``interval_s`` seconds, also while no unit
    finishes (workers starting, long units), and one line at the start.
    """

    def __init__(self, total: int, initial: int, log: TextIO, tally: Tally, *, interval_s: float = 60.0) -> None:
        self.total, self.initial, self.log, self.tally, self.interval_s = total, initial, log, tally, interval_s
        self.started = time.monotonic()
        self.bar: tqdm[None] | None = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._lock = threading.Lock()  # the bar is drawn by the ticker and by update()
        if draws_bars(log):
            # tqdm draws with \r and escapes: the stream under the CLI's escaping (it writes no input text)
            self.bar = tqdm(total=total, initial=initial, desc="units", unit="unit", file=unescaped(log), smoothing=0.1)
            self._ticker = threading.Thread(target=self._redraw, name="progress", daemon=True)
        else:
            print(f"prefix-exec run: {total} units, {initial} already done; starting", file=log, flush=True)
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
        self._ticker.start()

    def update(self) -> None:
        if self.bar is not None:
            with self._lock:
                self._postfix()
                self.bar.update(1)

    def _postfix(self) -> None:
        assert self.bar is not None
        t = self.tally
        self.bar.set_postfix_str(
            f"failed={t.failed}, tokens={t.tokens}, usd={t.usd:.2f}, retries={t.retries}, "
            f"in flight: {describe(IN_FLIGHT.snapshot())}",
            refresh=False,
        )

    def _redraw(self) -> None:
        """Redraw the bar every second: tqdm redraws only on an update, and a unit can take many minutes."""
        while not self._stop.wait(1.0):
            with self._lock:
                if self.bar is not None:
                    self._postfix()
                    self.bar.refresh()

    def _tick(self) -> None:
        while not self._stop.wait(self.interval_s):
            print(self.line(time.monotonic()), file=self.log, flush=True)

    def line(self, now: float) -> str:
        t = self.tally
        finished = t.written + t.failed
        left = self.total - self.initial - finished
        elapsed = now - self.started
        eta = f"ETA {_clock(elapsed / finished * left)}" if finished else "ETA unknown"
        return (
            f"prefix-exec run: {self.initial + t.written}/{self.total} units done, {t.failed} failed, "
            f"{t.tokens} tokens, ${t.usd:.2f}, {t.retries} retries, {_clock(elapsed)} elapsed, {eta}; "
            f"requests in flight: {describe(IN_FLIGHT.snapshot())}"
        )

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.bar is not None:
            self.bar.close()


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
