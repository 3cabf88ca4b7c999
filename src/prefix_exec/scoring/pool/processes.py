"""The process transport of ``score --workers N`` (:mod:`prefix_exec.scoring.pool.dispatch` schedules on it): spawned
worker processes (:func:`prefix_exec.scoring.pool.worker.serve`), each with a pipe to it and one back, addressed by
index, reporting what :mod:`prefix_exec.scoring.pool.messages` names (an answer, or a worker's end: :class:`Died`).
``--launcher ray``'s actors are the other transport (:mod:`prefix_exec.scoring.pool.ray`).

Workers are spawned by :mod:`prefix_exec.scoring.pool.spawn` (those the command started as it started are adopted
first), and each is sent this run's settings as its first message. A worker that ends (killed, out of memory in
C) is reported as :class:`Died`; the schedule restarts it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import struct
import time
from typing import Any

from prefix_exec.scoring.pool.messages import BUILT, READY, Batched, Decoded, Died, Event, Raised, Unloadable
from prefix_exec.scoring.pool.spawn import spawn, system_pipe_bytes, take_early
from prefix_exec.scoring.replayer import Outcome, Replayer
from prefix_exec.scoring.units import Batch, Scorable, Undecoded
from prefix_exec.trajectory import UnitKey

#: Rollouts a local worker holds at least (the next is queued while one runs; more for quick ones: schedule).
DEPTH = 2
#: Bytes read off a worker's pipe in one system call at most (a widened pipe holds up to a megabyte).
READ_BYTES = 1 << 20


def describe_exit(code: int | None) -> str:
    """How a process ended, for a message: a signal by name (SIGKILL is often the kernel's out-of-memory killer)."""
    if code is None:
        return "it ended"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}{', perhaps out of memory' if name == 'SIGKILL' else ''}"
    return f"exit code {code}"


def _loaded(payload: bytes) -> Outcome | Raised | Decoded | Batched | Unloadable:
    """A worker's answer as it sent it pickled (:func:`scoring.pool.worker.serve`), or why it does not load."""
    try:
        answer: Outcome | Raised | Decoded | Batched = pickle.loads(payload)
    except Exception as exc:  # unpickling raises what the answer's classes raise
        return Unloadable(f"{type(exc).__name__}: {exc}")
    return answer


class Frames:
    """The messages coming on a pipe in :class:`multiprocessing.connection.Connection`'s framing (what a worker's
    ``send`` writes), read without blocking: each :meth:`read` takes what the pipe holds now in one or a few
    system calls and unpickles every whole message. A Connection's ``poll`` and ``recv`` cost a selector and two
    reads per message, about a tenth of the reading process's time at 2 workers."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection  # kept open while read: its descriptor is ours
        self.fd: int = connection.fileno()
        os.set_blocking(self.fd, False)
        self.buffer = bytearray()
        self.ended = False  # the writing end closed (the worker ended)

    def read(self) -> list[Any]:
        """The whole messages the pipe holds now, in order; a message still arriving waits for the next read."""
        while not self.ended:
            try:
                chunk = os.read(self.fd, READ_BYTES)
            except BlockingIOError:
                break
            except OSError:
                self.ended = True
                break
            if not chunk:
                self.ended = True
                break
            self.buffer += chunk
        messages: list[Any] = []
        buffer, at = self.buffer, 0
        while len(buffer) - at >= 4:
            (size,) = struct.unpack_from("!i", buffer, at)
            head = 4
            if size == -1:  # a message past 2 GiB: its size follows in 8 bytes
                if len(buffer) - at < 12:
                    break
                (size,) = struct.unpack_from("!Q", buffer, at + 4)
                head = 12
            if len(buffer) - at - head < size:
                break
            messages.append(pickle.loads(buffer[at + head : at + head + size]))
            at += head + size
        del buffer[:at]
        return messages

    def fileno(self) -> int:
        """The pipe's descriptor (a selector watches it)."""
        return self.fd

    def close(self) -> None:
        self.connection.close()


class Processes:
    """``workers`` spawned processes, each with a pipe to it and one back. This process writes to a worker
    without blocking (what the pipe does not take now waits in :attr:`unsent` and is written when the pipe
    can take it, while ``collect`` waits), so it never blocks writing to a worker that is blocked writing its
    result back; nor does a thread hand messages on (a GIL hand-off per rollout cost milliseconds)."""

    depth = DEPTH
    queues = True  # a unit sent before READY waits in the worker's pipe

    def __init__(
        self, replayer: Replayer, workers: int, done: frozenset[UnitKey] = frozenset(), *, first: int | None = None
    ) -> None:
        """``workers`` workers, ``first`` of them started now (all when ``None``), the others by :meth:`start_first`;
        ``done``: the identities a worker that decodes a unit need not replay (already in the output)."""
        self.settings = pickle.dumps((replayer, done))  # done: what a worker that decodes need not replay
        self.processes: list[Any] = [None] * workers
        self.inboxes: list[Any] = [None] * workers  # results from each worker (Frames)
        self.outboxes: list[Any] = [None] * workers  # messages to it (non-blocking)
        self.unsent: list[bytearray] = [bytearray() for _ in range(workers)]
        self.started = [False] * workers  # READY came: the worker has its imports and settings
        self.built: list[set[int]] = [set() for _ in range(workers)]  # the tokens whose BUILT came
        # Kept for the run (collect is called after every rollout replayed here: a selector each time cost more
        # than the wait): each started worker's results and sentinel, and its pipe while bytes wait for it.
        self.selector = selectors.DefaultSelector()
        self.writing: set[int] = set()
        self.stopped: set[int] = set()  # workers stopped and not started again (their pipes are closed)
        self.pipe_bytes = system_pipe_bytes(2 * workers)  # the pipes to and from each worker
        for worker in range(workers if first is None else min(first, workers)):
            self.start(worker)

    def start_first(self, count: int | None = None) -> None:
        """Start those of the first ``count`` workers (all when ``None``) not started yet."""
        for worker, process in enumerate(self.processes[:count]):
            if process is None:
                self.start(worker)

    def start(self, worker: int) -> None:
        """Start ``worker``: one started early (:func:`~prefix_exec.scoring.pool.spawn.start_early`, its pipes sized
        for this pool) if one is left, else a new one; its first message is this run's settings."""
        spawned = take_early() or spawn(pipe_size=self.pipe_bytes)
        self.processes[worker] = spawned.process
        self.inboxes[worker], self.outboxes[worker] = Frames(spawned.answers), spawned.orders
        self.unsent[worker] = bytearray()
        self.started[worker] = False
        self.built[worker] = set()
        self.stopped.discard(worker)
        self.selector.register(self.inboxes[worker], selectors.EVENT_READ, worker)
        self.selector.register(spawned.process.sentinel, selectors.EVENT_READ, worker)
        self._send(worker, self.settings)

    def launched(self, worker: int) -> bool:
        """Whether ``worker`` was started (and not stopped): what it is sent waits in its pipe until it has read its
        settings, and it runs it then, in order."""
        return self.processes[worker] is not None and worker not in self.stopped

    def available(self, worker: int) -> bool:
        """Whether ``worker`` has said READY (as :meth:`collect` last read: its imports and settings are done)."""
        return self.started[worker]

    def holds(self, worker: int, token: int) -> bool:
        """Whether ``worker`` said it built ``token``'s environment (BUILT, as :meth:`collect` last read)."""
        return token in self.built[worker]

    def send_env(self, worker: int, token: int, data: bytes) -> None:
        self._send(worker, ("env", token, data))

    def send_unit(self, worker: int, seq: int, unit: Scorable | Undecoded | Batch, token: int) -> None:
        if isinstance(unit, Undecoded):
            self._send(worker, ("raw", seq, unit.decode, token))
        elif isinstance(unit, Batch):
            self._send(worker, ("batch", seq, unit.read, token))
        else:
            self._send(worker, ("unit", seq, unit.rollout, token))

    def _send(self, worker: int, message: object) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        # The framing of multiprocessing's Connection.send_bytes, which the worker's recv reads.
        size = struct.pack("!i", len(data)) if len(data) <= 0x7FFFFFFF else struct.pack("!iQ", -1, len(data))
        self.unsent[worker] += size + data
        self._write(worker)

    def _write(self, worker: int) -> None:
        """Write what the pipe to ``worker`` takes now of its unsent bytes."""
        unsent = self.unsent[worker]
        while unsent:
            try:
                written = os.write(self.outboxes[worker].fileno(), unsent)
            except BlockingIOError:
                return
            except OSError:  # the worker is gone: collect reports it
                unsent.clear()
                return
            del unsent[:written]

    def collect(self, timeout: float | None = None) -> list[Event]:
        """What the workers sent (READY and BUILT are noted, not listed) and the deaths of those that ended,
        writing what the pipes to them take meanwhile; waits for at least one event, or at most ``timeout`` seconds
        (``None``: no bound; 0: what is there now)."""
        events: list[Event] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        while not events:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            for worker, unsent in enumerate(self.unsent):
                self._watch_writes(worker, bool(unsent))
            if not self.selector.get_map():  # no worker started: nothing can come
                break
            ready = self.selector.select(left)
            for worker in sorted({key.data for key, mask in ready if mask & selectors.EVENT_WRITE}):
                self._write(worker)
            for worker in sorted({key.data for key, mask in ready if mask & selectors.EVENT_READ}):
                events += self._receive(worker)
            if not ready and timeout != 0:  # a wait that timed out: ends its pipes did not show (see _silent)
                events += self._silent()
            if deadline is not None and time.monotonic() >= deadline:
                break
        return events

    def _silent(self) -> list[Event]:
        """The deaths of workers whose end their pipes did not show: a process a worker forked (a hook's, say)
        and that outlives it holds its pipes open, so neither its answers' end nor its sentinel is ever ready."""
        events: list[Event] = []
        for worker, process in enumerate(self.processes):
            if process is not None and worker not in self.stopped and not process.is_alive():
                events += self._receive(worker)
        return events

    def _receive(self, worker: int) -> list[Event]:
        """What ``worker`` sent, and its death when it has ended."""
        events: list[Event] = []
        process = self.processes[worker]
        # Seen ended before the read: then all it sent is in the pipe (read now, listed before its death); checked
        # after, an answer sent between the read and the check would be lost and its rollout called the culprit.
        ended = not process.is_alive()
        for seq, outcome in self.inboxes[worker].read():  # what it sent before it ended too
            if seq == READY:
                self.started[worker] = True
            elif seq == BUILT:
                self.built[worker].add(outcome)
            else:
                events.append((worker, seq, _loaded(outcome)))
        if ended:
            process.join(1)
            events.append((worker, None, Died(describe_exit(process.exitcode))))
        return events

    def restart(self, worker: int) -> None:
        self.stop(worker)
        self.start(worker)

    def _watch_writes(self, worker: int, wanted: bool) -> None:
        """Have :meth:`collect` wake when the pipe to ``worker`` can take bytes (``wanted``), or not."""
        if wanted and worker not in self.writing and self.processes[worker] is not None:
            self.selector.register(self.outboxes[worker], selectors.EVENT_WRITE, worker)
            self.writing.add(worker)
        elif not wanted and worker in self.writing:
            self.selector.unregister(self.outboxes[worker])
            self.writing.discard(worker)

    def stop(self, worker: int) -> None:
        """End ``worker`` and close its pipes; it sends nothing more (:meth:`restart` starts it again)."""
        process = self.processes[worker]
        if process.is_alive():
            process.kill()
        process.join(5)
        self._watch_writes(worker, False)
        self.unsent[worker].clear()  # never written: collect must not watch a closed pipe for it
        self.stopped.add(worker)
        for watched in (self.inboxes[worker], process.sentinel):
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(watched)
        self.inboxes[worker].close()
        self.outboxes[worker].close()

    def close(self, *, settle: bool = True) -> None:
        """End every worker (``settle`` is Ray's: a process is ended at once)."""
        for worker, process in enumerate(self.processes):
            if process is not None:
                with contextlib.suppress(Exception):
                    self.stop(worker)
        self.selector.close()
