"""The requests this process has in flight, for the run's progress line and for Ctrl-C.

A local model takes 15-300 s a request on a CPU; without this the progress said nothing for minutes. Every
backend registers each HTTP request while it waits for the answer (:meth:`InFlight.track`): its role, when it
was sent, how to close its connection and, for a streamed answer (a model's ``stream = true``), the tokens
received so far. :meth:`InFlight.snapshot` gives the roles, ages and tokens for the progress line;
:meth:`InFlight.cancel_all` closes every connection (a server that computes the answer sees the client go, and
llama.cpp's stops generating), and from then on no backend retries: a request that fails after cancellation
raises :class:`Cancelled`. Requests in other processes (ToolSandbox's units, Ray actors) are not
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
from typing import NamedTuple

#: After Ctrl-C, how often the requests still in flight are closed again, and for how long (seconds).
RECLOSE_SECONDS = 0.05
RECLOSE_FOR_SECONDS = 2.0
#: How often the caller of :func:`until_cancelled` looks whether the run was interrupted (seconds).
CANCEL_POLL_SECONDS = 0.05


class Cancelled(Exception):
    """A request ended because the run was interrupted (Ctrl-C): never retried."""


@dataclass
class Request:
    """One request in flight: its role (executor, planner, verifier...), when it was sent (monotonic seconds),
    how to close its connection, and for a streamed answer the chunks of text received so far (about a token
    each; ``None``: not streamed, only its age is known)."""

    role: str
    sent: float
    close: Callable[[], None]
    tokens: int | None = None

    def received(self) -> None:
        """One more chunk of the streamed answer arrived (called by the request's own thread only)."""
        self.tokens = (self.tokens or 0) + 1


class Seen(NamedTuple):
    """A request in flight as the progress line shows it: role, seconds in flight, tokens so far (streamed)."""

    role: str
    age: float
    tokens: int | None = None


class InFlight:
    """The requests in flight of this process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[int, Request] = {}
        self._ids = itertools.count()
        self.cancelled = threading.Event()

    @contextlib.contextmanager
    def track(self, role: str, close: Callable[[], None]) -> Iterator[Request]:
        """Register a request for the duration of the ``with`` block (which gets it, to count a streamed answer's
        chunks: :meth:`Request.received`); :class:`Cancelled` when the run was interrupted before it was sent."""
        if self.cancelled.is_set():
            raise Cancelled("the run was interrupted")
        request = Request(role, time.monotonic(), close)
        with self._lock:
            key = next(self._ids)
            self._requests[key] = request
        try:
            yield request
        finally:
            with self._lock:
                self._requests.pop(key, None)

    def snapshot(self, now: float | None = None) -> list[Seen]:
        """Each request in flight (:class:`Seen`), the oldest first."""
        now = time.monotonic() if now is None else now
        with self._lock:
            requests = list(self._requests.values())
        return sorted((Seen(r.role, now - r.sent, r.tokens) for r in requests), key=lambda seen: -seen.age)

    def cancel_all(self) -> list[Seen]:
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


def describe(requests: list[Seen]) -> str:
    """``requests`` (:meth:`InFlight.snapshot`) in a few words, per role: how many, the oldest one's age and, when
    answers are streamed, the tokens received so far by that role's requests (``executor 1 (2m13s, 154 tokens
    so far)``); ``none`` when there are none."""
    if not requests:
        return "none"
    counts = Counter(seen.role for seen in requests)
    oldest: dict[str, float] = {}
    tokens: dict[str, int] = {}
    for seen in requests:
        oldest[seen.role] = max(seen.age, oldest.get(seen.role, 0.0))
        if seen.tokens is not None:
            tokens[seen.role] = tokens.get(seen.role, 0) + seen.tokens
    return ", ".join(
        f"{role} {n} ({_clock(oldest[role])}" + (f", {tokens[role]:,} tokens so far)" if role in tokens else ")")
        for role, n in sorted(counts.items())
    )


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


#: This process's requests in flight.
IN_FLIGHT = InFlight()
