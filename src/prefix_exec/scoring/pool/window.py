"""The window of one ``score --workers N`` run (:mod:`prefix_exec.scoring.pool.schedule`): the units handed out or
replayed here, in input order, each waiting for its outcome until every unit before it is given back.

An entry is ``[seq, outcome, unit, tag]``: its sequence number; its outcome (:data:`PENDING` until it comes:
an :data:`~prefix_exec.scoring.replayer.Outcome`, a :class:`~prefix_exec.scoring.pool.messages.Raised`, a worker's
answer, or a batch's :class:`Note`); the :class:`~prefix_exec.scoring.units.Undecoded` unit or
:class:`~prefix_exec.scoring.units.Batch` settled in its turn (or ``None``); and its tag: 0 for a ticket read, 1 for
a unit of a batch read here, 2 for the last of those. A batch read here counts as no ticket (:meth:`Window.tickets`),
and the window counts the batches it holds (:attr:`Window.batches`), so that both stay bounded.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.scoring.pool.messages import Raised
from prefix_exec.scoring.units import Batch, Undecoded
from prefix_exec.trajectory import Skipped

#: The outcome of an entry whose unit is not answered yet.
PENDING = object()

#: A window entry (see the module docstring).
Entry = list[Any]


@dataclass(frozen=True)
class Note:
    """A batch's note, said on the log in its turn (once its units are written)."""

    text: str


class Window:
    """The entries of one run in input order (oldest first), numbered as they are added."""

    def __init__(self) -> None:
        self.entries: deque[Entry] = deque()
        self.expanded = 0  # entries of batches read here (they count as no ticket: see tickets)
        self.batches = 0  # batches with entries here (read here, or a worker's)
        self.seq = 0

    def __bool__(self) -> bool:
        return bool(self.entries)

    def tickets(self) -> int:
        """How many tickets the window holds (a batch read here counts as none)."""
        return len(self.entries) - self.expanded

    def add(self, outcome: object, unit: Undecoded | Batch | None = None) -> Entry:
        """A new entry for a ticket, at the end: its ``outcome`` (or :data:`PENDING`) and the ``unit`` settled in
        its turn (a batch is counted)."""
        entry = [self.next_seq(), outcome, unit, 0]
        self.entries.append(entry)
        self.batches += isinstance(unit, Batch)
        return entry

    def add_batch(self, units: list[Undecoded | Skipped], error: InputError | None, note: str | None) -> list[Entry]:
        """New entries, at the end, for the units of a batch read here (:data:`PENDING` for each to replay), and
        after them its ``error`` (raised in its turn) or its ``note``; the batch is counted."""
        entries: list[Entry] = []
        for unit in units:
            pending = isinstance(unit, Undecoded)
            entries.append([self.next_seq(), PENDING if pending else unit, unit if pending else None, 1])
        if error is not None:
            entries.append([self.next_seq(), Raised(error), None, 1])
        elif note is not None:
            entries.append([self.next_seq(), Note(note), None, 1])
        if entries:
            entries[-1][3] = 2
            self.expanded += len(entries)
            self.batches += 1
        self.entries.extend(entries)
        return entries

    def settled(self) -> Iterator[Entry]:
        """The oldest entries, taken out while each has its outcome (the rest wait for theirs)."""
        while self.entries and self.entries[0][1] is not PENDING:
            entry = self.entries.popleft()
            _, _, unit, tag = entry
            self.expanded -= bool(tag)
            self.batches -= tag == 2 or isinstance(unit, Batch)
            yield entry

    def split(self, entry: Entry, read_here: Callable[[Batch], list[Entry]]) -> list[Entry]:
        """Put in place of ``entry`` (a batch a worker did not answer) the entries of its units, which
        ``read_here`` reads and adds at the end; those still to replay."""
        index = next(at for at, other in enumerate(self.entries) if other is entry)
        self.entries.remove(entry)
        self.batches -= 1  # counted again as read here
        entries = read_here(entry[2])
        for _ in entries:  # read_here put them at the end: move them to the batch's place
            self.entries.pop()
        for offset, new in enumerate(entries):
            self.entries.insert(index + offset, new)
        return [new for new in entries if new[1] is PENDING]

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq - 1
