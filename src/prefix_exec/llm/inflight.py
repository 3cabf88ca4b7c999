"""The requests this process has in flight, for the run's progress line and for Ctrl-C.

A local model takes 15-300 s a request on a CPU; without this the progress said nothing for minutes. Every
backend registers each HTTP request while it waits for the answer (:meth:`InFlight.track`): its role, when it
was sent, and how to close its connection. :meth:`InFlight.snapshot` gives the roles and ages for the progress
line; :meth:`InFlight.cancel_all` closes every connection (a server that computes the answer sees the client
go, and llama.cpp's stops generating), and from then on no backend retries: a request that fails after
cancellation raises :class:`Cancelled`. Requests in other processes (ToolSandbox's units, Ray actors) are not
seen here.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

#: After Ctrl-C, how often the requests still in flight are closed again, and for how long (seconds).
RECLOSE_SECONDS = 0.05
RECLOSE_FOR_SECONDS = 2.0
#: How often the caller of :func:`until_cancelled` looks whether the run was interrupted (seconds).
CANCEL_POLL_SECONDS = 0.05


class Cancelled(Exception):
    """A request ended because the run was interrupted (Ctrl-C): never retried."""


@dataclass(frozen=True)
class Request:
    """One request in flight: its role (executor, planner, verifier...), when it was sent (monotonic seconds)
    and how to close its connection."""

    role: str
    sent: float
    close: Callable[[], None]


class InFlight:
    """The requests in flight of this process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[int, Request] = {}
        self._ids = itertools.count()
        self.cancelled = threading.Event()

    @contextlib.contextmanager
    def track(self, role: str, close: Callable[[], None]) -> Iterator[None]:
        """Register a request for the duration of the ``with`` block; :class:`Cancelled` when the run was
        interrupted before it was sent."""
        if self.cancelled.is_set():
            raise Cancelled("the run was interrupted")
        with self._lock:
            key = next(self._ids)
            self._requests[key] = Request(role, time.monotonic(), close)
        try:
            yield
        finally:
            with self._lock:
                self._requests.pop(key, None)

    def snapshot(self, now: float | None = None) -> list[tuple[str, float]]:
        """``(role, seconds in flight)`` of each request, the oldest first."""
        now = time.monotonic() if now is None else now
        with self._lock:
            requests = list(self._requests.values())
        return sorted(((r.role, now - r.sent) for r in requests), key=lambda pair: -pair[1])

    def cancel_all(self) -> list[tuple[str, float]]:
        """Close every request's connection and refuse new ones; the requests that were in flight.

        A request caught between registering and opening its connection would open it after the close and wait
        for its answer, so the requests still in flight are closed again every :data:`RECLOSE_SECONDS` for up to
        :data:`RECLOSE_FOR_SECONDS` (by a daemon thread), until none is left."""
        self.cancelled.set()
        shown = self.snapshot()
        if self._close_pending():
            threading.Thread(target=self._keep_closing, name="prefix-exec-cancel", daemon=True).start()
        return shown

    def _close_pending(self) -> bool:
        """Close the connection of every request still in flight; whether there was one."""
        with self._lock:
            requests = list(self._requests.values())
        for request in requests:
            with contextlib.suppress(Exception):  # a connection already closed, a client half torn down
                request.close()
        return bool(requests)

    def _keep_closing(self) -> None:
        deadline = time.monotonic() + RECLOSE_FOR_SECONDS
        while time.monotonic() < deadline:
            time.sleep(RECLOSE_SECONDS)
            if not self._close_pending():
                return


def until_cancelled[T](flight: InFlight, call: Callable[[], T], where: str) -> T:
    """``call()`` (one HTTP request) on a daemon thread, waited for here in steps of :data:`CANCEL_POLL_SECONDS`:
    once ``flight`` is cancelled this raises :class:`Cancelled` at once (``where`` names the endpoint). Closing a
    connection does not always wake a thread blocked reading its answer (a socket closed by another thread can
    keep that read waiting), so the caller does not wait for it; the abandoned thread ends with the connection or
    the answer. What ``call`` raises is raised here."""
    outcome: list[tuple[T] | BaseException] = []

    def run() -> None:
        try:
            outcome.append((call(),))
        except BaseException as exc:  # handed to the caller below, as if raised there
            outcome.append(exc)

    worker = threading.Thread(target=run, name="prefix-exec-request", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(CANCEL_POLL_SECONDS)
        if worker.is_alive() and flight.cancelled.is_set():
            raise Cancelled(f"{where}: the run was interrupted")
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result[0]


def describe(requests: list[tuple[str, float]]) -> str:
    """``requests`` (:meth:`InFlight.snapshot`) in a few words: ``executor 1 (2m13s)``, per role with the oldest
    request's age, or ``none``."""
    if not requests:
        return "none"
    counts = Counter(role for role, _ in requests)
    oldest: dict[str, float] = {}
    for role, age in requests:
        oldest[role] = max(age, oldest.get(role, 0.0))
    return ", ".join(f"{role} {n} ({_clock(oldest[role])})" for role, n in sorted(counts.items()))


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


#: This process's requests in flight.
IN_FLIGHT = InFlight()
