"""One MCP connection as the guard saw it: its calls and verdicts, kept as a canonical rollout and a scored record.

The rollout holds every ``tools/call`` in the order the live session was stepped (each with the server's
answer as its observation; a blocked call with the block it got), so ``score custom --tools DIR/tools.json
--hooks SIDE DIR/rollouts.jsonl`` replays it. The record holds the guard's own verdicts: FED is the depth of
the first call it rejected (``T + 1`` when none), its label that verdict's, and ``metadata.guard.calls`` the
verdict on every call, the ones after FED included, with its latency.

A connection is one rollout however long it runs, so the files are rewritten per call; each call's JSON text is
made once, when it settles (:class:`ConnectionLog`), and a :class:`Snapshot` splices them into the two lines,
so making a call's text costs O(1) and the lines O(connection).

Final success Y is not something a proxy sees. The stated rule (:data:`SUCCESS_RULE`): 1 when the connection's
last call was accepted, else 0, and 0 without a call; ``metadata.success_rule`` says so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from prefix_exec.guard.bounds import bound_call
from prefix_exec.guard.hearing import heard_entry, heard_transcript
from prefix_exec.json_types import JsonObject, dumps
from prefix_exec.records.codec import call_to_json, record_to_json, rollout_to_json, verdict_to_json
from prefix_exec.replay import horizon_and_fed
from prefix_exec.trajectory import PrefixRecord, Rollout, ToolCall, Verdict

SUCCESS_RULE = (
    "heuristic: 1 when the session's last tool call was accepted; 0 without a tool call (a proxy never sees the "
    "task's outcome)"
)
# Placeholders spliced with the JSON text of each list (a string no JSON encoder writes for our own fields).
_ACTIONS, _VERDICTS, _CALLS = "\x00actions\x00", "\x00verdicts\x00", "\x00calls\x00"


def now_iso() -> str:
    """The wall-clock time now, ISO 8601 in UTC with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class ConnectionLog:
    """The calls of one connection. ``info`` is ``metadata.guard``: mode, transport, the server's command (its
    secrets removed) or URL, the server's and client's names and versions, the protocol version, start and
    end; ``calls`` is added when the lines are made."""

    def __init__(self, task_id: str, *, method: str, info: JsonObject, trial: int = 0) -> None:
        self.task_id = task_id
        self.trial = trial
        self.method = method
        self.dataset: str | None = None
        self.info: JsonObject = {**info, "started_at": now_iso()}
        self.started = time.perf_counter()
        self.actions: list[ToolCall] = []
        self.fed: int | None = None
        self.failing: Verdict | None = None
        self.last_accepted = True
        self.action_texts: list[str] = []
        self.verdict_texts: list[str] = []
        self.call_texts: list[str] = []
        self.kept_chars = 0
        self.model_name: str | None = None  # --model; else the client's name

    def resume(self, earlier: Snapshot, actions: list[ToolCall]) -> None:
        """Continue an episode's rollout (``--episode``): ``earlier`` is its snapshot as the record folder holds
        it, ``actions`` its calls; the next call is the step after them."""
        self.task_id, self.trial = earlier.task_id, earlier.trial
        self.actions, self.fed, self.failing = list(actions), earlier.fed, earlier.failing
        self.last_accepted = earlier.last_accepted
        self.action_texts, self.verdict_texts = list(earlier.actions), list(earlier.verdicts)
        self.call_texts = list(earlier.calls)
        sessions = earlier.info.get("sessions")
        before = sessions if isinstance(sessions, list) else [earlier.info.get("session")]
        self.info["sessions"] = [*before, self.info.get("session")]
        self.info["episode_started_at"] = earlier.info.get("episode_started_at", earlier.info.get("started_at"))
        if isinstance(earlier.info.get("heard"), list):
            self.info["heard"] = list(earlier.info["heard"])

    @property
    def model(self) -> str:
        if self.model_name is not None:
            return self.model_name
        client = self.info.get("client")
        return str(client.get("name")) if isinstance(client, dict) and client.get("name") else "unknown-client"

    def add(self, call: ToolCall, verdict: Verdict, entry: JsonObject) -> None:
        """One settled call: the call (with its observation), the guard's verdict on it, and its entry in
        ``metadata.guard.calls`` (forwarded or not, who decided, latencies)."""
        step = len(self.actions) + 1
        call, cut, kept = bound_call(call, self.kept_chars)  # every line stays readable (guard/bounds.py)
        self.kept_chars += kept
        entry = {**entry, "truncated": cut} if cut is not None else entry
        self.actions.append(call)
        self.action_texts.append(dumps(call_to_json(call)))
        if self.fed is None:
            self.verdict_texts.append(dumps(verdict_to_json(step, call, verdict)))
            if not verdict.accepted:
                self.fed, self.failing = step, verdict
        self.last_accepted = verdict.accepted
        label = verdict.label.value if verdict.label else None
        row = {"step": step, "tool": call.name, "at": now_iso(), "accepted": verdict.accepted, "label": label, **entry}
        self.call_texts.append(dumps(row))

    def hear(self, text: str, source: str) -> None:
        """The conversation said ``text`` (``source``: ``--given``, ``elicitation``), after the calls so far."""
        heard = self.info.setdefault("heard", [])
        assert isinstance(heard, list)
        heard.append(heard_entry(text, source, len(self.actions)))

    def interrupt(self, call: ToolCall, reason: str) -> None:
        """A call in flight when the server failed (exited, timed out) or the guard was stopped: the client got an
        error; the call is listed in ``metadata.guard.interrupted`` (the connection's ``metadata.infrastructure``
        says why it ended, so ``metrics`` leaves it out by default)."""
        interrupted = self.info.setdefault("interrupted", [])
        assert isinstance(interrupted, list)
        interrupted.append({"tool": call.name, "arguments": dict(call.arguments), "reason": reason, "at": now_iso()})

    def end(self, reason: str) -> None:
        self.info.setdefault("ended_at", now_iso())
        self.info.setdefault("end", reason)

    def snapshot(self, dataset: str, no_tool: Verdict | None) -> Snapshot:
        """The connection as it stands; ``no_tool`` is the no-tool verdict, used when no call was made."""
        return Snapshot(
            dataset=dataset,
            task_id=self.task_id,
            trial=self.trial,
            model=self.model,
            method=self.method,
            info=dict(self.info),
            actions=tuple(self.action_texts),
            verdicts=tuple(self.verdict_texts),
            calls=tuple(self.call_texts),
            fed=self.fed,
            failing=self.failing,
            last_accepted=self.last_accepted,
            no_tool=no_tool,
        )


@dataclass(frozen=True)
class Snapshot:
    """A connection's state at one moment, immutable, so the writer thread can make its lines."""

    dataset: str
    task_id: str
    trial: int
    model: str
    method: str
    info: JsonObject
    actions: tuple[str, ...]
    verdicts: tuple[str, ...]
    calls: tuple[str, ...]
    fed: int | None
    failing: Verdict | None
    last_accepted: bool
    no_tool: Verdict | None

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.dataset, self.task_id, self.trial)

    def lines(self, scrub: Callable[[str], str] | None = None) -> tuple[str, str]:
        """The rollout line and the record line (JSON, without the newline). ``scrub``, when given, is applied
        to each line before the calls' texts are spliced in (scrub those yourself, once each): so a long
        connection's lines are not scanned whole per call. A scrub that breaks a placeholder is applied to the
        whole lines instead."""
        guard = {**self.info, "calls": _CALLS}
        metadata = {"source": "prefix-exec guard", "success_rule": SUCCESS_RULE, "guard": guard}
        if isinstance(self.info.get("infrastructure"), str):  # the server failed: not the agent's rollout
            metadata["infrastructure"] = self.info["infrastructure"]
        if self.actions:
            success = int(self.last_accepted)
            T, fed = horizon_and_fed(len(self.actions), self.fed)
            verdicts = "[" + ",".join(self.verdicts) + "]"
        else:
            no_tool = self.no_tool or Verdict.accept()
            success = 0  # a session without a tool call did nothing a proxy can count as a success
            T, fed = horizon_and_fed(0, None if no_tool.accepted else 1)
            verdicts = "[" + dumps(verdict_to_json(1, None, no_tool)) + "]"
        unit = (self.dataset, self.task_id, self.model, self.method)
        transcript = heard_transcript(self.info.get("heard"), len(self.actions))
        rollout = rollout_to_json(
            Rollout(*unit, trial=self.trial, success=success, metadata=metadata, transcript=transcript)
        )
        record = record_to_json(
            PrefixRecord(
                *unit, trial=self.trial, T=T, fed=fed, success=success, no_tool=not self.actions, metadata=metadata
            )
        )
        record["label"], record["reason"] = _label_and_reason(self.failing if self.actions else self.no_tool)
        rollout["actions"] = record["actions"] = _ACTIONS
        record["verdicts"] = _VERDICTS
        skeletons = dumps(rollout), dumps(record)
        if scrub is None:
            return _splice(skeletons[0], verdicts, self), _splice(skeletons[1], verdicts, self)
        clean = scrub(skeletons[0]), scrub(skeletons[1])
        marks = [json.dumps(mark) for mark in (_ACTIONS, _VERDICTS, _CALLS)]
        if marks[0] in clean[0] and all(mark in clean[1] for mark in marks):
            return _splice(clean[0], verdicts, self), _splice(clean[1], verdicts, self)
        return scrub(_splice(skeletons[0], verdicts, self)), scrub(_splice(skeletons[1], verdicts, self))


def _label_and_reason(verdict: Verdict | None) -> tuple[str | None, str | None]:
    if verdict is None or verdict.accepted:
        return None, None
    return verdict.label.value if verdict.label else None, verdict.reason


def _splice(line: str, verdicts: str, snapshot: Snapshot) -> str:
    """``line`` with each placeholder it holds replaced by its list, in one pass (a long connection's lists are
    copied once, not once per placeholder)."""
    lists = {
        json.dumps(_ACTIONS): "[" + ",".join(snapshot.actions) + "]",
        json.dumps(_VERDICTS): verdicts,
        json.dumps(_CALLS): "[" + ",".join(snapshot.calls) + "]",
    }
    found = sorted((at, mark) for mark in lists if (at := line.find(mark)) >= 0)
    parts, done = [], 0
    for at, mark in found:
        parts += [line[done:at], lists[mark]]
        done = at + len(mark)
    return "".join([*parts, line[done:]])
