"""The affinities of one ``score --workers N`` run (:mod:`prefix_exec.scoring.pool.schedule`): which process replays
the rollouts of each name (:attr:`~prefix_exec.scoring.units.Scorable.affinity`, an undecoded unit's too), and,
per worker, the rollouts of its names that wait in this process for room in it.

The process that replays the first rollout of a name (a BFCL task) replays the others: it holds what their replays
share (the task's ground truth and initial state, most of a cold rollout's cost). A worker is sent a rollout of its
names while it holds fewer than the schedule's depth; the others wait here, in the window already (in input order
like the rest), and are sent as it makes room. This process, when it has nothing of its own to replay (the window
is full, or every ticket is read), replays the last one waiting itself: building that task again costs less than
waiting, and at the end of the input it and the worker meet in the middle instead of this process waiting for the
worker's whole queue.
"""

from __future__ import annotations

from collections import deque

from prefix_exec.scoring.pool.window import Entry
from prefix_exec.scoring.units import Batch, Scorable, Undecoded

#: Names whose process a run notes at most: the rollouts of a name met past that many go to any process (a run over
#: a million tasks keeps no million names).
MOST_AFFINITIES = 1 << 16
#: The process of a name replayed in this one (workers are numbered from 0).
HERE = -1

#: A rollout waiting for room in its worker: its window entry, the unit, and its environment's token.
Waiting = tuple[Entry, Scorable | Undecoded, int]


class Affinities:
    """The owners of a run's names and, for each of ``workers`` workers, the rollouts waiting for it (oldest
    first)."""

    def __init__(self, workers: int) -> None:
        self.owners: dict[str, int] = {}  # name -> the worker (or HERE) that replays its rollouts
        self.waiting: list[deque[Waiting]] = [deque() for _ in range(workers)]

    @staticmethod
    def name(ticket: Scorable | Undecoded | Batch) -> str | None:
        return ticket.affinity if isinstance(ticket, Scorable | Undecoded) else None

    def owner(self, ticket: Scorable | Undecoded | Batch) -> int | None:
        """The worker (or :data:`HERE`) that replays ``ticket``'s name; ``None`` when it has none, or no owner yet."""
        name = self.name(ticket)
        return None if name is None else self.owners.get(name)

    def own(self, ticket: Scorable | Undecoded | Batch, worker: int) -> None:
        """Note that ``worker`` (or :data:`HERE`) replays the rollouts of ``ticket``'s name, unless a process has it
        already, or :data:`MOST_AFFINITIES` are noted."""
        name = self.name(ticket)
        if name is not None and name not in self.owners and len(self.owners) < MOST_AFFINITIES:
            self.owners[name] = worker

    def release(self, worker: int) -> list[Waiting]:
        """The rollouts waiting for ``worker`` (oldest first), which no longer wait for it, and its names, which
        are no longer its: it died or was stopped, and its successor (if any) has built none of them, or may never
        start (a Ray actor)."""
        released = list(self.waiting[worker])
        self.waiting[worker].clear()
        self.owners = {name: owner for name, owner in self.owners.items() if owner != worker}
        return released

    def longest(self) -> deque[Waiting] | None:
        """The longest queue of rollouts waiting for a worker, if any rollout waits."""
        queue = max(self.waiting, key=len, default=None)
        return queue if queue else None
