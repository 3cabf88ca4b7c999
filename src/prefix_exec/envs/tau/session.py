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

A *tau2* session (``strict=False``; the live session of agents that run as tau2 runs them) is tau2's
``Environment.get_response`` and nothing more: every call executes on the live DB as tau2 executes it (no
binding or information check), is accepted exactly when tau2 reports ``error=False``, and keeps whatever a
failing tool changed before it raised, as tau2 does.

Either way a verdict's ``result`` is the content of the tool message tau2 would answer to the call in this
state (``"Error: ..."`` for a tau2 error), also on rejections; ``reason`` is our diagnosis, for the record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from prefix_exec.envs.tau.backend import Domain, import_tau2, to_json_text
from prefix_exec.envs.tau.binding import binding_error
from prefix_exec.envs.tau.dispatch import MAX_DEPTH, depth_error, run_tool
from prefix_exec.envs.tau.information import Evidence, unseen
from prefix_exec.envs.tau.labels import label_error
from prefix_exec.envs.tau.state import WriteFlag, fork_db, lazy_db
from prefix_exec.errors import InputError
from prefix_exec.trajectory import FailureLabel, Rollout, ToolCall, Verdict

_SCHEMA_EXCEPTIONS = ("TypeError", "KeyError", "AttributeError", "ValidationError", "IndexError")


class TauEnvironment:
    """One tau2 domain with its tasks. ``name`` is the dataset name, ``tau3-<domain>``.

    ``tasks`` maps task id to a raw tau2 task dict (as embedded in a results file); ids not in it fall back to
    the package's ``tasks.json``. Initial states are built once per task and shared, like the base DB.
    """

    def __init__(
        self, domain: Domain, tasks: Mapping[str, Mapping[str, Any]] | None = None, *, sequential_calls: bool = False
    ) -> None:
        self.domain = domain
        #: Calls of one logged assistant message see each other's results (``--parallel-calls sequential``).
        self.sequential_calls = sequential_calls
        self.name = f"tau3-{domain.name}"
        self.tasks: dict[str, Mapping[str, Any]] = dict(domain.tasks)
        self.tasks.update(tasks or {})
        self._initial: dict[str, Any] = {}

    def task(self, task_id: str) -> Mapping[str, Any]:
        """The raw task definition. Raises ``KeyError`` for an unknown id."""
        return self.tasks[str(task_id)]

    def initial_db(self, task_id: str) -> Any:
        """The task's initial DB (shared: never mutate it; sessions work on lazy copies)."""
        task_id = str(task_id)
        if task_id not in self._initial:
            self._initial[task_id] = _apply_initial_state(self.domain, self.task(task_id))
        return self._initial[task_id]

    def start(self, task_id: str, evidence: Sequence[Any] | None = None, *, strict: bool = True) -> TauSession:
        """A session in the task's initial state.

        ``evidence`` turns the information check on, seeded with those texts (user messages, system context);
        ``None`` leaves it off. The policy text is always part of the evidence when the check is on.
        ``strict=False`` gives a session that answers exactly as tau2's environment (see the module
        docstring); it has no checks of ours, so it takes no ``evidence`` (``ValueError``).
        """
        if not strict and evidence is not None:
            raise ValueError("a tau2 session (strict=False) makes no information check: pass no evidence")
        base = self.initial_db(task_id)
        seen: Evidence | None = None
        if evidence is not None:
            seen = Evidence()
            seen.add(self.domain.policy)
            seen.extend(evidence)
        return TauSession(self, str(task_id), base, seen, strict=strict)

    def bind(self, rollout: Rollout) -> RolloutEnvironment:
        """This environment seen by one rollout: its sessions know the conversation before each call."""
        return RolloutEnvironment(self, rollout)


class RolloutEnvironment:
    """A :class:`TauEnvironment` bound to one rollout's transcript (what ``score_to_file``'s ``env_for`` returns).

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
            return self.env.start(task_id)
        session = self.env.start(task_id, evidence=())
        session.timeline = self.timeline
        session.messages = self.messages
        return session


def conversation_timeline(transcript: Sequence[Mapping[str, Any]]) -> tuple[tuple[int, str], ...]:
    """``(calls_before, text)`` for every non-assistant message text, in order.

    ``calls_before`` counts the assistant tool calls in messages *strictly before* the message holding the
    text's first following call; a text is visible to call k (0-based) when ``calls_before <= k``.
    """
    timeline: list[tuple[int, str]] = []
    calls = 0
    for message in transcript:
        role = message.get("role")
        if role == "assistant":
            calls += len(message.get("tool_calls") or ())
            continue
        content = message.get("content")
        if content:
            timeline.append((calls, content if isinstance(content, str) else json.dumps(content)))
    return tuple(timeline)


def call_messages(transcript: Sequence[Mapping[str, Any]]) -> tuple[int, ...]:
    """For every assistant tool call (0-based, counted like :func:`conversation_timeline`), the 0-based index
    in ``transcript`` of the assistant message issuing it. Calls sharing an index are parallel calls."""
    return tuple(
        index
        for index, message in enumerate(transcript)
        if message.get("role") == "assistant"
        for _ in message.get("tool_calls") or ()
    )


class TauSession:
    """The live state of one tau2 task. See the module docstring for the order of checks and ``strict``."""

    def __init__(
        self, env: TauEnvironment, task_id: str, base: Any, evidence: Evidence | None, *, strict: bool = True
    ) -> None:
        self.env = env
        self.task_id = task_id
        self.db, self.flag = lazy_db(base)
        self.evidence = evidence
        self.strict = strict
        self.timeline: tuple[tuple[int, str], ...] = ()
        self.messages: tuple[int, ...] = ()
        self.steps = 0
        self._seen_upto = 0
        self._pending: list[str] = []
        self._online_messages = False  # begin_message() was called: the driver marks answer boundaries

    def begin_message(self) -> None:
        """Online use: the next calls form one assistant message; results of earlier calls become evidence."""
        self._online_messages = True
        if self.evidence is not None:
            self.evidence.extend(self._pending)
        self._pending.clear()

    def fork(self) -> TauSession:
        twin = TauSession.__new__(TauSession)
        twin.env, twin.task_id = self.env, self.task_id
        twin.db, twin.flag = fork_db(self.db)
        twin.evidence = self.evidence.copy() if self.evidence is not None else None
        twin.strict = self.strict
        twin.timeline, twin.messages = self.timeline, self.messages
        twin.steps, twin._seen_upto, twin._pending = self.steps, self._seen_upto, list(self._pending)
        twin._online_messages = self._online_messages
        return twin

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

    def step(self, call: ToolCall) -> Verdict:
        self._catch_up()
        self.steps += 1
        spec = self.env.domain.tools.get(call.name)
        if not self.strict:
            if not isinstance(call.arguments, Mapping):  # tau2's tool calls cannot even hold such arguments
                problem = f"{call.name}: arguments must be a JSON object, got {type(call.arguments).__name__}"
                return Verdict.reject(FailureLabel.SCHEMA, problem)
            # tau2's environment: the call runs on the live DB, and a failing tool keeps what it changed.
            ok, output = self._execute(self.db, self.flag, call, writing=spec is not None and not spec.read_only)
            if ok:
                return Verdict.accept(result=to_json_text(output))
            return self._failure(call, output, [], [])
        if spec is None:
            known = ", ".join(sorted(self.env.domain.tools))
            return Verdict.reject(FailureLabel.SCHEMA, f"unknown tool {call.name!r}; {self.env.name} has: {known}",
                                  result=self._tau2_answer(call))
        problem = binding_error(spec, call.arguments)
        if problem is not None:
            return Verdict.reject(FailureLabel.SCHEMA, problem, result=self._tau2_answer(call))
        notes: list[str] = []
        missing: list[tuple[str, str]] = []
        if self.evidence is None:
            notes.append("information-unchecked")
        else:
            missing = unseen(call.arguments, self.evidence)
        isolated = not spec.read_only or bool(missing)
        db, flag = fork_db(self.db) if isolated else (self.db, self.flag)
        ok, output = self._execute(db, flag, call, writing=not spec.read_only)
        if ok:
            text = to_json_text(output)
            if missing:
                return Verdict.reject(FailureLabel.INFORMATION, _unseen_reason(missing), result=text, notes=notes)
            if isolated:
                self.db, self.flag = db, flag
            if self.evidence is not None:
                self._pending.append(text)  # seen by the calls of later assistant messages only
                self._release_if_last_of_message()
            return Verdict.accept(result=text, notes=notes)
        return self._failure(call, output, missing, notes)

    def _failure(
        self, call: ToolCall, output: Exception, missing: list[tuple[str, str]], notes: list[str]
    ) -> Verdict:
        """The verdict of a call whose tool raised: labelled causes, our diagnosis as ``reason``, and tau2's
        tool message (``"Error: <message>"``) as ``result``."""
        message = str(output)
        masked = ""
        causes = [FailureLabel.INFORMATION] if missing else []
        if call.name not in self.env.domain.tools:
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
                causes, masked = self._stale_state(call, message, causes, notes)
        answer = f"Error: {message}"  # tau2's Environment.get_response wording
        reason = answer
        if masked:
            reason += f" (in the initial state: {masked})"
        if missing:
            reason += f" (also: {_unseen_reason(missing)})"
        return Verdict.reject(causes, reason, result=answer, notes=notes)

    def _tau2_answer(self, call: ToolCall) -> str | None:
        """What tau2 would answer to ``call`` in the current state, found on a fork (nothing changes here);
        ``None`` for arguments that are not an object, which tau2's tool calls cannot hold."""
        if not isinstance(call.arguments, Mapping):
            return None
        spec = self.env.domain.tools.get(call.name)
        db, flag = fork_db(self.db)
        ok, output = self._execute(db, flag, call, writing=spec is not None and not spec.read_only)
        return to_json_text(output) if ok else f"Error: {output}"

    def observe(self, text: Any) -> None:
        """Add a text the agent has now seen (a user turn, for online use) to the information evidence."""
        if self.evidence is not None:
            self.evidence.add(text)

    def _catch_up(self) -> None:
        """Feed the evidence every transcript text visible to the call about to be checked, and the replayed
        results of accepted calls of earlier assistant messages."""
        if self.evidence is None:
            return
        if self._pending and self._new_message(self.steps):
            self.evidence.extend(self._pending)
            self._pending.clear()
        while self._seen_upto < len(self.timeline) and self.timeline[self._seen_upto][0] <= self.steps:
            self.evidence.add(self.timeline[self._seen_upto][1])
            self._seen_upto += 1

    def _new_message(self, index: int) -> bool:
        """Whether call ``index`` (0-based) opens an assistant message, so earlier calls' results are visible.

        Without message boundaries (a session driven online, one call at a time) every call is its own message,
        unless the driver marks them (:meth:`begin_message`), which then releases results itself.
        """
        if self._online_messages:
            return False
        if index == 0 or index >= len(self.messages):
            return True
        return self.messages[index] != self.messages[index - 1]

    def _release_if_last_of_message(self) -> None:
        """Without a transcript, release a replayed result at once (online use: each call is its own turn)."""
        if self.evidence is not None and not self.messages and not self._online_messages:
            self.evidence.extend(self._pending)
            self._pending.clear()

    def _execute(self, db: Any, flag: WriteFlag, call: ToolCall, *, writing: bool) -> tuple[bool, Any]:
        """Run ``call`` on a toolkit over ``db``. Returns ``(True, value)`` or ``(False, exception)``."""
        toolkit = self.env.domain.make_toolkit(db)
        flag.writing = writing
        try:
            # only the domain's tools; an unknown name fails with tau2's "Tool 'x' not found." message
            return True, run_tool(self.env.domain, toolkit, call.name, call.arguments)
        except Exception as exc:  # tau2 reports every tool exception as an error message; so do we
            return False, exc
        finally:
            flag.writing = False

    def _stale_state(
        self, call: ToolCall, message: str, causes: list[FailureLabel], notes: list[str]
    ) -> tuple[list[FailureLabel], str]:
        """Re-run a call refused on a precondition against the task's initial state.

        Accepted there: the rollout's own earlier writes broke the precondition, so ``precondition`` becomes
        ``state_consistency``. Refused there for another reason: the current state masked a second defect of
        the call (a made-up id behind a status check), whose label joins the causes. Returns the causes and the
        masked error message ("" when none).
        """
        db, flag = lazy_db(self.env.initial_db(self.task_id))
        spec = self.env.domain.tools[call.name]
        ok, output = self._execute(db, flag, call, writing=not spec.read_only)
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


def expected_actions(task: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The task's ``evaluation_criteria.actions``. A malformed one raises :class:`InputError`."""
    criteria = task.get("evaluation_criteria") or {}
    actions = criteria.get("actions") if isinstance(criteria, Mapping) else None
    actions = actions or []
    if not isinstance(criteria, Mapping) or not _objects(actions) or not all("name" in a for a in actions):
        raise InputError(
            f"task {task.get('id')}: evaluation_criteria.actions is not a list of named actions",
            field="evaluation_criteria",
        )
    return list(actions)


def _objects(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, Mapping) for item in value)


def _malformed(task: Mapping[str, Any], what: str) -> InputError:
    return InputError(f"task {task.get('id')}: malformed initial_state: {what}", field="initial_state")


def _apply_initial_state(domain: Domain, task: Mapping[str, Any]) -> Any:
    """The DB after the task's ``initial_state``, in tau2's order (``Environment.set_state``): initialization
    data, then initialization actions, then the assistant tool calls of the initial message history.

    A malformed ``initial_state`` (wrong shapes, data tau2's model rejects) raises :class:`InputError`.
    """
    state = task.get("initial_state") or {}
    if not isinstance(state, Mapping):
        raise _malformed(task, f"expected an object, got {state!r}")
    init_data = state.get("initialization_data") or {}
    if not isinstance(init_data, Mapping):
        raise _malformed(task, "initialization_data is not an object")
    data = init_data.get("agent_data")
    if data is not None and not isinstance(data, Mapping):
        raise _malformed(task, "initialization_data.agent_data is not an object")
    init_actions = state.get("initialization_actions") or []
    history = state.get("message_history") or []
    if not _objects(init_actions) or not all(isinstance(a.get("func_name"), str) for a in init_actions):
        raise _malformed(task, "initialization_actions is not a list of objects with a func_name")
    if not _objects(history) or not all(_objects(m.get("tool_calls") or []) for m in history):
        raise _malformed(task, "message_history is not a list of messages with tool call objects")
    actions = [
        {"func_name": a["func_name"], "arguments": a.get("arguments"), "env_type": a.get("env_type", "assistant")}
        for a in init_actions
    ]
    actions += [
        {"func_name": c.get("name"), "arguments": c.get("arguments"), "env_type": c.get("requestor", "assistant")}
        for message in history
        for c in message.get("tool_calls") or []
    ]
    if not data and not actions:
        return domain.base_db
    db = domain.base_db
    if data:
        update = import_tau2("tau2.utils.pydantic_utils").update_pydantic_model_with_dict
        try:
            db = update(db, data)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # pydantic's ValidationError included
            raise _malformed(task, f"initialization_data.agent_data does not fit the DB: {exc}") from None
    else:
        db = db.model_copy(deep=True)
    toolkit = domain.make_toolkit(db)
    required = len(init_actions)
    for index, action in enumerate(actions):
        name = action["func_name"]
        if action["env_type"] != "assistant":
            raise InputError(f"task {task.get('id')}: user-side initial action {name} (airline/retail have none)")
        arguments = action["arguments"] or {}
        if not isinstance(arguments, Mapping) or depth_error(arguments) is not None:
            raise _malformed(task, f"the arguments of {name!r} are not an object of at most {MAX_DEPTH} levels")
        if index < required and name not in domain.tools:
            raise InputError(
                f"task {task.get('id')}: initialization action {name!r} is not a tool of {domain.name}",
                field="initial_state.initialization_actions",
                hint=f"{domain.name}'s tools: {', '.join(sorted(domain.tools))}",
            )
        try:
            run_tool(domain, toolkit, str(name), arguments)
        except Exception as exc:
            if index < required:
                raise InputError(f"task {task.get('id')}: initialization action {name} fails: {exc}") from None
            # a failing call of the initial message history changed nothing in tau2 either
    return toolkit.db
