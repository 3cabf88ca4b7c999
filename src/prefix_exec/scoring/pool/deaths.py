"""What a ``score --workers N`` run does when a worker dies (:mod:`prefix_exec.scoring.pool.schedule`): the units it
held go again, first of all, but for the one it was replaying, which goes again only as many times as the
transport's :attr:`~prefix_exec.scoring.pool.messages.Died.attempts` say; and a worker that ends before it is ready
:data:`MOST_FAILED_STARTS` times in a row is not started again.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import TextIO

from prefix_exec.scoring.pool.messages import Died, Transport
from prefix_exec.scoring.units import Batch, Scorable, Undecoded

#: With ``here``, a worker that ends before it is ready this many times in a row is not started again (its
#: rollouts are replayed in this process, said once): one that cannot load its settings (a function of a
#: notebook's or a script's ``__main__``, which a spawned process cannot import) would be restarted all run long.
MOST_FAILED_STARTS = 3

#: A unit a worker holds (or held): its sequence number and the unit.
Held = tuple[int, Scorable | Undecoded | Batch]


class Deaths:
    """The deaths of one run's ``workers``: the units dead workers held, to send again (oldest first), the deaths
    each unit sent again has seen, and each worker's deaths before it was ready, in a row."""

    def __init__(self, workers: int) -> None:
        self.again: deque[Held] = deque()
        self.tries: dict[int, int] = {}  # seq -> the deaths of the workers replaying it so far
        self.failed_starts = [0] * workers

    def answered(self, seq: int) -> None:
        """The unit ``seq`` was answered (or was a batch, split): its deaths are forgotten."""
        self.tries.pop(seq, None)

    def culprit(self, seq: int, died: Died) -> Died | None:
        """``None`` when the unit ``seq``, which a worker ``died`` replaying, goes again (the deaths it has seen are
        fewer than :attr:`Died.attempts`); else ``died`` with ``attempts`` set to those deaths: it is lost."""
        tries = self.tries.pop(seq, 0) + 1
        if tries < died.attempts:
            self.tries[seq] = tries
            return None
        return replace(died, attempts=tries)

    def gives_up(self, worker: int, died: Died, transport: Transport, log: TextIO) -> bool:
        """Whether ``worker``, which ended idle, is not started again: it ended before it was ready
        :data:`MOST_FAILED_STARTS` times in a row. It is stopped, and never ready, so it is given nothing (only
        with ``here``: this process replays what it would have); said on ``log``."""
        self.failed_starts[worker] = 0 if transport.available(worker) else self.failed_starts[worker] + 1
        if self.failed_starts[worker] < MOST_FAILED_STARTS:
            return False
        transport.stop(worker)
        print(
            f"prefix-exec: note: a worker process ended before it was ready {MOST_FAILED_STARTS} times in a row "
            f"({died.why}; its error is above); it is not started again, and this process replays its share",
            file=log,
        )
        return True
