"""Budgets of one rollout: a wall-clock budget for all of its work and a memory budget for each call.

Each tool call already has a time bound, but a rollout of many calls does not, and a call that does a
single huge allocation in C (``"x" * 10**9``) cannot be interrupted by a signal. So scoring runs every
rollout inside :func:`rollout_budget`:

- **Wall clock.** The budget covers everything done for the rollout (the final-success check and the
  replay). Environments call :func:`check` between calls, and a call's own alarm is cut to the time left
  (:func:`remaining`). Past the deadline :class:`OverBudget` is raised; scoring reports the rollout as
  unscorable with the reason, and goes on with the next.
- **Memory per call.** :func:`call_memory` caps the process's address space at its current size plus the
  budget for the duration of one call (``RLIMIT_AS``), so an allocation past it fails at once with
  ``MemoryError`` instead of swapping the machine. The cap is process-wide, so it is only applied on the
  main thread (where ``prefix-exec score`` replays); worker threads rely on the static cost bounds.

The budget is held in a context variable, so threads of a runner each see their own.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

try:  # not on every platform
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]

#: Default wall-clock budget of one rollout, seconds (a BFCL task replays in well under a second).
DEFAULT_ROLLOUT_SECONDS = 300.0
#: Default memory budget of one call, MiB above the process's size when the call starts.
DEFAULT_CALL_MEMORY_MB = 1024


class OverBudget(BaseException):
    """The rollout ran past its wall-clock budget. A BaseException, so a tool's ``except Exception``
    inside a call cannot swallow it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"unscorable: past the rollout's wall-clock budget of {seconds:g} s")


@dataclass(frozen=True)
class Budget:
    """``deadline`` on :func:`time.monotonic`'s clock (``inf``: none); ``call_memory_mb`` (0: no cap)."""

    seconds: float
    deadline: float
    call_memory_mb: int


_NONE = Budget(math.inf, math.inf, 0)
_current: contextvars.ContextVar[Budget] = contextvars.ContextVar("prefix_exec_budget", default=_NONE)


@contextmanager
def rollout_budget(
    seconds: float | None = DEFAULT_ROLLOUT_SECONDS, call_memory_mb: int = DEFAULT_CALL_MEMORY_MB
) -> Iterator[Budget]:
    """Run the block under a budget: ``seconds`` of wall clock from now (``None``/``inf``: unbounded) and
    ``call_memory_mb`` MiB per call (0: no cap)."""
    limit = math.inf if seconds is None else float(seconds)
    budget = Budget(limit, time.monotonic() + limit, int(call_memory_mb))
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)


def current() -> Budget:
    return _current.get()


def remaining() -> float:
    """Seconds left of the current rollout's budget (``inf`` when there is none)."""
    return current().deadline - time.monotonic()


def check() -> None:
    """Raise :class:`OverBudget` when the current rollout's deadline has passed."""
    budget = current()
    if budget.deadline != math.inf and time.monotonic() > budget.deadline:
        raise OverBudget(budget.seconds)


#: A descriptor of ``/proc/self/statm``, opened once per process: opening the file for every call cost more
#: than most BFCL calls. A forked child forgets its parent's (``/proc/self`` was resolved when it was opened).
_statm: int | None = None


def _forget_statm() -> None:
    global _statm
    if _statm is not None:
        with contextlib.suppress(OSError):  # already closed
            os.close(_statm)
    _statm = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_statm)


def address_space() -> int | None:
    """The process's current virtual size in bytes (Linux ``/proc/self/statm``), or ``None``.

    Read with ``pread`` at offset 0, which makes the kernel write the file afresh, on a descriptor opened
    once per process (a forked child opens its own: :func:`_forget_statm`).
    """
    global _statm
    try:
        if _statm is None:
            _statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
        pages = int(os.pread(_statm, 128, 0).split()[0])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):  # no /proc, or no pread (Windows)
        return None


def call_memory() -> CallMemory:
    """Cap the address space at its current size plus the budget while the block runs (main thread only).

    An allocation past the cap raises ``MemoryError`` inside the block; the previous limit is restored
    after it. Without a budget, off the main thread or without ``RLIMIT_AS``, the block runs uncapped.
    """
    return CallMemory()


class CallMemory:
    """The context manager of :func:`call_memory`. A class rather than a generator: it runs around every
    BFCL call, where a generator's context manager cost more than most calls."""

    __slots__ = ("_restore",)

    def __init__(self) -> None:
        self._restore: tuple[int, int] | None = None

    def __enter__(self) -> None:
        megabytes = current().call_memory_mb
        if megabytes <= 0 or resource is None or not hasattr(resource, "RLIMIT_AS"):
            return
        size = address_space() if threading.current_thread() is threading.main_thread() else None
        if size is None:
            return
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = size + megabytes * 1024 * 1024
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        if soft != resource.RLIM_INFINITY and soft <= cap:
            return  # a tighter limit is already in force
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        self._restore = (soft, hard)

    def __exit__(self, *exc: object) -> None:
        if self._restore is not None:
            resource.setrlimit(resource.RLIMIT_AS, self._restore)
            self._restore = None
