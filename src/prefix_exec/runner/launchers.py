"""Launchers, where units run: threads or processes on this machine (``local``) or Ray actors (``ray``), one
worker each.

Locally, units run on threads, unless a dataset's benchmark keeps its state in a process global (ToolSandbox's
execution context, :data:`PROCESS_KINDS`): then every unit runs in a pool of spawned processes, one unit at a
time per process, each process with its own worker (spawn, not fork: ToolSandbox's own CLI found fork deadlocks).

Both yield :class:`~prefix_exec.runner.worker.UnitResult` as units finish; only the caller writes files, so
the output never interleaves. Both hold each model's ``max_concurrency`` for the whole run: local workers
share one semaphore per endpoint URL, Ray workers one gate actor per URL (so the cap holds across machines).
Ray is optional (``pip install 'prefix-exec[ray]'``); it joins the cluster in ``RAY_ADDRESS`` when set,
else starts a local instance, unless the caller already called ``ray.init`` (:func:`prefix_exec.cluster.connect_ray`,
which ``score --launcher ray`` shares).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import multiprocessing
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from prefix_exec import cluster
from prefix_exec.cluster import MOST_FAILED_STARTS, connect_ray, let_start, ray_message
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonObject
from prefix_exec.runner.grid import Grid
from prefix_exec.runner.worker import UnitResult, UnitWorker
from prefix_exec.trajectory import Unit

#: Dataset kinds whose benchmark state is process-global, so a local run uses worker processes.
PROCESS_KINDS = frozenset({"toolsandbox"})


def run_local(grid: Grid, cache: Path | None, units: Sequence[Unit], concurrency: int) -> Iterator[UnitResult]:
    """Run ``units`` on ``concurrency`` threads, each with its own worker (environments are not shared), or on
    ``concurrency`` spawned processes when a dataset needs them (:data:`PROCESS_KINDS`)."""
    if any(d.kind in PROCESS_KINDS for d in grid.datasets):
        return run_processes(grid, cache, units, concurrency)
    return _run_threads(grid, cache, units, concurrency)


def _run_threads(grid: Grid, cache: Path | None, units: Sequence[Unit], concurrency: int) -> Iterator[UnitResult]:
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


_PROCESS_WORKER: UnitWorker | None = None


def _start_process(grid: Grid, cache: Path | None, gates: JsonObject) -> None:
    global _PROCESS_WORKER
    _PROCESS_WORKER = UnitWorker(grid, cache, gates)


def _run_in_process(unit: Unit) -> UnitResult:
    assert _PROCESS_WORKER is not None, "the pool initializer builds the worker"
    return _PROCESS_WORKER.run(unit)


def run_processes(grid: Grid, cache: Path | None, units: Sequence[Unit], concurrency: int) -> Iterator[UnitResult]:
    """Run ``units`` on ``concurrency`` spawned processes, one unit at a time each; the endpoint caps are
    semaphores of a manager process, shared by every worker. A worker process that dies fails its unit (and
    the units running beside it, whose pool broke) and the pool is started again for the rest."""
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        gates: JsonObject = {url: manager.BoundedSemaphore(cap) for url, cap in grid.endpoint_caps().items()}
        workers = max(1, min(concurrency, len(units)))

        def start() -> Executor:
            return ProcessPoolExecutor(
                max_workers=workers, mp_context=context, initializer=_start_process, initargs=(grid, cache, gates)
            )

        pending = list(reversed(units))
        running: dict[Future[UnitResult], Unit] = {}
        pool = start()
        try:
            while pending or running:
                while pending and len(running) < workers:
                    unit = pending.pop()
                    running[pool.submit(_run_in_process, unit)] = unit
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                broken = False
                for future in finished:
                    unit = running.pop(future)
                    try:
                        yield future.result()
                    except BrokenProcessPool as exc:
                        broken = True
                        yield UnitResult(unit, error=f"the worker process died running this unit: {exc}")
                if broken:
                    for unit in running.values():
                        yield UnitResult(unit, error="the worker pool broke while this unit ran")
                    running.clear()
                    _stop(pool)
                    pool = start()
        finally:
            _stop(pool)


def _stop(pool: Executor) -> None:
    """End the pool now: cancel what has not started and end the processes still running a unit."""
    processes = list(getattr(pool, "_processes", {}).values())  # ProcessPoolExecutor offers no public kill
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()


#: CPUs a unit's actor asks for: it waits on the network, not the CPU; a fraction lets --max-concurrency exceed
#: the core count.
ACTOR_CPUS = 0.01


def run_ray(grid: Grid, cache: Path | None, units: Sequence[Unit], concurrency: int) -> Iterator[UnitResult]:
    """Run ``units`` on ``concurrency`` Ray actors; each actor process holds one worker.

    A worker process that dies (killed, out of memory, a crash in native code) fails only its unit: the unit
    is reported with the error, the slots it held are given back, and a new worker takes its place. Units go
    only to started actors (:class:`_RayWorkers`): a run none of whose actors has started within
    :data:`~prefix_exec.cluster.START_SECONDS` fails with an :class:`InputError` naming that bound, as does one
    whose actors die as they start :data:`MOST_FAILED_STARTS` times in a row.
    """
    ray = connect_ray()
    from ray.exceptions import RayError

    gate = ray.remote(num_cpus=0)(_EndpointGate)
    gates: JsonObject = {url: gate.remote(cap) for url, cap in grid.endpoint_caps().items()}
    actor = ray.remote(num_cpus=ACTOR_CPUS)(_RayWorker)
    workers = _RayWorkers(ray, actor, (grid, cache, gates), max(1, min(concurrency, len(units))))
    pending = list(reversed(units))
    running: dict[Any, tuple[tuple[int, Any], Unit]] = {}
    ended = False
    try:
        while pending or running:
            while pending and workers.idle:
                worker, unit = workers.idle.pop(), pending.pop()
                running[worker[1].run.remote(unit)] = (worker, unit)
            for ref in workers.wait(list(running)):
                worker, unit = running.pop(ref)
                try:
                    result: UnitResult = ray.get(ref, timeout=cluster.START_SECONDS)  # ready: the bound is form's
                except RayError as exc:
                    for g in gates.values():
                        g.release_all.remote(worker[0])
                    ray.kill(worker[1], no_restart=True)
                    workers.spawn()
                    yield UnitResult(unit, error=f"the Ray worker died running this unit: {ray_message(exc)}")
                    continue
                workers.idle.append(worker)
                yield result
        ended = True
    finally:
        # Ctrl-C or an early stop: end the workers still running at once (Ray cannot force-cancel actor tasks).
        workers.close([worker for worker, _ in running.values()], settle=ended)


class _RayWorkers:
    """The actors of one :func:`run_ray`, each ``(number, handle)``: the started ones not running a unit
    (:attr:`idle`), and those still starting, each with its readiness ref and when it was asked for."""

    def __init__(self, ray: Any, actor: Any, args: tuple[Any, ...], count: int) -> None:
        self.ray, self.actor, self.args = ray, actor, args
        self.numbers = itertools.count()
        self.idle: list[tuple[int, Any]] = []
        self.starting: dict[Any, tuple[tuple[int, Any], float]] = {}
        self.failed_starts = 0  # in a row
        for _ in range(count):
            self.spawn()

    def spawn(self) -> None:
        """Ask for a new actor (numbered: the endpoint gates count each one's slots)."""
        number = next(self.numbers)
        handle = self.actor.remote(*self.args, number)
        self.starting[handle.__ray_ready__.remote()] = ((number, handle), time.monotonic())

    def wait(self, running: list[Any]) -> list[Any]:
        """The refs of ``running`` that are ready: at least one, or none when an actor started meanwhile (it is
        then idle). Raises :class:`InputError` when no actor has started within the start bound."""
        from ray.exceptions import RayError

        while True:
            deadline = math.inf
            if not running and not self.idle:  # nothing started yet: every actor asked for waits its bound
                deadline = max(asked for _, asked in self.starting.values()) + cluster.START_SECONDS
            left = deadline - time.monotonic()
            if left <= 0:
                raise InputError(
                    f"no Ray actor started within {cluster.START_SECONDS:g} s ({len(self.starting)} asked for, "
                    f"{ACTOR_CPUS:g} CPU each): the Ray cluster has no free CPU for them, or cannot start workers",
                    hint="see 'ray status'; units written so far are kept (--resume)",
                )
            refs = [*running, *self.starting]
            ready, _ = self.ray.wait(refs, num_returns=1, timeout=None if math.isinf(left) else left)
            started = [ref for ref in ready if ref in self.starting]
            for ref in started:
                worker, _ = self.starting.pop(ref)
                try:
                    self.ray.get(ref, timeout=cluster.START_SECONDS)
                except RayError as exc:
                    self.failed(worker, exc)
                    continue
                self.idle.append(worker)
                self.failed_starts = 0
            if len(started) < len(ready) or self.idle:
                return [ref for ref in ready if ref not in started]

    def failed(self, worker: tuple[int, Any], exc: BaseException) -> None:
        """``worker`` died as it started: another is asked for, unless :data:`MOST_FAILED_STARTS` did in a row."""
        with contextlib.suppress(Exception):
            self.ray.kill(worker[1], no_restart=True)
        self.failed_starts += 1
        if self.failed_starts >= MOST_FAILED_STARTS:
            raise InputError(
                f"no Ray actor could start: {self.failed_starts} died in a row as they started (the last: "
                f"{ray_message(exc)})",
                hint="each worker must build the grid's datasets and open the run's cache where it runs",
            )
        self.spawn()

    def close(self, running: list[tuple[int, Any]], *, settle: bool) -> None:
        """Kill every actor, those still starting first; with ``settle``, after letting the young ones start
        (:func:`~prefix_exec.cluster.let_start`)."""
        if settle:
            asked = {ref: when for ref, (_, when) in self.starting.items()}
            let_start(self.ray, asked, (len(self.idle) + len(running)) * ACTOR_CPUS, ACTOR_CPUS)
        for worker in [*(worker for worker, _ in self.starting.values()), *running, *self.idle]:
            with contextlib.suppress(Exception):
                self.ray.kill(worker[1], no_restart=True)


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
    def __init__(self, grid: Grid, cache: Path | None, gates: JsonObject, number: int) -> None:
        self.worker = UnitWorker(grid, cache, {url: _RemoteSlot(g, number) for url, g in gates.items()})

    def run(self, unit: Unit) -> UnitResult:
        return self.worker.run(unit)


def launch(
    launcher: str, grid: Grid, cache: Path | None, units: Sequence[Unit], concurrency: int
) -> Iterator[UnitResult]:
    """Run ``units`` with ``launcher`` (one of :data:`prefix_exec.cluster.LAUNCHERS`) on ``concurrency`` workers."""
    if launcher == "ray":
        return run_ray(grid, cache, units, concurrency)
    return run_local(grid, cache, units, concurrency)
