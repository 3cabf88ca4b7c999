"""Where units run: threads in this process (``local``) or Ray actors (``ray``), one worker each.

Both yield :class:`~prefix_exec.runner.worker.UnitResult` as units finish; only the caller writes files, so
the output never interleaves. Both hold each model's ``max_concurrency`` for the whole run: local workers
share one semaphore per endpoint URL, Ray workers one gate actor per URL (so the cap holds across machines).
Ray is optional (``pip install 'prefix-exec[ray]'``); it joins the cluster in ``RAY_ADDRESS`` when set,
else starts a local instance, unless the caller already called ``ray.init``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.runner.grid import Grid, Unit
from prefix_exec.runner.worker import UnitResult, UnitWorker

EXECUTORS = ("local", "ray")


def run_local(grid: Grid, cache: Path | None, units: Sequence[Unit], concurrency: int) -> Iterator[UnitResult]:
    """Run ``units`` on ``concurrency`` threads, each with its own worker (environments are not shared)."""
    local = threading.local()
    gates = {url: threading.BoundedSemaphore(cap) for url, cap in grid.endpoint_caps().items()}

    def work(unit: Unit) -> UnitResult:
        if not hasattr(local, "worker"):
            local.worker = UnitWorker(grid, cache, gates)
        result: UnitResult = local.worker.run(unit)
        return result

    pending = list(reversed(units))
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="unit")
    running: set[Future[UnitResult]] = set()
    try:
        while pending or running:
            # Submit only what can run now, so a kill leaves at most ``concurrency`` units in flight.
            while pending and len(running) < concurrency:
                running.add(pool.submit(work, pending.pop()))
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                yield future.result()
    finally:
        # Not waiting here lets Ctrl-C reach the caller at once; units still in flight are lost, as with a kill.
        pool.shutdown(wait=False, cancel_futures=True)


def run_ray(grid: Grid, cache: Path | None, units: Sequence[Unit], concurrency: int) -> Iterator[UnitResult]:
    """Run ``units`` on ``concurrency`` Ray actors; each actor process holds one worker.

    A worker process that dies (killed, out of memory, a crash in native code) fails only its unit: the unit
    is reported with the error, the slots it held are given back, and a new worker takes its place.
    """
    try:
        import ray
        from ray.exceptions import RayError
    except ImportError:
        hint = "pip install 'prefix-exec[ray]' (or pip install ray)"
        raise InputError("--executor ray needs Ray", hint=hint) from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), log_to_driver=False)
    gate = ray.remote(num_cpus=0)(_EndpointGate)
    gates: dict[str, Any] = {url: gate.remote(cap) for url, cap in grid.endpoint_caps().items()}
    # Actors wait on the network, not the CPU; a fractional CPU lets --max-concurrency exceed the core count.
    actor = ray.remote(num_cpus=0.01)(_RayWorker)
    spawned = itertools.count()

    def spawn() -> tuple[int, Any]:
        number = next(spawned)
        return number, actor.remote(grid, cache, gates, number)

    idle = [spawn() for _ in range(max(1, min(concurrency, len(units))))]
    pending = list(reversed(units))
    running: dict[Any, tuple[tuple[int, Any], Unit]] = {}
    try:
        while pending or running:
            while pending and idle:
                worker, unit = idle.pop(), pending.pop()
                running[worker[1].run.remote(unit)] = (worker, unit)
            ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                worker, unit = running.pop(ref)
                try:
                    result: UnitResult = ray.get(ref)
                except RayError as exc:
                    for g in gates.values():
                        g.release_all.remote(worker[0])
                    ray.kill(worker[1], no_restart=True)
                    idle.append(spawn())
                    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    yield UnitResult(unit, error=f"the Ray worker died running this unit: {message}")
                    continue
                idle.append(worker)
                yield result
    finally:
        # Ctrl-C or an early stop: end the workers still running (Ray cannot force-cancel actor tasks).
        for worker, _ in running.values():
            with contextlib.suppress(Exception):
                ray.kill(worker[1], no_restart=True)


class _EndpointGate:
    """A semaphore for one endpoint, as a Ray actor: every worker on every node takes a slot from it.

    Slots are counted per worker, so the slots of a worker that died holding them can be given back.
    """

    def __init__(self, cap: int) -> None:
        self._slots = asyncio.Semaphore(cap)
        self._held: dict[int, int] = {}

    async def acquire(self, worker: int) -> None:
        await self._slots.acquire()
        self._held[worker] = self._held.get(worker, 0) + 1

    async def release(self, worker: int) -> None:
        if self._held.get(worker, 0) > 0:
            self._held[worker] -= 1
            self._slots.release()

    async def release_all(self, worker: int) -> None:
        for _ in range(self._held.pop(worker, 0)):
            self._slots.release()


class _RemoteSlot:
    """The context manager a backend holds per request, backed by an :class:`_EndpointGate` actor."""

    def __init__(self, gate: Any, worker: int) -> None:
        self.gate, self.worker = gate, worker

    def __enter__(self) -> None:
        import ray

        ray.get(self.gate.acquire.remote(self.worker))

    def __exit__(self, *exc: object) -> None:
        import ray

        ray.get(self.gate.release.remote(self.worker))


class _RayWorker:
    def __init__(self, grid: Grid, cache: Path | None, gates: dict[str, Any], number: int) -> None:
        self.worker = UnitWorker(grid, cache, {url: _RemoteSlot(g, number) for url, g in gates.items()})

    def run(self, unit: Unit) -> UnitResult:
        return self.worker.run(unit)


def execute(
    name: str, grid: Grid, cache: Path | None, units: Sequence[Unit], concurrency: int
) -> Iterator[UnitResult]:
    if name == "ray":
        return run_ray(grid, cache, units, concurrency)
    return run_local(grid, cache, units, concurrency)
