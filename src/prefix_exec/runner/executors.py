"""Where units run: threads in this process (``local``) or Ray actors (``ray``), one worker each.

Both yield :class:`~prefix_exec.runner.worker.UnitResult` as units finish; only the caller writes files, so
the output never interleaves. Both hold each model's ``max_concurrency`` for the whole run: local workers
share one semaphore per endpoint URL, Ray workers one gate actor per URL (so the cap holds across machines).
Ray is optional (``pip install 'prefix-exec[ray]'``); it joins the cluster in ``RAY_ADDRESS`` when set,
else starts a local instance, unless the caller already called ``ray.init``.
"""

from __future__ import annotations

import asyncio
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
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="unit") as pool:
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
            for future in running:
                future.cancel()


def run_ray(grid: Grid, cache: Path | None, units: Sequence[Unit], concurrency: int) -> Iterator[UnitResult]:
    """Run ``units`` on ``concurrency`` Ray actors; each actor process holds one worker."""
    try:
        import ray
        from ray.util import ActorPool
    except ImportError:
        hint = "pip install 'prefix-exec[ray]' (or pip install ray)"
        raise InputError("--executor ray needs Ray", hint=hint) from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), log_to_driver=False)
    # Actors wait on the network, not the CPU; a fractional CPU lets --max-concurrency exceed the core count.
    gate = ray.remote(num_cpus=0)(_EndpointGate)
    gates = {url: gate.remote(cap) for url, cap in grid.endpoint_caps().items()}
    actor = ray.remote(num_cpus=0.01)(_RayWorker)
    pool = ActorPool([actor.remote(grid, cache, gates) for _ in range(max(1, min(concurrency, len(units))))])

    def submit(a: Any, unit: Unit) -> Any:
        return a.run.remote(unit)

    yield from pool.map_unordered(submit, list(units))


class _EndpointGate:
    """A semaphore for one endpoint, as a Ray actor: every worker on every node takes a slot from it."""

    def __init__(self, cap: int) -> None:
        self._slots = asyncio.Semaphore(cap)

    async def acquire(self) -> None:
        await self._slots.acquire()

    async def release(self) -> None:
        self._slots.release()


class _RemoteSlot:
    """The context manager a backend holds per request, backed by an :class:`_EndpointGate` actor."""

    def __init__(self, gate: Any) -> None:
        self.gate = gate

    def __enter__(self) -> None:
        import ray

        ray.get(self.gate.acquire.remote())

    def __exit__(self, *exc: object) -> None:
        import ray

        ray.get(self.gate.release.remote())


class _RayWorker:
    def __init__(self, grid: Grid, cache: Path | None, gates: dict[str, Any]) -> None:
        self.worker = UnitWorker(grid, cache, {url: _RemoteSlot(g) for url, g in gates.items()})

    def run(self, unit: Unit) -> UnitResult:
        return self.worker.run(unit)


def execute(
    name: str, grid: Grid, cache: Path | None, units: Sequence[Unit], concurrency: int
) -> Iterator[UnitResult]:
    if name == "ray":
        return run_ray(grid, cache, units, concurrency)
    return run_local(grid, cache, units, concurrency)
