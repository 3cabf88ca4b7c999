"""The queue of one ``score --workers N`` run (:mod:`prefix_exec.scoring.pool.dispatch`): which unit goes to which
worker, which this process replays itself, and the window (:mod:`prefix_exec.scoring.pool.window`) that gives the
outcomes back in input order, settled as one worker would (:mod:`prefix_exec.scoring.pool.settlement`).

A unit (:data:`Ticket`) is a rollout, an undecoded one, or a :class:`~prefix_exec.scoring.units.Batch` of those (a
file's conversations). A worker holds at most :attr:`Schedule.depth` rollouts, or one batch. The units a worker
held when it died go again (:mod:`~prefix_exec.scoring.pool.deaths`). A transport that does not
:attr:`~prefix_exec.scoring.pool.messages.Transport.queues` units is sent them only once a worker is ready.

A batch no worker can take is read here, and its units enter the window at once, in order, to be replayed here
one by one (the workers' answers are read between two of them, so that a worker is given its next batch at once);
meanwhile a worker with room takes the next ticket, which comes after them in the window. The last batch is always
read here (one ticket is read ahead, so the last is known), and, once every ticket is read, workers with room take
units of what this process has left to replay, from its end, one by one: whole, the last batch would end the run in
one worker while the others wait.

The window holds at most :meth:`Schedule.size` tickets read ahead, and, of those, at most :data:`MOST_EXPANDED`
batches beyond one per worker (a batch counts as one ticket, and its units as none), so a kill loses at most the
window.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, TextIO

from prefix_exec.scoring.admission import Admission
from prefix_exec.scoring.pool.affinity import HERE, Affinities
from prefix_exec.scoring.pool.deaths import Deaths
from prefix_exec.scoring.pool.environments import Environments
from prefix_exec.scoring.pool.intake import END, Intake
from prefix_exec.scoring.pool.messages import Batched, Decoded, Died, Raised, Transport, Unloadable
from prefix_exec.scoring.pool.settlement import Settlement, caught, lost
from prefix_exec.scoring.pool.window import PENDING, Entry, Window
from prefix_exec.scoring.pool.worker import decode_on
from prefix_exec.scoring.replayer import SYNC, SYNC_SECONDS, Outcome, Replayer, Sync
from prefix_exec.scoring.units import Batch, Scorable, Undecoded, unit_name

#: Units the window holds per replaying process beyond what the workers hold: while a worker works through its
#: queue, this process goes on reading and replaying that many (with 8, it waited on the worker a tenth of the
#: time, and the worker on it). A kill loses at most the window (records in flight; with batches, see below).
WINDOW = 64
#: Batches the window may hold beyond one per worker (a batch's records wait there for a slow batch before
#: them): a batch that takes long holds the rest back after that many, so the records waiting are a few files'.
MOST_EXPANDED = 4
#: Seconds after the start at which the workers not started at once (those beyond the cores this process leaves
#: idle) are started: they would take a core from this process, worth it only for an input that lasts.
START_SECONDS = 0.5
#: With ``here``, each worker is given rollouts enough for about this many seconds of replay (judged by the
#: rollouts replayed here; at most :data:`MOST_HELD` and at least the transport's depth): while this process
#: replays one, or reads a file, a worker must not run out of rollouts. A file is read whole: tau-bench's 200
#: conversations (3 MB) take 15-30 ms to parse, and with 0.02 s the worker of ``--workers 2`` sat idle 3-7% of a
#: 6,600-transcript run (its CPU time sampled every 0.25 s), against 1% with 0.05 (there, with tau-bench's 0.8 ms a
#: rollout, :data:`MOST_HELD` binds too: 64 rollouts). Raising either further would not help: 64 of those
#: conversations fill a worker's 1 MiB pipe, and what a pipe does not take waits in this process, unsent while it
#: parses. Short all the same, so that at the end no worker is left with a long queue while this process waits.
QUEUE_SECONDS = 0.05
MOST_HELD = 64
#: Seconds a wait for the workers lasts at most: then the transport looks whether they are alive, since a
#: worker's end may not show on its pipes (a process it forked holds them open).
LIVENESS_SECONDS = 1.0

#: What the schedule takes, in input order (:meth:`~prefix_exec.scoring.admission.Admission.deferring`).
Ticket = Scorable | Undecoded | Batch | Outcome


class Schedule:
    """One run's queue: the window of units in input order and what each worker holds; with ``here``, units no
    ready worker has room for are replayed in this process (see :mod:`prefix_exec.scoring.pool.dispatch`);
    ``start_later`` starts the workers not started at once, :data:`START_SECONDS` in."""

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
        self.transport, self.replayer, self.log = transport, replayer, log
        self.admission, self.here, self.start_later = admission, here, start_later
        self.settlement = Settlement(admission, replayer, log)
        self.window = Window()
        self.entries: dict[int, Entry] = {}  # those a worker holds, by seq
        self.local: deque[Entry] = deque()  # units of batches read here, to replay here, in order
        self.peeked: Any = None  # a ticket read that waits for a worker (this process has its own to replay)
        self.held: list[deque[tuple[int, Scorable | Undecoded | Batch]]] = [deque() for _ in range(workers)]
        self.deaths = Deaths(workers)  # the dead workers' units to send again
        self.environments = Environments(transport, workers, log)
        self.affinities = Affinities(workers)
        self.depth = transport.depth  # rollouts a worker may hold (more, with here, for quick rollouts)
        self.unit_seconds: float | None = None  # a moving mean of the rollouts replayed here
        self.intake = Intake(tickets)  # read one ahead: exhausted once the last is read (it may wait in peeked)
        self.started = self.synced = time.monotonic()

    def run(self) -> Iterator[Outcome | Sync]:
        while True:
            self.fill()
            if self.local:  # one unit of a batch read here; the workers' answers are read before the next
                entry = self.local.popleft()
                entry[1] = self.replay_here(entry[2])
            for settled in self.window.settled():
                yield from self.settlement.settle_entry(settled)
            handed_out = self.intake.exhausted and self.peeked is None  # every ticket read and placed in the window
            if not self.window and handed_out:
                return
            now = time.monotonic()
            if now - self.synced >= SYNC_SECONDS:
                yield SYNC
                self.synced = now
            if self.start_later is not None and handed_out:
                self.start_later = None  # every rollout is handed out: a worker started now would get none
            elif self.start_later is not None and now - self.started >= START_SECONDS:
                self.start_later()
                self.start_later = None
            if self.busy_here() or (self.here and self.steal()):
                timeout: float | None = 0.0  # more to replay here: only what the workers sent meanwhile
            elif any(self.held) or self.deaths.again or self.peeked is not None or any(self.affinities.waiting):
                timeout = LIVENESS_SECONDS  # a worker holds units, or units wait for one to be ready or have room
                if self.start_later is not None:
                    timeout = min(timeout, max(0.0, self.started + START_SECONDS - now))
            else:
                continue
            for worker, seq, outcome in self.transport.collect(timeout):
                self.receive(worker, seq, outcome)

    def fill(self) -> None:
        """Read tickets while the window has room (see the module docstring): each to the worker with the most
        room that can take it, or, when none can, replayed (a batch read) here; after a rollout replayed or a
        batch read here this returns, so that the workers' answers are read (and they are given more) between
        two replays here. While this process has a batch's units of its own to replay, a ticket is read only when
        a worker can take it; once none is left, a worker with room takes some of those units (:meth:`share`)."""
        if not self.send_again():
            return
        self.feed()
        if self.intake.exhausted and self.peeked is None:
            self.share()
        while not self.intake.exhausted or self.peeked is not None:
            if self.peeked is None and not self.room():
                return
            if self.local and self.free(None) is None:
                return
            if not self.here and not self.has_room():  # a unit read now would wait (read, it starts workers)
                return
            ticket, self.peeked = (self.intake.read(), None) if self.peeked is None else (self.peeked, None)
            if ticket is END:
                return
            if not isinstance(ticket, Scorable | Undecoded | Batch):
                self.window.add(ticket)
                continue
            token = self.environments.token(ticket)
            batch = isinstance(ticket, Batch)
            if batch and self.window.batches >= MOST_EXPANDED + len(self.held):
                self.peeked = ticket  # its turn comes once the oldest batch in the window is written
                return
            # The last batch is read here, and its units shared (share): whole, it would end the run alone.
            last = batch and self.here and self.intake.exhausted  # exhausted: no ticket after this one
            if token is not None and self.queue(ticket, token):
                continue  # its name's worker's: sent to it, or waiting here for room in it
            worker = None if token is None or last else self.place(ticket, token)
            if worker is not None and token is not None:
                entry = self.window.add(PENDING, None if isinstance(ticket, Scorable) else ticket)  # settled in turn
                self.entries[entry[0]] = entry
                self.dispatch(worker, entry[0], ticket, token)
                self.affinities.own(ticket, worker)
                continue
            if (self.local and not last) or (token is not None and not self.here):
                self.peeked = ticket  # its turn comes when a worker has room, or this process none of its own
                return
            if isinstance(ticket, Batch):
                self.local.extend(entry for entry in self.read_here(ticket) if entry[1] is PENDING)
                return
            entry = self.window.add(PENDING, ticket if isinstance(ticket, Undecoded) else None)
            entry[1] = self.replay_here(ticket)  # in input order like the rest (admitted in its turn)
            self.affinities.own(ticket, HERE)
            return

    def send_again(self) -> bool:
        """Send the units a dead worker held to the workers with room, oldest first; whether none is left. With
        ``here``, one no worker can take now is replayed here (a batch read here) and this returns, unless it is
        the one a worker died on (it could end this process too: it waits for a worker)."""
        while self.deaths.again:
            seq, unit = self.deaths.again[0]
            token = self.environments.token(unit)
            assert token is not None, "a unit was sent to a worker before"
            worker = self.free(token, whole=isinstance(unit, Batch))
            if worker is None:
                if self.here and seq not in self.deaths.tries:
                    self.deaths.again.popleft()
                    self.take_back(self.entries.pop(seq), unit)
                return False
            self.deaths.again.popleft()
            self.dispatch(worker, seq, unit, token)
        return True

    def take_back(self, entry: Entry, unit: Scorable | Undecoded | Batch) -> None:
        """Replay here the unit of ``entry`` a worker had (a batch: read here, its units replayed here before this
        process's own, since they come earlier in the window)."""
        if isinstance(unit, Batch):
            self.local.extendleft(reversed(self.window.split(entry, self.read_here)))
        else:
            entry[1] = self.replay_here(unit)

    def has_room(self) -> bool:
        """Whether a worker holds fewer units than it may (ready or not), none of them a batch."""
        return any(len(held) < self.depth and not (held and isinstance(held[0][1], Batch)) for held in self.held)

    def share(self) -> None:
        """Give workers with room the units of this process's own batch from its end (this process replays it
        from the front), so that at the end of the input no worker sits idle while this process replays alone;
        they come back in the window's order all the same. A worker holds at most the transport's depth of them
        (two): where this process, replaying from the front, meets the units a worker holds, it waits for them,
        and a worker given :attr:`depth` (as many as 50 ms of replay) kept this process waiting as long at the end
        of every run."""
        while len(self.local) > 1:
            entry = self.local[-1]
            token = self.environments.token(entry[2])
            worker = None if token is None else self.free(token, most=self.transport.depth)
            if worker is None or token is None:
                return
            self.local.pop()
            self.entries[entry[0]] = entry
            self.dispatch(worker, entry[0], entry[2], token)

    def busy_here(self) -> bool:
        """Whether this process has a unit to replay (or a batch to read) now, as :meth:`fill` decides: then it
        only looks what the workers sent, without waiting."""
        if self.local:
            return True
        if not self.here:
            return False
        if self.peeked is not None:  # read while this process had its own: its turn here has come
            return not (isinstance(self.peeked, Batch) and self.window.batches >= MOST_EXPANDED + len(self.held))
        return not self.intake.exhausted and self.room()

    def room(self) -> bool:
        """Whether the window may take another ticket: it holds fewer than :meth:`size` (a batch read here counts
        as none)."""
        return self.window.tickets() < self.size()

    def size(self) -> int:
        """How many tickets the window may hold: what the workers may hold, and :data:`WINDOW` per replaying
        process beyond that."""
        return self.depth * len(self.held) + WINDOW * (len(self.held) + int(self.here))

    def read_here(self, batch: Batch) -> list[Entry]:
        """The entries of ``batch``'s units, read here and added to the window (:meth:`Window.add_batch`); a
        reading that raises is one entry, raised in its turn (and no ticket is read after it)."""
        try:
            units, error, note = batch.expand()
        except Exception as exc:  # a bug of the reading: one worker raises it there
            self.intake.exhausted = True
            return [self.window.add(Raised(exc))]
        return self.window.add_batch(units, error, note)

    def place(self, ticket: Scorable | Undecoded | Batch, token: int) -> int | None:
        """The worker to give ``ticket`` now, if any (:meth:`free`); for a rollout whose name this process replays
        (:mod:`~prefix_exec.scoring.pool.affinity`), ``None`` unless a worker is about to run dry (it holds less
        than the transport's depth): that worker builds what this process holds already, but it would sit idle
        otherwise, while this process, which reads and writes every unit besides, is the one the run waits for."""
        if self.affinities.owner(ticket) == HERE and self.here:
            return self.free(token, most=self.transport.depth)
        return self.free(token, whole=isinstance(ticket, Batch))

    def queue(self, ticket: Scorable | Undecoded | Batch, token: int) -> bool:
        """Whether ``ticket``'s name is a running worker's (:mod:`~prefix_exec.scoring.pool.affinity`): then it
        enters the window and waits for that worker (:meth:`feed`, which sends it at once if it has room)."""
        owner = self.affinities.owner(ticket)
        if owner is None or owner == HERE or not self.transport.launched(owner):
            return False
        assert isinstance(ticket, Scorable | Undecoded)  # a batch has no name
        entry = self.window.add(PENDING, ticket if isinstance(ticket, Undecoded) else None)  # settled in turn
        self.affinities.waiting[owner].append((entry, ticket, token))
        self.feed()
        return True

    def feed(self) -> None:
        """Send each worker the rollouts waiting for it while it holds fewer than the depth, oldest first."""
        for worker, waiting in enumerate(self.affinities.waiting):
            while waiting and self.takes(worker, waiting[0][2], self.depth):
                entry, ticket, token = waiting.popleft()
                self.entries[entry[0]] = entry
                self.dispatch(worker, entry[0], ticket, token)

    def steal(self) -> bool:
        """Replay here the last rollout waiting for a worker (of the longest queue), if one waits: this process has
        nothing else to do (see :mod:`~prefix_exec.scoring.pool.affinity`)."""
        waiting = self.affinities.longest()
        if waiting is None:
            return False
        entry, ticket, _ = waiting.pop()
        entry[1] = self.replay_here(ticket)
        return True

    def free(self, token: int | None, *, whole: bool = False, most: int | None = None) -> int | None:
        """The worker holding the fewest rollouts that can take one of ``token``'s environment now
        (:meth:`takes`: below ``most``, by default the depth; ``whole``: holding nothing, for a batch)."""
        best: int | None = None
        limit = 1 if whole else self.depth if most is None else most
        for worker, held in enumerate(self.held):
            if self.takes(worker, token, limit) and (best is None or len(held) < len(self.held[best])):
                best = worker
        return best

    def takes(self, worker: int, token: int | None, most: int) -> bool:
        """Whether ``worker`` can be given a unit now: it holds fewer than ``most``, and no whole file (what it is
        given would wait behind it); with ``here``, it is ready and has built ``token``'s environment. A started
        worker that lacks it is sent it now, ready or not (it builds it as soon as it has read its settings,
        while this process reads and replays; a tau2 environment's imports take several seconds). It must be ready
        too when the transport does not queue units (Ray's: asking starts an actor, so that a run that replays
        nothing starts none)."""
        held = self.held[worker]
        if self.here and token is not None and not self.transport.holds(worker, token):
            if self.transport.launched(worker):
                self.environments.send(worker, token)
            return False
        ready_only = self.here or not self.transport.queues
        if len(held) >= most or (ready_only and not self.transport.available(worker)):
            return False
        return not (held and isinstance(held[0][1], Batch))

    def replay_here(self, unit: Scorable | Undecoded) -> Outcome | Raised | Decoded | None:
        """What a worker would answer for ``unit``, replayed (decoded first) in this process; the time it took
        sets how many rollouts a worker is given (:data:`QUEUE_SECONDS`)."""
        started = time.perf_counter()
        answer: Outcome | Raised | Decoded | None
        if isinstance(unit, Undecoded):
            answer = decode_on(partial(caught, self.replayer, env=unit.env), unit.decode, self.admission.done)
        else:
            answer = caught(self.replayer, unit.rollout, unit.env)
        took = time.perf_counter() - started
        self.unit_seconds = took if self.unit_seconds is None else 0.8 * self.unit_seconds + 0.2 * took
        wanted = int(QUEUE_SECONDS / max(self.unit_seconds, 1e-6))
        self.depth = max(self.transport.depth, min(MOST_HELD, wanted))
        return answer

    def dispatch(self, worker: int, seq: int, unit: Scorable | Undecoded | Batch, token: int) -> None:
        self.environments.send(worker, token)
        self.transport.send_unit(worker, seq, unit, token)
        self.held[worker].append((seq, unit))

    def receive(
        self, worker: int, seq: int | None, outcome: Outcome | Raised | Decoded | Batched | Unloadable | Died
    ) -> None:
        if not isinstance(outcome, Died):
            held_seq, unit = self.held[worker].popleft()
            assert held_seq == seq, "a worker answers in the order it was sent"
            entry = self.entries.pop(held_seq)
            self.deaths.answered(held_seq)
            if isinstance(outcome, Unloadable):  # replayed here instead: its outcome is then one worker's
                print(
                    f"prefix-exec: note: a worker's answer could not be read here ({outcome.why}); "
                    f"{'its units are' if isinstance(unit, Batch) else 'the unit is'} replayed in this process",
                    file=self.log,
                )
                self.take_back(entry, unit)
                return
            entry[1] = outcome
            return
        if not self.held[worker]:  # it died idle: nothing lost
            if not (self.here and self.deaths.gives_up(worker, outcome, self.transport, self.log)):
                self.transport.restart(worker)
                self.environments.forget(worker)
            self.release(worker)
            return
        # The unit it was replaying is the one that killed it (sent again only as Died.attempts say); those queued
        # behind it go again. A batch's units go one by one, so that the one that kills a worker is known.
        culprit, unit = self.held[worker].popleft()
        entry = self.entries[culprit]
        queued = list(self.held[worker])
        died = None if isinstance(unit, Batch) else self.deaths.culprit(culprit, outcome)
        if isinstance(unit, Batch):
            del self.entries[culprit]
            pending = self.window.split(entry, self.read_here)
            self.entries.update((again[0], again) for again in pending)
            queued = [(again[0], again[2]) for again in pending] + queued
        elif died is None:
            queued.insert(0, (culprit, unit))
        else:
            del self.entries[culprit]
            # An undecoded unit is named once decoded, in its turn (Settlement.settle).
            entry[1] = died if isinstance(unit, Undecoded) else lost(unit_name(unit.rollout), died)
        self.held[worker].clear()
        self.transport.restart(worker)
        self.environments.forget(worker)
        self.deaths.again.extend(queued)
        self.release(worker)

    def release(self, worker: int) -> None:
        """The rollouts waiting for ``worker``, which died, go again as those it held do (its successor may never
        start: a Ray actor's, and without ``here`` nothing else would take them)."""
        for entry, ticket, _ in self.affinities.release(worker):
            self.entries[entry[0]] = entry
            self.deaths.again.append((entry[0], ticket))
