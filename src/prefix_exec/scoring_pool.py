"""Replay on every core: ``score --workers N`` (processes) and ``--launcher ray`` (Ray actors).

The reading process keeps everything but the replays: it reads the inputs, checks identities, writes the
records, all in input order (:mod:`prefix_exec.scoring`). Each rollout goes to a worker as soon as one has
room (:data:`~prefix_exec.scoring_processes.DEPTH` in flight each), and its outcome waits in a window of at
most :data:`WINDOW` units per replaying process until every unit before it is written. So the file is byte
for byte what one worker writes, a kill loses at most the window, and ``--resume`` skips what was written.

With ``--launcher local``, ``--workers N`` is N replaying processes: this one and N - 1 workers. This process
replays a rollout itself whenever no ready worker has room for one: while the workers start (a Python start and
this package's imports each, about 0.3 s; tau2's take several), so an input done before they are ready never
waits for them, and whenever every worker is busy, so no core waits on this one. It starts at once as many
workers as there are cores it leaves idle, the others after :data:`START_SECONDS` (none once every rollout is
handed out: they would be given nothing).

A worker gets each environment once, as its :class:`~prefix_exec.recipe.Recipe` (the worker builds it once:
no input is parsed again per rollout) or, without one, pickled; an environment that does not pickle has its
rollouts replayed in the reading process (said once on the log). Workers are spawned
(:mod:`prefix_exec.scoring_spawn`: the command's entry point spawns those started at once as it starts, so their
start overlaps its own). A worker sends each record back as its line, made there
(:class:`~prefix_exec.scoring.Written`). Records are fsynced in groups, as with one worker
(:data:`~prefix_exec.scoring.SYNC_SECONDS`).

A worker that dies (killed, out of memory in C) costs only the rollout it was replaying: that rollout is
reported unscorable, a new worker starts and takes the rollouts queued behind it. Ctrl-C and SIGTERM end the
workers and leave the records written so far. The workers and their pipes are
:mod:`prefix_exec.scoring_processes`'s.
"""

from __future__ import annotations

import contextlib
import pickle
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator
from functools import partial
from typing import Any, TextIO

from prefix_exec.envs.base import Environment
from prefix_exec.scoring import (
    SYNC,
    SYNC_SECONDS,
    EnvFor,
    Outcome,
    Replayer,
    Scorable,
    Sync,
    Undecoded,
    add_syncs,
    unit_name,
)
from prefix_exec.scoring_processes import Died, Processes, Transport, Unloadable
from prefix_exec.scoring_spawn import usable_cores
from prefix_exec.scoring_tickets import Admission
from prefix_exec.scoring_worker import Decoded, Raised, decode_on
from prefix_exec.trajectory import Rollout, Skipped

#: Units the window holds per replaying process beyond what the workers hold: while a worker works through its
#: queue, this process goes on reading and replaying that many (with 8, it waited on the worker a tenth of the
#: time, and the worker on it). A kill loses at most the window (records in flight, a few MB at most).
WINDOW = 64
#: Seconds after the start at which the workers not started at once (those beyond the cores this process leaves
#: idle) are started: they would take a core from this process, worth it only for an input that lasts.
START_SECONDS = 0.5
#: Whether, with ``--launcher local``, this process replays a rollout when no ready worker has room (see the
#: module docstring); when false (tests of the workers), ``--workers N`` starts N workers and this process only
#: reads and writes.
REPLAY_HERE = True
#: With ``REPLAY_HERE``, each worker is given rollouts enough for about this many seconds of replay (judged by
#: the rollouts replayed here; at most :data:`MOST_HELD` and at least the transport's depth): while this process
#: replays one, or reads a file, a worker must not run out of rollouts. A file is read whole: tau-bench's 200
#: conversations (3 MB) take 15-30 ms to parse, and with 0.02 s the worker of ``--workers 2`` sat idle 3-7% of a
#: 6,600-transcript run (its CPU time sampled every 0.25 s), against 1% with 0.05 (there, with tau-bench's 0.8 ms a
#: rollout, :data:`MOST_HELD` binds too: 64 rollouts). Raising either further would not help: 64 of those
#: conversations fill a worker's 1 MiB pipe, and what a pipe does not take waits in this process, unsent while it
#: parses. Short all the same, so that at the end no worker is left with a long queue while this process waits.
QUEUE_SECONDS = 0.05
MOST_HELD = 64
#: With ``REPLAY_HERE``, a worker that ends before it is ready this many times in a row is not started again
#: (its rollouts are replayed in this process, said once): one that cannot load its settings (a function of a
#: notebook's or a script's ``__main__``, which a spawned process cannot import) would be restarted all run long.
MOST_FAILED_STARTS = 3
#: Seconds a wait for the workers lasts at most: then the transport looks whether they are alive, since a
#: worker's end may not show on its pipes (a process it forked holds them open).
LIVENESS_SECONDS = 1.0
#: The launchers a ``score`` command takes (``--launcher``), as ``run --launcher`` has them.
LAUNCHERS = ("local", "ray")


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
    settled by ``admission`` in their turn; :data:`~prefix_exec.scoring.SYNC` at most every
    :data:`~prefix_exec.scoring.SYNC_SECONDS`, between outcomes.
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
    transport: Transport
    here = launcher == "local" and REPLAY_HERE
    count = workers - 1 if here else workers  # here: this process is one of the N
    start_later: Callable[[], None] | None = None
    if launcher == "ray":
        from prefix_exec.scoring_ray import RayActors

        transport = RayActors(replayer, count, admission.done)
    elif here:
        early = min(count, usable_cores() - 1)  # at once as many as there are cores this process leaves idle
        processes = transport = Processes(replayer, count, admission.done, first=early)
        if early < count:
            start_later = processes.start_first
    else:
        transport = Processes(replayer, count, admission.done)
    schedule = _Schedule(tickets, transport, replayer, admission, count, log, here=here, start_later=start_later)
    try:
        yield from schedule.run()
    finally:
        transport.close()


def _in_process(tickets: Iterator[Ticket], replayer: Replayer, admission: Admission) -> Iterator[Outcome | Sync]:
    """The outcomes of ``tickets`` replayed in this process, as with one worker."""

    def outcome(ticket: Ticket) -> Outcome:
        if isinstance(ticket, Scorable):
            return replayer(ticket.rollout, ticket.env)
        if isinstance(ticket, Undecoded):
            return _raised(admission.settle(ticket, None, replayer))
        return ticket

    return add_syncs(outcome(ticket) for ticket in tickets)


def _sendable(replayer: Replayer, log: TextIO) -> bool:
    """Whether ``replayer`` (its ``prepare``, and the ``look`` of the run's observer) pickles to the workers; said
    on ``log``, naming the part that does not, when it does not."""
    try:
        pickle.dumps(replayer)
    except Exception as exc:  # pickle raises what the object's reduction raises
        parts = [("the rollouts' preparation", replayer.prepare), ("the look of the run's on_record", replayer.look)]
        what = " and ".join(name for name, part in parts if part is not None and not _pickles(part))
        print(
            f"prefix-exec: note: {what or 'the replayer'} cannot be sent to workers ({type(exc).__name__}); every "
            "rollout is replayed in this process",
            file=log,
        )
        return False
    return True


def _pickles(part: object) -> bool:
    try:
        pickle.dumps(part)
    except Exception:
        return False
    return True


def _caught(replayer: Replayer, rollout: Rollout, env: Environment | EnvFor) -> Outcome | Raised:
    """``rollout`` replayed here as a worker replays it: an exception the replay lets through is raised in its
    turn (:func:`_raised`), after the units before it are written."""
    try:
        return replayer(rollout, env)
    except Exception as exc:
        return Raised(exc)


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
_END = object()  # no ticket is left


class _Schedule:
    """One run's queue: the window of units in input order and what each worker holds; with ``here``, rollouts
    no ready worker has room for are replayed in this process (see the module docstring); ``start_later``
    starts the workers not started at once, :data:`START_SECONDS` in."""

    def __init__(
        self,
        tickets: Iterator[Ticket],
        transport: Transport,
        replayer: Replayer,
        admission: Admission,
        workers: int,
        log: TextIO,
        *,
        here: bool = False,
        start_later: Callable[[], None] | None = None,
    ) -> None:
        self.tickets, self.transport, self.replayer, self.log = tickets, transport, replayer, log
        self.admission, self.here, self.start_later = admission, here, start_later
        # [seq, outcome or _PENDING or Raised, None]; an undecoded unit's: [seq, _PENDING or the answer (Decoded,
        # Died, None: decoded in its turn), the unit], settled when it is the oldest. Oldest first.
        self.window: deque[list[Any]] = deque()
        self.entries: dict[int, list[Any]] = {}
        self.held: list[deque[tuple[int, Scorable | Undecoded]]] = [deque() for _ in range(workers)]
        self.known: list[set[int]] = [set() for _ in range(workers)]
        self.failed_starts = [0] * workers  # deaths before READY in a row (with here: see MOST_FAILED_STARTS)
        self.envs: dict[int, tuple[int | None, object]] = {}  # id(env) -> (token or None: not sendable, env)
        self.payloads: list[bytes] = []  # by token
        self.depth = transport.depth  # rollouts a worker may hold (more, with here, for quick rollouts)
        self.unit_seconds: float | None = None  # a moving mean of the rollouts replayed here
        self.seq = 0
        self.exhausted = False
        self.started = self.synced = time.monotonic()

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
            now = time.monotonic()
            if now - self.synced >= SYNC_SECONDS:
                yield SYNC
                self.synced = now
            if self.start_later is not None and self.exhausted:
                self.start_later = None  # every rollout is handed out: a worker started now would get none
            elif self.start_later is not None and now - self.started >= START_SECONDS:
                self.start_later()
                self.start_later = None
            if self.here and not self.exhausted and len(self.window) < self.size():
                timeout: float | None = 0.0  # more to replay here: only what the workers sent meanwhile
            elif any(self.held):
                timeout = LIVENESS_SECONDS
                if self.start_later is not None:
                    timeout = min(timeout, max(0.0, self.started + START_SECONDS - now))
            else:
                continue
            for worker, seq, outcome in self.transport.collect(timeout):
                self.receive(worker, seq, outcome)

    def fill(self) -> None:
        """Read tickets while the window has room: each rollout to the worker with the most room (with ``here``,
        a ready one that has built the rollout's environment), or, when none has room, replayed here; after one
        replayed here this returns, so that the workers' answers are read (and they are given more) between two
        replays here."""
        while not self.exhausted and len(self.window) < self.size():
            if not self.here and self.free(None) is None:
                return
            ticket = self.read()
            if ticket is _END:
                return
            seq = self.seq
            self.seq += 1
            entry: list[Any] = [seq, ticket, ticket if isinstance(ticket, Undecoded) else None]
            self.window.append(entry)
            if not isinstance(ticket, Scorable | Undecoded):
                continue
            token = self.token(ticket)
            worker = None if token is None else self.free(token)
            if worker is not None and token is not None:
                entry[1] = _PENDING
                self.entries[seq] = entry
                self.dispatch(worker, seq, ticket, token)
                continue
            entry[1] = self.replay_here(ticket)  # in input order like the rest (admitted in its turn)
            if self.here:
                return

    def size(self) -> int:
        """How many units the window may hold: what the workers may hold, and :data:`WINDOW` per replaying
        process beyond that."""
        return self.depth * len(self.held) + WINDOW * (len(self.held) + int(self.here))

    def free(self, token: int | None) -> int | None:
        """The worker holding the fewest rollouts, if it has room; with ``here``, of those ready and holding
        ``token``'s environment built (it is sent now to a ready worker that lacks it: the worker builds it at
        once, and this process replays meanwhile; a tau2 environment's imports take several seconds)."""
        best: int | None = None
        for worker, held in enumerate(self.held):
            if len(held) >= self.depth or (self.here and not self.transport.available(worker)):
                continue
            if self.here and token is not None and not self.transport.holds(worker, token):
                self.send_env(worker, token)
                continue
            if best is None or len(held) < len(self.held[best]):
                best = worker
        return best

    def read(self) -> Any:
        """The next ticket (a :data:`Ticket`); :data:`_END` when there is none left; a reading error as
        :class:`Raised` (raised in its turn, after the units read before it)."""
        try:
            return next(self.tickets)
        except StopIteration:
            self.exhausted = True
            return _END
        except Exception as exc:
            self.exhausted = True
            return Raised(exc)

    def replay_here(self, unit: Scorable | Undecoded) -> Outcome | Raised | Decoded | None:
        """What a worker would answer for ``unit``, replayed (decoded first) in this process; the time it took
        sets how many rollouts a worker is given (:data:`QUEUE_SECONDS`)."""
        started = time.perf_counter()
        answer: Outcome | Raised | Decoded | None
        if isinstance(unit, Undecoded):
            answer = decode_on(partial(_caught, self.replayer, env=unit.env), unit.decode, self.admission.done)
        else:
            answer = _caught(self.replayer, unit.rollout, unit.env)
        took = time.perf_counter() - started
        self.unit_seconds = took if self.unit_seconds is None else 0.8 * self.unit_seconds + 0.2 * took
        wanted = int(QUEUE_SECONDS / max(self.unit_seconds, 1e-6))
        self.depth = max(self.transport.depth, min(MOST_HELD, wanted))
        return answer

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

    def send_env(self, worker: int, token: int) -> None:
        """Send ``worker`` the environment of ``token`` unless it was sent it already (since it last started)."""
        if token not in self.known[worker]:
            self.transport.send_env(worker, token, self.payloads[token])
            self.known[worker].add(token)

    def gives_up(self, worker: int, died: Died) -> bool:
        """Whether ``worker``, which ended idle, is not started again: it ended before it was ready
        :data:`MOST_FAILED_STARTS` times in a row. It is stopped, and never ready, so it is given nothing (only
        with ``here``: this process replays what it would have); said on the log."""
        self.failed_starts[worker] = 0 if self.transport.available(worker) else self.failed_starts[worker] + 1
        if self.failed_starts[worker] < MOST_FAILED_STARTS:
            return False
        self.transport.stop(worker)
        print(
            f"prefix-exec: note: a worker process ended before it was ready {MOST_FAILED_STARTS} times in a row "
            f"({died.why}; its error is above); it is not started again, and this process replays its share",
            file=self.log,
        )
        return True

    def dispatch(self, worker: int, seq: int, unit: Scorable | Undecoded, token: int) -> None:
        self.send_env(worker, token)
        self.transport.send_unit(worker, seq, unit, token)
        self.held[worker].append((seq, unit))

    def receive(self, worker: int, seq: int | None, outcome: Outcome | Raised | Decoded | Unloadable | Died) -> None:
        if not isinstance(outcome, Died):
            held_seq, unit = self.held[worker].popleft()
            assert held_seq == seq, "a worker answers in the order it was sent"
            if isinstance(outcome, Unloadable):  # replayed here instead: its outcome is then one worker's
                print(
                    f"prefix-exec: note: a worker's answer could not be read here ({outcome.why}); the unit is "
                    "replayed in this process",
                    file=self.log,
                )
                self.entries.pop(held_seq)[1] = self.replay_here(unit)
                return
            self.entries.pop(held_seq)[1] = outcome
            return
        if not self.held[worker]:  # it died idle: nothing lost
            if self.here and self.gives_up(worker, outcome):
                return
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
