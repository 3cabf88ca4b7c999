"""The tickets of one ``score --workers N`` run as its schedule reads them (:mod:`prefix_exec.scoring.pool.schedule`):
one is read ahead, so that the last is known as it is read (the schedule reads the last batch itself, and shares
it), and a reading that raises is an answer, :class:`~prefix_exec.scoring.pool.messages.Raised`, raised in its turn."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prefix_exec.scoring.pool.messages import Raised

#: What :meth:`Intake.read` gives when no ticket is left.
END = object()
_UNREAD = object()  # no ticket read ahead yet


class Intake:
    """The ``tickets`` of a run, read one ahead."""

    def __init__(self, tickets: Iterator[Any]) -> None:
        self.tickets = tickets
        self.exhausted = False  # every ticket is read (set as the last one is read)
        self.ahead: Any = _UNREAD  # the ticket after the one read last (None is a ticket)

    def read(self) -> Any:
        """The next ticket; :data:`END` when there is none left; a reading error as :class:`Raised` (raised in its
        turn, after the units read before it; nothing is read after it)."""
        ticket = self.ahead if self.ahead is not _UNREAD else self._next()
        self.ahead = _UNREAD
        if ticket is END or isinstance(ticket, Raised):
            self.exhausted = True
            return ticket
        self.ahead = self._next()
        self.exhausted = self.ahead is END
        return ticket

    def _next(self) -> Any:
        try:
            return next(self.tickets)
        except StopIteration:
            return END
        except Exception as exc:  # the reading's error (a bug: one worker raises it there)
            return Raised(exc)
