"""Prefix replay: walk a rollout against an environment once and fix its first-error depth.

Replay is incremental. The session's state after a_1..a_k is the state before a_{k+1}, so checking every
prefix costs one pass over the actions, never a restart per depth k. Accepted actions advance the state;
the first rejection fixes FED and replay stops there, because by definition no longer prefix is executable.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import replace

from prefix_exec import budget
from prefix_exec.envs.base import ConversationAware, Environment, Session
from prefix_exec.errors import ReplayError
from prefix_exec.json_types import JsonMapping
from prefix_exec.trajectory import FailureLabel, PrefixRecord, Rollout, ToolCall, Verdict, excerpt

__all__ = [
    "SPEAKERS",
    "call_positions",
    "check",
    "check_action",
    "horizon_and_fed",
    "replay",
    "replay_session",
    "with_success",
]

#: The roles of a transcript's messages that a :class:`~prefix_exec.envs.base.ConversationAware` session hears:
#: what the user and the system (or developer) said. Tool results and the assistant's own words are not given.
SPEAKERS = frozenset({"user", "system", "developer"})


def check_action(session: Session, call: ToolCall) -> Verdict:
    """One action's verdict. Calls an importer could not decode are schema failures and never execute."""
    if call.parse_error is not None:
        return Verdict.reject(FailureLabel.SCHEMA, f"the call could not be parsed: {call.parse_error}")
    return session.step(call)


def check(session: Session, call: ToolCall) -> Verdict:
    """The verdict ``call`` would get in the session's current state; ``session`` is left unchanged (the call
    runs on ``session.fork()``). The runtime guard: the ``guarded-react`` agents and ``prefix-exec guard``."""
    return check_action(session.fork(), call)


def horizon_and_fed(actions: int, rejected: int | None) -> tuple[int, int]:
    """``(T, FED)`` of a rollout of ``actions`` actions whose first rejected action is at the 1-based depth
    ``rejected`` (``None``: every action accepted). ``T = max(actions, 1)``: a rollout with no actions is one
    terminal no-tool action (``rejected`` 1 when its verdict is a rejection); FED is ``T + 1`` when nothing was
    rejected."""
    T = max(actions, 1)
    return T, rejected if rejected is not None else T + 1


def replay_session(rollout: Rollout, session: Session) -> PrefixRecord:
    """Score ``rollout`` on an already started ``session`` (which it advances).

    Returns the record with ``T = max(len(actions), 1)`` and FED per the protocol: the 1-based depth of the
    first rejected action, or ``T + 1`` when every action is accepted. A rollout with no actions is scored as
    one terminal no-tool action, executable only when ``session.finish_without_tools()`` accepts it.
    """
    if rollout.success not in (0, 1):
        raise ReplayError(f"{_where(rollout)}: final success must be 0 or 1 before scoring, got {rollout.success!r}")
    verdicts: list[Verdict] = []
    rejected: int | None = None
    hearing = _Hearing(session, rollout) if isinstance(session, ConversationAware) and rollout.transcript else None
    if not rollout.actions:
        verdict = session.finish_without_tools()
        verdicts.append(verdict)
        rejected = None if verdict.accepted else 1
    else:
        for depth, call in enumerate(rollout.actions, start=1):
            budget.check()  # the rollout's wall-clock budget (none outside budget.rollout_budget)
            if hearing is not None:
                hearing.before(depth - 1)
            verdict = check_action(session, call)
            # The record keeps a bounded excerpt: a hostile rollout of many huge results must not hold them all.
            # (A short result is its own excerpt, and the verdict is kept as it is.)
            kept = excerpt(verdict.result) if verdict.result is not None else None
            verdicts.append(verdict if kept is verdict.result else replace(verdict, result=kept))
            if not verdict.accepted:
                rejected = depth
                break
    T, fed = horizon_and_fed(len(rollout.actions), rejected)
    return PrefixRecord(
        dataset=rollout.dataset,
        task_id=rollout.task_id,
        model=rollout.model,
        method=rollout.method,
        trial=rollout.trial,
        T=T,
        fed=fed,
        success=int(rollout.success),
        verdicts=tuple(verdicts),
        actions=rollout.actions,
        no_tool=not rollout.actions,
        cost=rollout.cost,
        metadata=rollout.metadata,
    )


def call_positions(transcript: Sequence[JsonMapping], actions: Sequence[ToolCall]) -> tuple[int | None, ...]:
    """For each action, the 0-based index in ``transcript`` of the assistant message whose ``tool_calls`` list it.

    An action with a ``call_id`` takes the first listed call with that id after the previous action's (ids may be
    reused once answered); an action without one, or whose id no later listed call has, takes the next listed
    call in order. ``None`` when the transcript lists no call left for it."""
    listed: list[int] = []
    by_id: dict[str, deque[int]] = {}
    for index, message in enumerate(transcript):
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        for call in calls if isinstance(calls, list) else ():
            call_id = call.get("id") if isinstance(call, Mapping) else None
            if isinstance(call_id, str):
                by_id.setdefault(call_id, deque()).append(len(listed))
            listed.append(index)
    positions: list[int | None] = []
    cursor = 0  # the next listed call not yet passed
    for action in actions:
        same = by_id.get(action.call_id, deque()) if action.call_id is not None else deque()
        while same and same[0] < cursor:
            same.popleft()
        taken = same.popleft() if same else cursor if cursor < len(listed) else None
        positions.append(listed[taken] if taken is not None else None)
        cursor = taken + 1 if taken is not None else cursor
    return tuple(positions)


class _Hearing:
    """Feeds a :class:`ConversationAware` session the user and system messages of a rollout's transcript: before
    action ``k``, every :data:`SPEAKERS` message before the assistant message that issued it (:func:`call_positions`;
    an action the transcript does not list hears nothing new). A message's ``given_text``, when the entry has one,
    is heard instead of its content: the runner writes it where its harness puts more than the user's words in a
    user message (a plan after the goal; ``""`` for a tool result handed back as user text)."""

    def __init__(self, session: ConversationAware, rollout: Rollout) -> None:
        self.session = session
        self.transcript = rollout.transcript or ()
        self.positions = call_positions(self.transcript, rollout.actions)
        self.fed = 0  # transcript messages passed so far

    def before(self, action: int) -> None:
        upto = self.positions[action]
        while upto is not None and self.fed < upto:
            message = self.transcript[self.fed]
            said = message.get("given_text", message.get("content"))
            if message.get("role") in SPEAKERS and said is not None:
                self.session.hear(self.fed, said)
            self.fed += 1


def replay(rollout: Rollout, env: Environment) -> PrefixRecord:
    """Score one rollout from the task's initial state. See :func:`replay_session`."""
    try:
        session = env.start(rollout.task_id)
    except KeyError as exc:
        raise ReplayError(f"{_where(rollout)}: environment {env.name!r} has no task {exc}") from None
    return replay_session(rollout, session)


def with_success(rollout: Rollout, success: int) -> Rollout:
    """A copy of ``rollout`` with its final success set (for benchmarks whose Y is computed at scoring)."""
    return replace(rollout, success=int(success))


def _where(rollout: Rollout) -> str:
    return (
        f"rollout dataset={rollout.dataset} task={rollout.task_id} model={rollout.model} "
        f"method={rollout.method} trial={rollout.trial}"
    )
