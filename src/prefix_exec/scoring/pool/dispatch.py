"""Replay on every core: ``score --workers N`` (processes) and ``--launcher ray`` (Ray actors).

The reading process keeps everything but the replays: it reads the inputs, checks identities, writes the
records, all in input order (:mod:`prefix_exec.scoring.run`, which is handed a :class:`Pool` and never imports
this package). Each unit goes to a worker as soon as one has room
(:data:`~prefix_exec.scoring.pool.processes.DEPTH` rollouts in flight each, or one
:class:`~prefix_exec.scoring.units.Batch`: a file a worker reads, decodes and replays whole), and its outcome waits in
a window until every unit before it is written (:mod:`prefix_exec.scoring.pool.schedule`). So the file is byte for
byte what one worker writes, a kill loses at most the window, and ``--resume`` skips what was written.

With ``--launcher local``, ``--workers N`` is N replaying processes: this one and N - 1 workers. This process
replays a rollout (or reads a batch) itself whenever no ready worker has room for it: while the workers start (a
Python start and this package's imports each, about 0.3 s; tau2's take several), so an input done before they are
ready never waits for them, and whenever every worker is busy, so no core waits on this one. It starts at once as
many workers as there are cores it leaves idle, the others after
:data:`~prefix_exec.scoring.pool.schedule.START_SECONDS` (none once every unit is handed out: they would be given
nothing).

A worker gets each environment once, as its :class:`~prefix_exec.envs.recipe.Recipe` (the worker builds it once:
no input is parsed again per rollout) or, without one, pickled; an environment that does not pickle has its
rollouts replayed in the reading process (said once on the log). Workers are spawned
(:mod:`prefix_exec.scoring.pool.spawn`: the command's entry point spawns those started at once as it starts, so their
start overlaps its own). A worker sends each record back as its line, made there
(:class:`~prefix_exec.scoring.replayer.Written`). Records are fsynced in groups, as with one worker
(:data:`~prefix_exec.scoring.replayer.SYNC_SECONDS`).

A worker that dies (killed, out of memory in C) costs only the rollout it was replaying: that rollout is
reported unscorable, a new worker starts, and the rollouts queued behind it go again (a batch's, one by one, so
that the one that kills it is known). A Ray actor's rollout is sent again too, a few times, before it is listed
as the system's failure; every wait on the actors has a bound (:mod:`prefix_exec.scoring.pool.ray`). Ctrl-C and
SIGTERM end the workers and leave the records written so far. The workers and their pipes are
:mod:`prefix_exec.scoring.pool.processes`'s.
"""

from __future__ import annotations

import contextlib
import pickle
import signal
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import TextIO

from prefix_exec.scoring.admission import Admission
from prefix_exec.scoring.pool.messages import Transport
from prefix_exec.scoring.pool.processes import Processes
from prefix_exec.scoring.pool.schedule import Schedule, Ticket
from prefix_exec.scoring.pool.settlement import Settlement, raised
from prefix_exec.scoring.pool.spawn import usable_cores
from prefix_exec.scoring.replayer import Outcome, Replayer, Sync, add_syncs
from prefix_exec.scoring.units import Scorable, ScoringUnit, Undecoded, unbatched

#: Whether, with ``--launcher local``, this process replays a rollout when no ready worker has room (see the
#: module docstring); when false (tests of the workers), ``--workers N`` starts N workers and this process only
#: reads and writes.
REPLAY_HERE = True


@dataclass(frozen=True)
class Pool:
    """``workers`` replaying processes (this one and ``workers`` - 1 worker processes) with ``launcher`` ``local``,
    or ``workers`` Ray actors with ``ray`` (one of :data:`~prefix_exec.cluster.LAUNCHERS`): the
    :class:`~prefix_exec.scoring.run.Dispatch` a ``score`` command hands :func:`~prefix_exec.scoring.run.score_to_file`
    (:func:`pool_for`)."""

    workers: int
    launcher: str = "local"

    def __call__(
        self, units: Iterable[ScoringUnit], replayer: Replayer, admission: Admission, log: TextIO
    ) -> Generator[Outcome | Sync]:
        """The outcome of every unit in input order (:func:`ordered`), each admitted by ``admission`` in its turn."""
        tickets = admission.deferring(units)
        return ordered(tickets, replayer, admission, workers=self.workers, launcher=self.launcher, log=log)


def pool_for(workers: int, launcher: str = "local") -> Pool | None:
    """The pool of ``--workers`` and ``--launcher``; ``None`` for one worker here (``--workers 1``, ``local``): then
    every rollout is replayed in the reading process, and no pool is started."""
    return Pool(workers, launcher) if workers > 1 or launcher != "local" else None


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
    workers of ``launcher`` (one of :data:`~prefix_exec.cluster.LAUNCHERS`) with ``replayer``, undecoded ones
    decoded there too and settled by ``admission`` in their turn; :data:`~prefix_exec.scoring.replayer.SYNC` at
    most every :data:`~prefix_exec.scoring.replayer.SYNC_SECONDS`, between outcomes.
    SIGTERM ends the run as Ctrl-C does, from the start (no worker is left behind, and the command says what it
    kept)."""
    with _terminate_as_interrupt():
        yield from _scored(tickets, replayer, admission, workers=workers, launcher=launcher, log=log)


def _scored(
    tickets: Iterator[Ticket], replayer: Replayer, admission: Admission, *, workers: int, launcher: str, log: TextIO
) -> Iterator[Outcome | Sync]:
    if not _sendable(replayer, log):
        yield from add_syncs(_in_process(tickets, replayer, admission, log))
        return
    transport: Transport
    here = launcher == "local" and REPLAY_HERE
    count = workers - 1 if here else workers  # here: this process is one of the N
    start_later: Callable[[], None] | None = None
    if launcher == "ray":
        from prefix_exec.scoring.pool.ray import RayActors

        transport = RayActors(replayer, count, admission.done, log)
    elif here:
        early = min(count, usable_cores() - 1)  # at once as many as there are cores this process leaves idle
        processes = transport = Processes(replayer, count, admission.done, first=early)
        if early < count:
            start_later = processes.start_first
    else:
        transport = Processes(replayer, count, admission.done)
    schedule = Schedule(tickets, transport, replayer, admission, count, log, here=here, start_later=start_later)
    interrupted = False
    try:
        yield from schedule.run()
    except KeyboardInterrupt:
        interrupted = True  # Ctrl-C ends the workers at once
        raise
    finally:
        transport.close(settle=not interrupted)


def _in_process(tickets: Iterator[Ticket], replayer: Replayer, admission: Admission, log: TextIO) -> Iterator[Outcome]:
    """The outcomes of ``tickets`` replayed in this process, as with one worker (a batch read here in its turn)."""
    settlement = Settlement(admission, replayer, log)
    for ticket in unbatched(tickets, log):
        if isinstance(ticket, Scorable):
            yield replayer(ticket.rollout, ticket.env)
        elif isinstance(ticket, Undecoded):
            yield raised(settlement.settle(ticket, None))
        else:
            yield ticket


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
