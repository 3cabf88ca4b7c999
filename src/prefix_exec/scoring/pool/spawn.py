"""Spawning the worker processes of ``score --workers N`` (:mod:`prefix_exec.scoring.pool.processes` runs them): at
once when the pool asks for one, or early, as the command starts (:func:`start_early`), so that a worker's own
start (a Python start and this package's imports, about 0.3 s) overlaps the command's instead of following it.

A worker is spawned with no settings: its first message is its settings (:func:`prefix_exec.scoring.pool.worker.serve`).
So one started before the command has read its options serves whatever run adopts it (:func:`take_early`), and
is ended with the run's pool; one that no run adopts (the command failed before it scored, or scored in process)
is ended at exit. A worker started early imports the modules of this package its command names (the ``warm`` of
:func:`start_early`: the command line's entry point, :mod:`prefix_exec.cli`, knows what each subcommand needs), not
the benchmark's own package (tau2 still loads when its environment is built). This module imports nothing heavy:
the command's entry point imports it before anything else.

Workers are spawned, as the runner's are (:mod:`prefix_exec.runner.launchers`): a fork would copy the reading
process's threads' locks mid-use, and ToolSandbox deadlocks under fork. The one exception is a worker started
early by the command's entry point (:func:`start_early` with ``fork``): it is forked, on Linux, while the process
still has one thread and has imported nothing but this module and the command line's face, so there is no lock
to copy, and the worker loads what it needs itself (ToolSandbox too). A spawned worker is a new Python that
imports :mod:`multiprocessing` and the command's script again before it can import anything of its own (about
0.1 s, measured on 2026-12-08 on 2 cores); forked, it starts at once, ready for its settings before the reading
process has them (and no resource tracker process is started beside it).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any, Final

#: How the pool's processes start (see the module docstring).
START_METHOD: Final = "spawn"
#: How a worker started early by the command's entry point starts, where it may (:func:`fork_allowed`).
EARLY_METHOD: Final = "fork"
#: Bytes each pipe to and from a worker holds at most (Linux; the default is 64 KiB): what the reading process
#: sends a worker waits in the pipe, not in that process, while it replays or reads a file, so the worker does not
#: run dry after four transcripts of 16 KB each; a worker's answers wait there while the reading process is busy.
PIPE_BYTES = 1 << 20
#: What a pipe holds unwidened (Linux).
DEFAULT_PIPE_BYTES = 1 << 16
#: The share of the user's budget for pipe buffers (``/proc/sys/fs/pipe-user-pages-soft``, 64 MiB by default) the
#: pipes to and from the workers take together at most. Once an unprivileged user's pipes hold the whole budget,
#: every new pipe of that user's, in any program (the user's other runs and shells too), holds 8 KiB, not 64 KiB,
#: and no pipe can be widened, until pipes close: a megabyte for each of 2 pipes a worker reaches it at 32 workers.
PIPE_SHARE = 0.25
#: The start of the module names a worker imports early (:func:`run`): this package's, never another's.
PACKAGE: Final = "prefix_exec."


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, as a scheduler or container set it), at least 1."""
    counter = getattr(os, "process_cpu_count", None)  # Python 3.13
    if counter is not None:
        return int(counter() or 1)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


@dataclass(frozen=True)
class Spawned:
    """A worker process just spawned: the process, the pipe its answers come on, and the (non-blocking) one to it."""

    process: Any
    answers: Any
    orders: Any

    def end(self) -> None:
        """Close its pipes (it ends at the end of its input) and kill it if it is still running after that."""
        self.orders.close()
        self.process.join(0.2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.answers.close()


def spawn(warm: tuple[str, ...] = (), pipe_size: int = 0, *, fork: bool = False) -> Spawned:
    """A new worker process (:func:`run`), importing ``warm`` (module names of this package) while it waits for its
    settings, its pipes widened to ``pipe_size`` bytes (:func:`system_pipe_bytes`; 0: left as they are); Ctrl-C is
    ignored in it (the reading process handles it and ends the workers). ``fork``: forked, not spawned (only
    where :func:`fork_allowed`; see the module docstring); it closes its copies of this process's ends of the
    pipes of the workers started early, and of its own, or it would never see them end."""
    context = multiprocessing.get_context(EARLY_METHOD) if fork else multiprocessing.get_context(START_METHOD)
    theirs, orders = context.Pipe(duplex=False)  # messages to the worker
    answers, ours = context.Pipe(duplex=False)  # its answers back
    ends = (orders, answers, *(pipe for early in _early for pipe in (early.orders, early.answers))) if fork else ()
    inherited = tuple(pipe.fileno() for pipe in ends)
    process = context.Process(target=run, args=(theirs, ours, warm, inherited), name="prefix-exec-score", daemon=True)
    with _sigint_ignored():  # the worker inherits it from the start
        process.start()
    theirs.close()
    ours.close()
    os.set_blocking(orders.fileno(), False)
    for pipe in (orders, answers):
        widen(pipe.fileno(), pipe_size)
    return Spawned(process, answers, orders)


def run(inbox: Any, outbox: Any, warm: tuple[str, ...], inherited: tuple[int, ...] = ()) -> None:
    """A worker process's entry: close the file descriptors ``inherited`` (a forked worker's copies of the reading
    process's pipe ends), import ``warm`` (only names of this package's modules), then serve."""
    for fd in inherited:
        with contextlib.suppress(OSError):
            os.close(fd)
    for name in warm:
        if name.startswith(PACKAGE):
            with contextlib.suppress(ImportError):  # a missing extra: the run that adopts it says so
                import_module(name)
    from prefix_exec.scoring.pool.worker import serve

    serve(inbox, outbox)


_early: list[Spawned] = []


def start_early(count: int, warm: tuple[str, ...] = (), *, pool: int | None = None, fork: bool = False) -> None:
    """Start ``count`` workers now, each importing the modules ``warm`` names (this package's, what its command's
    units will need: unpickling its settings and environment would import them anyway), their pipes sized for a
    pool of ``pool`` workers in all (``count`` when ``None``: :func:`system_pipe_bytes`); the pool adopts them
    (:func:`take_early`), and those it does not are ended at exit. ``fork``: the caller is a command's entry
    point, before its imports; the workers are then forked where :func:`fork_allowed`, else spawned. A start that
    fails (the user's process or file limit) ends this: the pool starts the others, and what fails there is the
    command's error."""
    if count <= 0:
        return
    if not _early:
        atexit.register(end_early)
    size = system_pipe_bytes(2 * max(count, pool or 0))
    forked = fork and fork_allowed()
    with contextlib.suppress(OSError):
        for _ in range(count):
            _early.append(spawn(warm, size, fork=forked))


def fork_allowed() -> bool:
    """Whether a worker may be forked from this process now: on Linux (elsewhere a fork is unsafe, or there is
    none), while this process runs one thread (a fork copies no other thread, nor frees the locks they hold)."""
    return sys.platform == "linux" and EARLY_METHOD in multiprocessing.get_all_start_methods() and threads() == 1


def threads() -> int:
    """The threads this process runs, as the system counts them (``/proc/self/task``): Python's own and those
    Python does not know of (a native library's pool, as OpenBLAS starts at numpy's import, or one a site hook
    starts before the command does); Python's count where that cannot be read."""
    try:
        return max(len(os.listdir("/proc/self/task")), threading.active_count())
    except OSError:
        return threading.active_count()


def take_early() -> Spawned | None:
    """A worker started early and not yet adopted, if any."""
    while _early:
        spawned = _early.pop(0)
        if spawned.process.is_alive():
            return spawned
        spawned.end()
    return None


def end_early() -> None:
    """End the workers started early that no run adopted."""
    while _early:
        with contextlib.suppress(Exception):
            _early.pop().end()


def pipe_bytes(pipes: int, *, most: int, budget: int) -> int:
    """What each of ``pipes`` pipes is widened to: :data:`PIPE_BYTES`, at most ``most`` (the system's most for one
    pipe) and, together, at most :data:`PIPE_SHARE` of ``budget`` (the user's, in bytes; 0: no budget), rounded
    down to a power of two (the kernel rounds a size up to one); 0 (leave the pipes as they are) when that is no
    more than :data:`DEFAULT_PIPE_BYTES`."""
    size = min(PIPE_BYTES, most)
    if budget > 0:
        size = min(size, int(budget * PIPE_SHARE) // max(pipes, 1))
    if size <= DEFAULT_PIPE_BYTES:
        return 0
    return 1 << (size.bit_length() - 1)


def system_pipe_bytes(pipes: int) -> int:
    """:func:`pipe_bytes` for ``pipes`` pipes under this system's limits (``/proc/sys/fs/pipe-max-size`` and
    ``pipe-user-pages-soft``; a limit that cannot be read does not bound)."""
    most, budget = PIPE_BYTES, 0
    with contextlib.suppress(OSError, ValueError):
        most = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    with contextlib.suppress(OSError, ValueError):
        budget = int(Path("/proc/sys/fs/pipe-user-pages-soft").read_text()) * os.sysconf("SC_PAGE_SIZE")
    return pipe_bytes(pipes, most=most, budget=budget)


def widen(fd: int, size: int) -> None:
    """Let the pipe ``fd`` hold ``size`` bytes (:func:`system_pipe_bytes`; 0: leave it as it is); a system without
    ``F_SETPIPE_SZ`` keeps its size."""
    setter = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setter is None or size <= 0:
        return
    with contextlib.suppress(OSError):  # EPERM past a limit: the pipe keeps its size
        fcntl.fcntl(fd, setter, size)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
