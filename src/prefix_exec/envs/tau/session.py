"""The tau environment: live prefix replay of airline/retail calls on tau2's real toolkit.

:class:`TauEnvironment` holds one parsed domain (shared by every rollout) and the task definitions (the
results file's embedded tasks first, the package's ``tasks.json`` as fallback). ``start(task_id)`` gives a
:class:`TauSession` in the task's initial state, on a copy-on-access DB (:mod:`.state`) that costs
microseconds instead of re-parsing the 7 MB ``db.json``.

A *strict* session (the default; every scored replay) checks, per action, in order:

1. the tool is one of the domain's agent tools, and the arguments bind to its signature (``schema``; nothing
   executes);
2. information availability (:mod:`.information`): every identifier argument appeared earlier in a user
   message, a tool result or the policy. Only checked when the session has the conversation (a bound
   rollout with a transcript); otherwise the verdict notes ``information-unchecked``;
3. the call on the real toolkit. A raised error is labelled by :mod:`.labels`; a ``precondition`` error whose
   call the task's initial state would have accepted becomes ``state_consistency`` (stale state).

Read-only tools run on the live DB. State-changing tools, and any call already failing the information check,
run on a fork that is adopted only when the call is accepted, so a rejected action never changes the state.

A *tau2* session (:class:`Tau2Session`, ``start(..., strict=False)``; the live session of agents that run as
tau2 runs them) is tau2's ``Environment.get_response`` and nothing more: every call executes on the live DB as
tau2 executes it (no binding or information check), is accepted exactly when tau2 reports ``error=False``, and
keeps whatever a failing tool changed before it raised, as tau2 does.

What a call may have seen is the session's :class:`~prefix_exec.envs.tau.information.Timeline`; the task's
initial state and expected actions come from :mod:`.tasks`.

Either way a verdict's ``result`` is the content of the tool message tau2 would answer to the call in this
state (``"Error: ..."`` for a tau2 error), also on rejections; ``reason`` is our diagnosis, for the record.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, Self

from prefix_exec.envs.tau.binding import binding_error
from prefix_exec.envs.tau.dispatch import invoke_tool
from prefix_exec.envs.tau.domain import Domain, to_json_text
from prefix_exec.envs.tau.information import Evidence, Timeline, call_messages, conversation_timeline, unseen
from prefix_exec.envs.tau.labels import label_error
from prefix_exec.envs.tau.lazy import InvalidRecord, materialize
from prefix_exec.envs.tau.pooled import local_id
from prefix_exec.envs.tau.state import WriteFlag, fork_db, lazy_db
from prefix_exec.envs.tau.tasks import apply_initial_state, expected_actions
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.trajectory import FailureLabel, Rollout, ToolCall, Verdict

_SCHEMA_EXCEPTIONS = ("TypeError", "KeyError", "AttributeError", "ValidationError", "IndexError")


class TauEnvironment:
    """One tau2 domain with its tasks. ``name`` is the environment's name, ``tau3-<domain>`` (records of both
    domains form the one dataset ``tau3``, with task ids ``<domain>/<id>``).

    ``tasks`` maps the domain's own task id (``18``) to a raw tau2 task dict (as embedded in a results file);
    ids not in it fall back to the package's ``tasks.json``. Every method taking a task id accepts it bare or
    qualified with this domain (``airline/18``). Initial states are built once per task and shared, like the base DB.
    """

    def __init__(
        self, domain: Domain, tasks: Mapping[str, JsonMapping] | None = None, *, sequential_calls: bool = False
    ) -> None:
        self.domain = domain
        #: Calls of one logged assistant message see each other's results (``--parallel-calls sequential``).
        self.sequential_calls = sequential_calls
        self.name = f"tau3-{domain.name}"
        self.tasks: dict[str, JsonMapping] = dict(domain.tasks)
        self.tasks.update(tasks or {})
        self._initial: JsonObject = {}

    def task(self, task_id: str) -> JsonMapping:
        """The raw task definition of ``airline/18`` or ``18`` (:mod:`prefix_exec.envs.tau.pooled`). Raises
        ``KeyError`` for an unknown id, or one qualified with another domain."""
        return self.tasks[local_id(self.domain.name, task_id)]

    def knows(self, task_id: str) -> bool:
        """Whether :meth:`task` has ``task_id``."""
        try:
            self.task(task_id)
        except KeyError:
            return False
        return True

    def initial_db(self, task_id: str) -> Any:
        """The task's initial DB (shared: never mutate it; sessions work on lazy copies)."""
        task_id = local_id(self.domain.name, task_id)
        if task_id not in self._initial:
            self._initial[task_id] = apply_initial_state(self.domain, self.task(task_id))
        return self._initial[task_id]

    def start(
        self, task_id: str, evidence: Sequence[Any] | None = None, *, strict: bool = True
    ) -> TauSession | Tau2Session:
        """A session in the task's initial state.

        ``evidence`` turns the information check on, seeded with those texts (user messages, system context);
        ``None`` leaves it off. The policy text is always part of the evidence when the check is on.
        ``strict=False`` gives a session that answers exactly as tau2's environment (see the module
        docstring); it has no checks of ours, so it takes no ``evidence`` (``ValueError``).
        """
        if not strict and evidence is not None:
            raise ValueError("a tau2 session (strict=False) makes no information check: pass no evidence")
        if not strict:
            return Tau2Session(self, str(task_id), self.initial_db(task_id))
        return self.strict_session(task_id, Timeline(self.evidence(evidence) if evidence is not None else None))

    def strict_session(self, task_id: str, seen: Timeline) -> TauSession:
        """A strict session in the task's initial state whose information check sees ``seen``."""
        return TauSession(self, str(task_id), self.initial_db(task_id), seen)

    def evidence(self, texts: Sequence[Any]) -> Evidence:
        """The information check's starting evidence: the policy text, then ``texts``."""
        seen = Evidence()
        seen.add(self.domain.policy)
        seen.extend(texts)
        return seen

    def bind(self, rollout: Rollout) -> RolloutEnvironment:
        """This environment seen by one rollout: its sessions know the conversation before each call."""
        return RolloutEnvironment(self, rollout)


class RolloutEnvironment:
    """A :class:`TauEnvironment` bound to one rollout's transcript (:meth:`TauEnvironment.bind`, which a scored
    tau rollout is paired with).

    Before the k-th action, the session's evidence holds every user, system and tool message that precedes the
    assistant message issuing that action (calls of one message share the texts before it), and the replayed
    results of the calls of earlier assistant messages: a call never sees the result of a call issued in the
    same message (parallel calls).
    """

    def __init__(self, env: TauEnvironment, rollout: Rollout) -> None:
        self.env = env
        self.name = env.name
        transcript = rollout.transcript
        self.timeline = conversation_timeline(transcript) if transcript is not None else None
        self.messages = call_messages(transcript) if transcript is not None else ()
        if env.sequential_calls:  # every call its own message: a sibling's replayed result is evidence
            self.messages = tuple(range(len(self.messages)))

    def start(self, task_id: str) -> TauSession:
        if self.timeline is None:
            return self.env.strict_session(task_id, Timeline(None))
        return self.env.strict_session(task_id, Timeline(self.env.evidence(()), self.timeline, self.messages))


class _TaskSession:
    """What both sessions share: the live state of one tau2 task. ``seen`` is the information check's evidence
    (:class:`~prefix_exec.envs.tau.information.Timeline`; its ``evidence`` is ``None`` when the check is off, and
    always for a :class:`Tau2Session`, where what the agent sees changes nothing). ``db`` (read through
    :attr:`db`) and ``flag`` default to a lazy copy of ``base``.
    """

    def __init__(
        self,
        env: TauEnvironment,
        task_id: str,
        base: Any,
        seen: Timeline | None = None,
        *,
        db: tuple[Any, WriteFlag] | None = None,
    ) -> None:
        self.env = env
        self.task_id = task_id
        self.base = base
        self._db, self.flag = db if db is not None else lazy_db(base, initial=True)
        self.seen = seen if seen is not None else Timeline(None)

    @property
    def db(self) -> Any:
        """The session's DB, every record validated first (:func:`~prefix_exec.envs.tau.lazy.materialize`), so
        a pydantic dump of it is tau2's. The session itself reads ``_db``, whose records a lazy base validates
        only when a call needs them; a dump of that would hold raw records."""
        return materialize(self._db)

    def fork(self) -> Self:
        """An independent twin: the DB forked, the evidence copied."""
        return type(self)(self.env, self.task_id, self.base, self.seen.copy(), db=fork_db(self._db))

    def begin_message(self) -> None:
        """Online use: the next calls form one assistant message; results of earlier calls become evidence."""
        self.seen.begin_message()

    def observe(self, text: Any) -> None:
        """Add a text the agent has now seen (a user turn, for online use) to the information evidence."""
        self.seen.observe(text)

    def finish_without_tools(self) -> Verdict:
        """Accepted when the task's expected actions are empty (the task can be done by talking alone)."""
        expected = expected_actions(self.env.task(self.task_id))
        if not expected:
            return Verdict.accept(notes=("no-tool-finish-allowed",))
        names = ", ".join(str(a.get("name")) for a in expected)
        return Verdict.reject(
            FailureLabel.PRECONDITION,
            f"the agent used no tool, but the task needs tool actions ({names})",
        )


class TauSession(_TaskSession):
    """A strict session: the live state of one tau2 task with every check of ours (see the module docstring)."""

    strict = True

    def step(self, call: ToolCall) -> Verdict:
        self.seen.before_call()
        spec = self.env.domain.tools.get(call.name)
        if spec is None:
            known = ", ".join(sorted(self.env.domain.tools))
            return Verdict.reject(
                FailureLabel.SCHEMA,
                f"unknown tool {call.name!r}; {self.env.name} has: {known}",
                result=self._tau2_answer(call),
            )
        problem = binding_error(spec, call.arguments)
        if problem is not None:
            return Verdict.reject(FailureLabel.SCHEMA, problem, result=self._tau2_answer(call))
        notes: list[str] = []
        missing: list[tuple[str, str]] = []
        if self.seen.evidence is None:
            notes.append("information-unchecked")
        else:
            missing = unseen(call.arguments, self.seen.evidence)
        isolated = not spec.read_only or bool(missing)
        db, flag = fork_db(self._db) if isolated else (self._db, self.flag)
        ok, output = _execute(self.env, db, flag, call, writing=not spec.read_only)
        if ok:
            text = to_json_text(output)
            if missing:
                return Verdict.reject(FailureLabel.INFORMATION, _unseen_reason(missing), result=text, notes=notes)
            if isolated:
                self._db, self.flag = db, flag
            self.seen.accepted(text)  # seen by the calls of later assistant messages only
            return Verdict.accept(result=text, notes=notes)
        return _failure(self.env, self.task_id, call, output, missing, notes)

    def _tau2_answer(self, call: ToolCall) -> str | None:
        """What tau2 would answer to ``call`` in the current state, found on a fork (nothing changes here);
        ``None`` for arguments that are not an object, which tau2's tool calls cannot hold."""
        if not isinstance(call.arguments, Mapping):
            return None
        spec = self.env.domain.tools.get(call.name)
        db, flag = fork_db(self._db)
        ok, output = _execute(self.env, db, flag, call, writing=spec is not None and not spec.read_only)
        return to_json_text(output) if ok else f"Error: {output}"


class Tau2Session(_TaskSession):
    """A tau2 session: tau2's ``Environment.get_response`` and nothing more (see the module docstring). Every
    call executes on the live DB as tau2 executes it, is accepted exactly when tau2 reports ``error=False``, and
    keeps whatever a failing tool changed before it raised. It has no information check (its ``seen`` has no
    evidence), so what the agent sees (:meth:`observe`, :meth:`begin_message`) changes nothing."""

    strict = False

    def step(self, call: ToolCall) -> Verdict:
        if not isinstance(call.arguments, Mapping):  # tau2's tool calls cannot even hold such arguments
            problem = f"{call.name}: arguments must be a JSON object, got {type(call.arguments).__name__}"
            return Verdict.reject(FailureLabel.SCHEMA, problem)
        spec = self.env.domain.tools.get(call.name)
        # tau2's environment: the call runs on the live DB, and a failing tool keeps what it changed.
        ok, output = _execute(self.env, self._db, self.flag, call, writing=spec is not None and not spec.read_only)
        if ok:
            return Verdict.accept(result=to_json_text(output))
        return _failure(self.env, self.task_id, call, output, [], [])


def _failure(
    env: TauEnvironment,
    task_id: str,
    call: ToolCall,
    output: Exception,
    missing: list[tuple[str, str]],
    notes: list[str],
) -> Verdict:
    """The verdict of a call whose tool raised: labelled causes, our diagnosis as ``reason``, and tau2's
    tool message (``"Error: <message>"``) as ``result``."""
    message = str(output)
    masked = ""
    causes = [FailureLabel.INFORMATION] if missing else []
    if call.name not in env.domain.tools:
        causes.append(FailureLabel.SCHEMA)  # tau2's "Tool 'x' not found."
    elif type(output).__name__ in _SCHEMA_EXCEPTIONS:
        causes.append(FailureLabel.SCHEMA)
        notes.append(f"exception:{type(output).__name__}")
    else:
        labelled = label_error(message)
        label = labelled.label
        if not labelled.listed:
            notes.append("unlisted-error")
        causes.append(label)
        if label is FailureLabel.PRECONDITION:
            causes, masked = _stale_state(env, task_id, call, message, causes, notes)
    answer = f"Error: {message}"  # tau2's Environment.get_response wording
    reason = answer
    if masked:
        reason += f" (in the initial state: {masked})"
    if missing:
        reason += f" (also: {_unseen_reason(missing)})"
    return Verdict.reject(causes, reason, result=answer, notes=notes)


def _execute(env: TauEnvironment, db: Any, flag: WriteFlag, call: ToolCall, *, writing: bool) -> tuple[bool, Any]:
    """Run ``call`` on a toolkit over ``db``. Returns ``(True, value)`` or ``(False, exception)``; the exception
    (and those chained to it) without traceback: only its type and message are used."""
    toolkit = env.domain.make_toolkit(db)
    handled = sys.exception()  # the caller's, when it calls while handling one: the tool's chains to it
    flag.call(read_only=not writing)
    try:
        # only the domain's tools; an unknown name fails with tau2's "Tool 'x' not found." message
        return True, invoke_tool(env.domain, toolkit, call.name, call.arguments)
    except InvalidRecord:  # the domain's data is broken, whatever the call: not the tool's error message
        raise
    except Exception as exc:  # tau2 reports every tool exception as an error message; so do we
        return False, _detached(exc, handled)
    finally:
        flag.done()


def _detached(exc: BaseException, handled: BaseException | None = None) -> BaseException:
    """``exc`` with its traceback, and those of the exceptions chained to it, dropped; ``handled`` (the
    exception the caller was handling when it called, which the tool's exception chains to as its
    ``__context__``) and what it chains to are the caller's and keep theirs.

    A traceback holds the frames the exception passed through, and each frame its caller (``f_back``): the
    frame of whoever keeps the returned exception in a variable (``step``, ``_failure``). That is a reference
    cycle, which keeps the whole session, its DB and the environment alive until a collection of the garbage
    collector, instead of freeing them when the last reference goes.
    """
    pending: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or current is handled or id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        pending += [current.__cause__, current.__context__]
    return exc


def _stale_state(
    env: TauEnvironment, task_id: str, call: ToolCall, message: str, causes: list[FailureLabel], notes: list[str]
) -> tuple[list[FailureLabel], str]:
    """Re-run a call refused on a precondition against the task's initial state.

    Accepted there: the rollout's own earlier writes broke the precondition, so ``precondition`` becomes
    ``state_consistency``. Refused there for another reason: the current state masked a second defect of
    the call (a made-up id behind a status check), whose label joins the causes. Returns the causes and the
    masked error message ("" when none).
    """
    db, flag = lazy_db(env.initial_db(task_id), initial=True)
    spec = env.domain.tools[call.name]
    ok, output = _execute(env, db, flag, call, writing=not spec.read_only)
    if ok:
        notes.append("stale-state: the initial state accepts this call")
        return [FailureLabel.STATE_CONSISTENCY if c is FailureLabel.PRECONDITION else c for c in causes], ""
    initial = str(output)
    if initial == message:
        return causes, ""
    notes.append("masked-error: the initial state refuses this call for another reason")
    if type(output).__name__ in _SCHEMA_EXCEPTIONS:
        return [*causes, FailureLabel.SCHEMA], initial
    return [*causes, label_error(initial).label], initial


def _unseen_reason(missing: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{path}={value!r}" for path, value in missing[:4])
    return f"identifier never seen in the conversation, a tool result or the policy: {shown}"
