"""The files of a ``--record`` folder derived from its journals: ``rollouts.jsonl``, ``records.jsonl`` and
``tools.json`` (:mod:`prefix_exec.guard.journal` says what a journal holds).

:func:`rebuild` reads every journal in ``DIR/journal/`` (a torn last line, from a kill mid-write, is dropped),
makes each connection's two lines exactly as the live guard did (:class:`~prefix_exec.guard.log.Snapshot`), and
writes the three files whole (a new file renamed over the old: a reader sees the old text or the new). Lines of
the existing files that no journal holds (a guard before journals, another tool's) are kept. It runs when a guard
ends, and as ``prefix-exec guard --rebuild DIR`` after a guard was killed; running it twice gives the same files.

:func:`check_folder` validates the derived files a guard is about to reuse (regular, UTF-8, JSON lines): a
folder that fails is refused at start, naming the file, the line and what to do.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.guard.folder import RecordFolder
from prefix_exec.guard.log import Snapshot
from prefix_exec.json_types import JsonObject, dumps
from prefix_exec.trajectory import FailureLabel, Verdict

_JOURNALS = "journal"
_DERIVED = ("rollouts.jsonl", "records.jsonl")


@dataclass
class _Connection:
    """One connection as its journal lines rebuild it: its last head, and its calls' texts in order."""

    head: JsonObject
    actions: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    fed: int | None = None
    failing: Verdict | None = None
    last_accepted: bool = True

    def add(self, event: JsonObject) -> None:
        if not isinstance(event["action"].get("name"), str) or not isinstance(
            event["call"].get("accepted", True), bool
        ):
            return  # not a call this guard writes
        self.actions.append(dumps(event["action"]))
        self.calls.append(dumps(event["call"]))
        accepted = bool(event["call"].get("accepted", True))
        verdict = event.get("verdict")
        if self.fed is None and isinstance(verdict, dict):
            self.verdicts.append(dumps(verdict))
            if not accepted:
                self.fed, self.failing = len(self.actions), _verdict(verdict)
        self.last_accepted = accepted

    def snapshot(self) -> Snapshot:
        head = self.head
        no_tool = _verdict(head["no_tool"]) if isinstance(head.get("no_tool"), dict) else None
        return Snapshot(
            dataset=str(head["dataset"]),
            task_id=str(head["task_id"]),
            trial=int(head["trial"]),
            model=str(head["model"]),
            method=str(head["method"]),
            info=dict(head["info"]),
            actions=tuple(self.actions),
            verdicts=tuple(self.verdicts),
            calls=tuple(self.calls),
            fed=self.fed,
            failing=self.failing,
            last_accepted=self.last_accepted,
            no_tool=no_tool,
        )


def _verdict(row: JsonObject) -> Verdict:
    try:
        causes = [FailureLabel.parse(c) for c in row.get("causes") or [row.get("label")] if c]
    except (ValueError, TypeError, InputError):  # a label this guard never writes: the call's verdict is unknown
        causes = [FailureLabel.SCHEMA]
    if row.get("accepted") or not causes:
        return Verdict.accept(notes=row.get("notes") or ())
    return Verdict.reject(causes, str(row.get("reason") or ""), notes=row.get("notes") or ())


def read_journals(folder: RecordFolder) -> tuple[dict[str, _Connection], dict[str, JsonObject]]:
    """Every connection in the folder's journals (by MCP session id, in journal order) and every tool listed."""
    connections: dict[str, _Connection] = {}
    tools: dict[str, JsonObject] = {}
    if not folder.exists:
        return connections, tools
    journals = folder.subfolder(_JOURNALS)
    try:
        names = sorted(n for n in os.listdir(journals) if n.endswith(".jsonl") and not n.startswith("."))
        for name in names:
            text = folder.read_text(name, dir_fd=journals) or ""
            _read_journal(text[: text.rfind("\n") + 1], connections, tools)
    finally:
        os.close(journals)
    return connections, tools


def _read_journal(text: str, connections: dict[str, _Connection], tools: dict[str, JsonObject]) -> None:
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line torn by a crash in the middle of a journal (cannot happen at its end: cut above)
        if not isinstance(event, dict):
            continue
        if isinstance(event.get("tools"), list):
            tools.update({str(t.get("name")): t for t in event["tools"] if isinstance(t, dict)})
            continue
        conn = str(event.get("conn"))
        if isinstance(event.get("head"), dict) and not _head_ok(event["head"]):
            continue  # not a head this guard writes (a journal edited by hand, or torn): its connection is skipped
        if isinstance(event.get("head"), dict):
            if conn in connections:
                connections[conn].head = event["head"]
            else:
                connections[conn] = _Connection(event["head"])
        elif conn in connections and isinstance(event.get("action"), dict) and isinstance(event.get("call"), dict):
            connections[conn].add(event)


#: A folder with at least this many sessions of one call each (outside episodes), and more of them than of others,
#: gets a warning: its client most likely opens a session per call, and the state between them is lost.
LONELY_SESSIONS = 3


def lonely_warning(folder: RecordFolder, connections: dict[str, _Connection]) -> str | None:
    """The warning for a folder of one-call sessions (see :data:`LONELY_SESSIONS`), or None."""
    sessions = [c for name, c in connections.items() if not name.startswith("episode:")]
    lonely = sum(len(c.actions) == 1 for c in sessions)
    if lonely < LONELY_SESSIONS or lonely * 2 <= len(sessions):
        return None
    return (
        f"{lonely} of the {len(sessions)} sessions recorded in {folder.path} made one tool call each: a client that "
        "starts a session per call (inspect's mcp_tools with generate(), LangChain's get_tools()) loses the state "
        "between calls, and each call is a rollout of its own. Keep one session open, or pass --episode KEY "
        "(or set PREFIX_EXEC_GUARD_EPISODE) to continue one episode across sessions (docs/guard.md)"
    )


def _head_ok(head: JsonObject) -> bool:
    """Whether a journal's head has the fields and types the guard writes (so a hand-edited journal cannot break
    the derivation of the others)."""
    names = ("dataset", "task_id", "model", "method")
    trial = head.get("trial")
    return (
        all(isinstance(head.get(n), str) for n in names)
        and isinstance(trial, int)
        and not isinstance(trial, bool)
        and 0 <= trial < 10**9
        and isinstance(head.get("info"), dict)
        and (head.get("no_tool") is None or isinstance(head.get("no_tool"), dict))
    )


def rebuild(folder: RecordFolder) -> tuple[int, int, str | None]:
    """Derive the folder's files from its journals (see the module docstring); returns (connections, calls, the
    one-call-sessions warning or None)."""
    with folder.locked():
        connections, tools = read_journals(folder)
        lines = [connection.snapshot().lines() for connection in connections.values()]
        ours = {_key(json.loads(rollout)) for rollout, _ in lines}
        for index, name in enumerate(_DERIVED):
            kept = [line for line in _lines(folder, name) if _key(json.loads(line)) not in ours]
            folder.replace(name, "".join(f"{line}\n" for line in [*kept, *(pair[index] for pair in lines)]))
        if tools:
            earlier = _tools(folder)
            merged = {**earlier, **tools}
            folder.replace(
                "tools.json", json.dumps({"tools": list(merged.values())}, indent=1, ensure_ascii=False) + "\n"
            )
        folder.fsync()
    return len(connections), sum(len(c.actions) for c in connections.values()), lonely_warning(folder, connections)


def check_folder(folder: RecordFolder) -> None:
    """Refuse a folder whose derived files the guard cannot reuse (see :meth:`RecordFolder.read_text`, and each
    line must be a JSON object)."""
    if not folder.exists:
        return
    for name in _DERIVED:
        _lines(folder, name)
    _tools(folder)
    folder.check_regular(".guard.lock")
    if os.path.lexists(folder.path / _JOURNALS):
        os.close(folder.subfolder(_JOURNALS))  # a plain folder, or refused


def trials_of(folder: RecordFolder, task_id: str) -> list[int]:
    """The trials of ``task_id`` in the folder (its derived rollouts and its journals), -1 when none."""
    trials = [-1]
    if not folder.exists:
        return trials
    for line in _lines(folder, "rollouts.jsonl"):
        row = json.loads(line)
        if row.get("task_id") == task_id and isinstance(row.get("trial"), int):
            trials.append(row["trial"])
    connections, _ = read_journals(folder)
    trials += [int(c.head["trial"]) for c in connections.values() if c.head.get("task_id") == task_id]
    return trials


def _lines(folder: RecordFolder, name: str) -> list[str]:
    text = folder.read_text(name) or ""
    lines = text[: text.rfind("\n") + 1].splitlines()
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict):
            raise InputError(
                "not a JSON object",
                path=folder.path / name,
                line=number,
                hint="the --record folder is the guard's alone; move this file away, or give another folder",
            )
    return lines


def _tools(folder: RecordFolder) -> dict[str, JsonObject]:
    text = folder.read_text("tools.json")
    if text is None:
        return {}
    try:
        listed: Any = json.loads(text)["tools"]
        return {str(t["name"]): t for t in listed if isinstance(t, dict) and "name" in t}
    except (ValueError, KeyError, TypeError):
        raise InputError(
            'not an MCP tools/list result ({"tools": [...]})',
            path=folder.path / "tools.json",
            hint="the --record folder is the guard's alone; move this file away, or give another folder",
        ) from None


def _key(row: JsonObject) -> tuple[Any, ...]:
    return (row.get("dataset"), row.get("task_id"), row.get("trial"), row.get("model"), row.get("method"))
