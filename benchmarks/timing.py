"""The benchmarks' timer: the median wall time of repeated runs, which a shared, noisy machine disturbs least."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_run[T](run: Callable[[], T], repeats: int) -> tuple[float, T]:
    """The median wall time, in seconds, of ``repeats`` calls of ``run`` (at least one), and the last result."""
    times: list[float] = []
    while True:
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
        if len(times) >= repeats:
            return statistics.median(times), result
