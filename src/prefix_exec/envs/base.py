"""The environment protocol every benchmark implements.

An :class:`Environment` knows a benchmark's tasks and starts a :class:`Session` for one of them. A session
holds the state s_t and answers one action at a time with a :class:`~prefix_exec.trajectory.Verdict`.

Contract of :meth:`Session.step`:

- it checks the action against the state *before* it (tool exposed, arguments bind, references current,
  preconditions hold, the benchmark accepts the transition) and, when accepted, applies it;
- on rejection the state is left as it was (an implementation whose backend may half-apply a failing call
  must run it on a fork);
- it never raises for a bad action: a failed check is a rejected verdict. Exceptions mean broken
  infrastructure (a missing package, a corrupt task file).

:meth:`Session.fork` returns an independent copy whose later steps do not affect this session; it must be
cheap relative to replaying the prefix, since guards and search call it per candidate action.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from prefix_exec.trajectory import ToolCall, Verdict


@runtime_checkable
class Session(Protocol):
    """The live state of one task."""

    def step(self, call: ToolCall) -> Verdict:
        """Check ``call`` against the current state and apply it when accepted."""
        ...

    def finish_without_tools(self) -> Verdict:
        """Verdict for the terminal no-tool action: may the task end with no tool call at all?

        Accepted only where the benchmark allows it (a clarification turn, an insufficient-information
        scenario). Called only for rollouts with no actions.
        """
        ...

    def fork(self) -> Session:
        """An independent copy of this session's state."""
        ...


@runtime_checkable
class MessageAware(Protocol):
    """A session that must know which calls one model answer issued together (parallel calls).

    Driven online, such a session cannot see message boundaries; the turn loop calls :meth:`begin_message`
    before the calls of each answer. tau's information check needs it: a call never sees the result of a
    call issued in the same answer.
    """

    def begin_message(self) -> None:
        """The calls that follow belong to one new assistant message; earlier results are now visible."""
        ...


@runtime_checkable
class Environment(Protocol):
    """A benchmark (or a user's tool set) that can start sessions for its tasks."""

    name: str

    def start(self, task_id: str) -> Session:
        """A fresh session in the task's initial state. Raises ``KeyError`` for an unknown task."""
        ...
