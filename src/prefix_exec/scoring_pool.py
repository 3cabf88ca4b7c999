"""Replay on every core: ``score --workers N`` (worker processes) and ``--launcher ray`` (Ray actors).

The reading process keeps everything but the replays: it reads the inputs, checks identities, writes the
records, all in input order (:mod:`prefix_exec.scoring`). Each rollout goes to a worker as soon as one has
room (:data:`~prefix_exec.scoring_processes.DEPTH` in flight each), and its outcome waits in a window of at
most :data:`WINDOW` units per worker until every unit before it is written. So the file is byte for byte what
one worker writes, a kill loses at most the window, and ``--resume`` skips what was written.

A worker gets each environment once, as its :class:`~prefix_exec.recipe.Recipe` (the worker builds it once:
no input is parsed again per rollout) or, without one, pickled; an environment that does not pickle has its
rollouts replayed in the reading process (said once on the log). Workers are spawned, as the runner's are
(:mod:`prefix_exec.runner.launchers`): a fork would copy the reading process's threads' locks mid-use, and
ToolSandbox deadlocks under fork. Spawning costs a Python start and this package's imports per worker, so
with ``--launcher local`` the reading process replays the first rollouts itself, starts at once as many
workers as there are cores it leaves idle and the others after :data:`START_SECONDS`, and hands rollouts to
them once all of them are ready (at most :data:`IN_PROCESS_SECONDS` in). Records are fsynced in groups
(:data:`SYNC_SECONDS`) from the start.

A worker that dies (killed, out of memory in C) costs only the rollout it was replaying: that rollout is
reported unscorable, a new worker starts and takes the rollouts queued behind it. Ctrl-C and SIGTERM end the
workers and leave the records written so far. The workers and their pipes are
:mod:`prefix_exec.scoring_processes`'s.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from functools import partial
from typing import Any, TextIO

from prefix_exec.scoring import SYNC, Outcome, Replayer, Scorable, Sync, Undecoded, unit_name
from prefix_exec.scoring_processes import Died, Processes, Transport
from prefix_exec.scoring_tickets import Admission
from prefix_exec.scoring_worker import Decoded, Raised
from prefix_exec.trajectory import Skipped

WINDOW = 8
#: Records are fsynced in a group at most this often, in process or when the pool waits (a kill keeps every
#: record written: each is flushed to the kernel; a machine crash may lose the last group), and at the end.
SYNC_SECONDS = 0.5
#: At most this many seconds of scoring are done in the reading process before workers take the rollouts
#: (``--launcher local``; sooner when they are ready): starting workers costs a Python start and the imports
#: each, about 1 s (tau2's import takes several), more than small or cheap inputs would save.
IN_PROCESS_SECONDS = 2.0
#: Seconds into that in-process scoring at which the workers not started with it (those beyond the cores this
#: process leaves idle) are started; it ends as soon as all of them are ready (said READY: imports done), so no
#: core waits. An input done sooner costs only the workers idle cores took; one done before they are ready
#: costs their start, on other cores.
START_SECONDS = 0.5
#: The launchers a ``score`` command takes (``--launcher``), as ``run --launcher`` has them.
LAUNCHERS = ("local", "ray")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, as a scheduler or container set it), at least 1."""
    counter = getattr(os, "process_cpu_count", None)  # Python 3.13
    if counter is not None:
        return int(counter() or 1)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


#: What the pool takes, in input order (:meth:`~prefix_exec.scoring_tickets.Admission.deferring`).
Ticket = Scorable | Undecoded | Outcome


def ordered(
    tickets: Iterator[Ticket],
    replayer: Replayer,
    admission: Admission,
    *,
    workers: int,
    launcher: str,
    log: TextIO,
) -> Generator[Outcome | Sync]:
    """The outcome of every ticket in input order: settled ones as they are, rollouts replayed by ``workers``
    workers of ``launcher`` (one of :data:`LAUNCHERS`) with ``replayer``, undecoded ones decoded there too and
    settled by ``admission`` in their turn; :data:`~prefix_exec.scoring.SYNC` before each wait for the workers.
    SIGTERM ends the run as Ctrl-C does, from the start (no worker is left behind, and the command says what it
    kept)."""
    with _terminate_as_interrupt():
        yield from _scored(tickets, replayer, admission, workers=workers, launcher=launcher, log=log)


def _scored(
    tickets: Iterator[Ticket], replayer: Replayer, admission: Admission, *, workers: int, launcher: str, log: TextIO
) -> Iterator[Outcome | Sync]:
    if not _sendable(replayer, log):
        yield from _in_process(tickets, replayer, admission)
        return
    transport: Transport | None = None
    try:
        if launcher == "local":
            # Replay here first: an input done within IN_PROCESS_SECONDS never waits for workers; those that
            # take longer find the workers started and through their imports meanwhile: at once as many as there
            # are cores this process leaves idle (their start costs this process a few milliseconds), the others
            # after START_SECONDS (they would take a core from it).
            processes: Processes | None = None

            def start(count: int | None) -> None:
                nonlocal processes, transport
                if processes is None:
                    processes = transport = Processes(replayer, workers, admission.done, first=0)
                processes.start_first(count)

            def ready() -> bool:
                return processes is not None and processes.ready()

            early = min(workers, usable_cores() - 1)
            steps = [*([(0.0, partial(start, early))] if early > 0 else []), (START_SECONDS, partial(start, None))]
            here = _in_process(tickets, replayer, admission, seconds=IN_PROCESS_SECONDS, at=steps, until=ready)
            if (yield from here):
                return
            start(None)
        elif launcher == "ray":
            from prefix_exec.scoring_ray import RayActors

            transport = RayActors(replayer, workers, admission.done)
        else:
            transport = Processes(replayer, workers, admission.done)
        assert transport is not None  # set by start() when local
        yield from _Schedule(tickets, transport, replayer, admission, workers, log).run()
    finally:
        if transport is not None:
            transport.close()


def _in_process(
    tickets: Iterator[Ticket],
    replayer: Replayer,
    admission: Admission,
    *,
    seconds: float | None = None,
    at: Sequence[tuple[float, Callable[[], None]]] = (),
    until: Callable[[], bool] | None = None,
) -> Generator[Outcome | Sync, None, bool]:
    """The outcomes of ``tickets`` replayed in this process, as with one worker, for at most ``seconds`` (all
    of them when ``None``), with :data:`~prefix_exec.scoring.SYNC` every :data:`SYNC_SECONDS`; ``at``: call
    each function once its seconds have passed (those of 0 before the first ticket); ``until``: stop as soon
    as it is true. Returns whether ``tickets`` ran out."""
    started = synced = time.monotonic()
    steps = deque(sorted(at, key=lambda step: step[0]))

    def due(now: float) -> None:
        while steps and now - started >= steps[0][0]:
            steps.popleft()[1]()

    due(started)
    for ticket in tickets:
        if isinstance(ticket, Scorable):
            yield replayer(ticket.rollout, ticket.env)
        elif isinstance(ticket, Undecoded):
            yield _raised(admission.settle(ticket, None, replayer))
        else:
            yield ticket
        now = time.monotonic()
        if now - synced >= SYNC_SECONDS:
            yield SYNC
            synced = now
        due(now)
        if (seconds is not None and now - started >= seconds) or (until is not None and until()):
            return False
    return True


def _sendable(replayer: Replayer, log: TextIO) -> bool:
    """Whether ``replayer`` (its ``prepare``) pickles to the workers; said on ``log`` when it does not."""
    try:
        pickle.dumps(replayer)
    except Exception as exc:  # pickle raises what the object's reduction raises
        print(
            f"prefix-exec: note: the rollouts' preparation cannot be sent to workers ({type(exc).__name__}); every "
            "rollout is replayed in this process",
            file=log,
        )
        return False
    return True


def _raised(outcome: Outcome | Raised) -> Outcome:
    """``outcome``, or its error raised (a reading error, or one the replay let through: one worker raises it)."""
    if isinstance(outcome, Raised):
        raise outcome.error
    return outcome


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt for the block (main thread, default handler only), so a terminated
    run ends its workers and says what it kept, as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) not in (
        signal.SIG_DFL,
        None,
    ):
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


_PENDING = object()


class _Schedule:
    """One run's queue: the window of units in input order and what each worker holds."""

    def __init__(
        self,
        tickets: Iterator[Ticket],
        transport: Transport,
        replayer: Replayer,
        admission: Admission,
        workers: int,
        log: TextIO,
    ) -> None:
        self.tickets, self.transport, self.replayer, self.log = tickets, transport, replayer, log
        self.admission = admission
        # [seq, outcome or _PENDING or Raised, None]; an undecoded unit's: [seq, _PENDING or the worker's answer
        # (Decoded, Died, None: decoded here), the unit], settled when it is the oldest. Oldest first.
        self.window: deque[list[Any]] = deque()
        self.entries: dict[int, list[Any]] = {}
        self.held: list[deque[tuple[int, Scorable | Undecoded]]] = [deque() for _ in range(workers)]
        self.known: list[set[int]] = [set() for _ in range(workers)]
        self.envs: dict[int, tuple[int | None, object]] = {}  # id(env) -> (token or None: not sendable, env)
        self.payloads: list[bytes] = []  # by token
        self.size = WINDOW * workers
        self.seq = 0
        self.exhausted = False
        self.synced = -SYNC_SECONDS  # the first wait syncs: from then on records are fsynced in groups

    def run(self) -> Iterator[Outcome | Sync]:
        while True:
            self.fill()
            while self.window and self.window[0][1] is not _PENDING:
                _, outcome, undecoded = self.window.popleft()
                if undecoded is not None:  # admitted now, in its turn (and decoded here if need be)
                    outcome = self.admission.settle(undecoded, outcome, self.replayer)
                yield _raised(outcome)
            if not self.window and self.exhausted:
                return
            if any(self.held):
                if time.monotonic() - self.synced >= SYNC_SECONDS:
                    yield SYNC
                    self.synced = time.monotonic()
                for worker, seq, outcome in self.transport.collect():
                    self.receive(worker, seq, outcome)

    def fill(self) -> None:
        """Read tickets while the window has room and some worker can take a rollout."""
        while not self.exhausted and len(self.window) < self.size:
            free = min(range(len(self.held)), key=lambda w: len(self.held[w]))
            if len(self.held[free]) >= self.transport.depth:
                return
            try:
                ticket: Any = next(self.tickets)
            except StopIteration:
                self.exhausted = True
                return
            except Exception as exc:  # a reading error: raised in its turn, after the units read before it
                self.exhausted = True
                ticket = Raised(exc)
            entry = [self.seq, ticket, ticket if isinstance(ticket, Undecoded) else None]
            self.seq += 1
            self.window.append(entry)
            if isinstance(ticket, Scorable | Undecoded):
                token = self.token(ticket)
                if token is None:  # replayed here, in input order like the rest (an undecoded unit in its turn)
                    entry[1] = None if isinstance(ticket, Undecoded) else self.replayer(ticket.rollout, ticket.env)
                else:
                    entry[1] = _PENDING
                    self.entries[entry[0]] = entry
                    self.dispatch(free, entry[0], ticket, token)

    def token(self, unit: Scorable | Undecoded) -> int | None:
        """The number workers know ``unit``'s environment by; ``None`` when it cannot be sent to them."""
        key = id(unit.env)  # the env is kept in self.envs, so its id is not reused
        if key not in self.envs:
            token: int | None = None
            try:
                self.payloads.append(pickle.dumps(unit.recipe if unit.recipe is not None else unit.env))
                token = len(self.payloads) - 1
            except Exception as exc:  # pickle raises what the object's reduction raises
                print(
                    f"prefix-exec: note: the environment {getattr(unit.env, 'name', type(unit.env).__name__)} "
                    f"cannot be sent to worker processes ({type(exc).__name__}); its rollouts are replayed in "
                    "this process",
                    file=self.log,
                )
            self.envs[key] = (token, unit.env)
        return self.envs[key][0]

    def dispatch(self, worker: int, seq: int, unit: Scorable | Undecoded, token: int) -> None:
        if token not in self.known[worker]:
            self.transport.send_env(worker, token, self.payloads[token])
            self.known[worker].add(token)
        self.transport.send_unit(worker, seq, unit, token)
        self.held[worker].append((seq, unit))

    def receive(self, worker: int, seq: int | None, outcome: Outcome | Raised | Decoded | Died) -> None:
        if not isinstance(outcome, Died):
            held_seq, _ = self.held[worker].popleft()
            assert held_seq == seq, "a worker answers in the order it was sent"
            self.entries.pop(held_seq)[1] = outcome
            return
        if not self.held[worker]:  # it died idle (the pool is closing): nothing lost
            self.transport.restart(worker)
            self.known[worker] = set()
            return
        # The rollout it was replaying is the one that killed it; those queued behind it go to its successor.
        culprit, unit = self.held[worker].popleft()
        self.entries.pop(culprit)[1] = (
            outcome  # named once decoded, in its turn
            if isinstance(unit, Undecoded)
            else Skipped(unit_name(unit.rollout), f"the worker process died replaying it ({outcome.why})")
        )
        queued = list(self.held[worker])
        self.held[worker].clear()
        self.transport.restart(worker)
        self.known[worker] = set()
        for seq_again, again in queued:
            token = self.token(again)
            assert token is not None
            self.dispatch(worker, seq_again, again, token)
