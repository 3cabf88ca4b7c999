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

from typing import Any, Protocol, runtime_checkable

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
class ConversationAware(Protocol):
    """A session whose checks take values the conversation gave (the generic environment's ``refs``: an id the
    user typed is no guess, :mod:`prefix_exec.envs.custom.mentions`).

    Replay (:func:`prefix_exec.replay.replay_session`) calls :meth:`hear` with each user or system message of the
    rollout's transcript, in order, before the first call of a later assistant message; the guard with what a
    user gave through MCP (elicitation answers). The session keeps what it heard in its state, so
    :meth:`Session.fork` copies it. Readers stay as they are: they keep the transcript, replay walks it once.
    """

    def hear(self, index: int, content: Any) -> None:
        """Message ``index`` (0-based in the conversation) said ``content`` (a string or a list of content
        parts), before the next call."""
        ...


@runtime_checkable
class Environment(Protocol):
    """A benchmark (or a user's tool set) that can start sessions for its tasks."""

    name: str

    def start(self, task_id: str) -> Session:
        """A fresh session in the task's initial state. Raises ``KeyError`` for an unknown task."""
        ...
