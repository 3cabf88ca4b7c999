"""The guard's journal, ``--record DIR``: an append-only log of what each guarded connection did, and the files
for scoring derived from it.

- ``DIR/journal/<start>-<pid>-<random>.jsonl``: this guard process's journal, created new (``O_EXCL``), only ever
  appended to. One line per event: a connection's head (identity and ``metadata.guard``, written again when it
  changes: the client's name after ``initialize``, the end), one line per settled call (the call with its
  observation, its entry in ``metadata.guard.calls``, and its verdict while the connection has not failed yet),
  and the tools a listing brought.
- ``DIR/rollouts.jsonl``, ``DIR/records.jsonl``, ``DIR/tools.json``: derived from every journal in the folder
  (:mod:`prefix_exec.guard.rebuild`) when the guard ends, or by ``prefix-exec guard --rebuild DIR`` after a kill;
  the same files ``score custom``, ``metrics`` and ``report`` read.

A settled call's line is appended (one ``write``, no fsync) before its answer is passed on to the client (the
pump calls :meth:`Journal.update`), so every call whose answer the client has received is in the journal, and a
kill of the guard, SIGKILL included, loses only the calls in flight. A call costs one append of its own line:
constant, however long the connection (the previous design rewrote the connection's lines per call). ``fsync``,
for a power loss or an operating-system crash, is done by a thread of its own, paced (after an fsync of t seconds
it waits 3t, at least 0.5 s), and at close.

Secrets never reach the journal: each text loses URL credentials (:func:`prefix_exec.records.redaction.redact_text`)
and every occurrence of the given secret values, once, as it is appended. Every file is created through the
folder's handle (:class:`~prefix_exec.guard.folder.RecordFolder`): nothing planted in the folder is followed.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from prefix_exec.errors import InputError
from prefix_exec.guard.folder import RecordFolder
from prefix_exec.guard.log import Snapshot
from prefix_exec.json_types import JsonObject, dumps
from prefix_exec.records.codec import verdict_to_json
from prefix_exec.records.redaction import MARK, redact_text

#: After an fsync that took t seconds, the syncer waits PACE * t before the next, and at least SYNC_PAUSE_S.
PACE = 3.0
SYNC_PAUSE_S = 0.5
#: Longest wait at close for the syncer's fsync in progress, in seconds.
CLOSE_WAIT_S = 30.0
#: The files derived from the journals, and the journals' subfolder.
RECORDED = ("rollouts.jsonl", "records.jsonl", "tools.json")
JOURNALS = "journal"


class Journal:
    """The writer of one guard process's journal in the folder ``folder``. :meth:`update` and :meth:`add_tools`
    append at once (from any thread: a lock orders them); :meth:`close` fsyncs, stops the syncer and derives the
    folder's files.

    Raises :class:`~prefix_exec.errors.InputError` when the folder, or a derived file already in it, is not
    ours to use (a link, a FIFO, a file that is not UTF-8): the guard refuses before any server starts.
    """

    def __init__(self, folder: Path, *, secrets: Iterable[str] = ()) -> None:
        from prefix_exec.guard.rebuild import check_folder

        self.folder = RecordFolder(folder)
        self.tools_path = folder / "tools.json"
        check_folder(self.folder)  # existing derived files validated before reuse
        if self.folder.exists:
            self.folder.close()  # opened to check; reopened at the first event
        self._journals: int | None = None
        # Named by its start to the nanosecond: journals sort in the order their guards started, which is the
        # order an episode's sessions ran in (one after another: a client opening a session per call).
        self.name = f"{time.strftime('%Y%m%dT%H%M%S')}.{time.time_ns() % 10**9:09d}-{os.getpid()}-{_token()}.jsonl"
        self._fd: int | None = None  # created at the first event: a guard that never served leaves no journal
        texts = {s for s in secrets if len(s) >= 4}
        texts |= {json.dumps(s)[1:-1] for s in texts}  # as a JSON string holds it (quotes, backslashes escaped)
        texts |= {json.dumps(s, ensure_ascii=False)[1:-1] for s in texts}
        self._secrets = sorted(texts, key=len, reverse=True)
        self._done: dict[str, int] = {}  # calls appended, per connection
        self._heads: dict[str, str] = {}  # the head last appended, per connection
        self._tools: dict[str, JsonObject] = {}
        self._trials: dict[str, int] = {}
        self._lock = threading.Lock()
        self._unsynced = self._closed = self._warned = self._lonely = False
        self._cond = threading.Condition()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._sync_loop, name="prefix-exec-guard-fsync", daemon=True)
        self._thread.start()

    def trial_for(self, task_id: str) -> int:
        """A trial number for a new connection of ``task_id`` (``--task``): one more than any trial of it in the
        folder (derived files and journals), so connections of one task never share a unit key."""
        from prefix_exec.guard.rebuild import trials_of

        with self._lock:
            taken = trials_of(self.folder, task_id)
            self._trials[task_id] = max([*taken, self._trials.get(task_id, -1)]) + 1
            return self._trials[task_id]

    def episode(self, key: str) -> Snapshot | None:
        """The episode ``key``'s rollout as the folder's journals hold it (None: a new episode); this journal
        appends the episode's next calls after it."""
        from prefix_exec.guard.rebuild import read_journals

        with self._lock:
            connections, _ = read_journals(self.folder)
            found = connections.get(episode_conn(key))
            if found is None:
                return None
            self._done[episode_conn(key)] = len(found.actions)
            return found.snapshot()

    def update(self, snapshot: Snapshot) -> None:
        """Append what ``snapshot`` adds to the connection: its head when it changed, and each new call."""
        episode = snapshot.info.get("episode")
        if isinstance(episode, str):
            conn = episode_conn(episode)
        else:
            conn = str(snapshot.info.get("session") or f"{snapshot.task_id}#{snapshot.trial}")
        key = json.dumps(conn)
        with self._lock:
            lines = []
            head = self._head_text(snapshot)
            if self._heads.get(conn) != head:
                self._heads[conn] = head
                lines.append('{"conn":' + key + ',"head":' + head + "}")
            done = self._done.get(conn, 0)
            for step in range(done, len(snapshot.actions)):
                verdict = snapshot.verdicts[step] if step < len(snapshot.verdicts) else None
                parts = [f'{{"conn":{key},"action":', snapshot.actions[step], ',"call":', snapshot.calls[step]]
                parts += [',"verdict":', verdict, "}"] if verdict is not None else ["}"]
                lines.append(self._scrub("".join(parts)))
            self._done[conn] = len(snapshot.actions)
            self._append(lines)

    def add_tools(self, tools: list[JsonObject]) -> None:
        """Tools a server listed; ``tools.json`` will hold every tool seen, by name (the latest definition)."""
        with self._lock:
            fresh = [t for t in tools if self._tools.get(str(t.get("name"))) != t]
            for tool in fresh:
                self._tools[str(tool.get("name"))] = tool
            if fresh:
                self._append([self._scrub(dumps({"tools": fresh}))])

    def derive(self) -> None:
        """Derive the folder's files from every journal in it, now: when a connection ends, and at close. Its cost
        is the folder's size, once per connection (a call never waits on it)."""
        from prefix_exec.guard.rebuild import rebuild

        if self._fd is None:
            return
        try:
            warning = rebuild(self.folder)[2]
        except (OSError, ValueError, InputError) as exc:  # the journal is whole; --rebuild derives the files later
            self._warn(f"cannot derive the files in {self.folder.path}: {exc}; run prefix-exec guard --rebuild")
            return
        if warning is not None and not self._lonely:
            self._lonely = True
            print(f"prefix-exec guard: warning: {warning}", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Stop the syncer, fsync the journal, and derive the folder's files from every journal in it."""
        with self._cond:
            self._closed = True
            self._closing.set()
            self._cond.notify()
        self._thread.join(CLOSE_WAIT_S)
        self._sync()
        try:
            self.derive()
        finally:
            with self._lock:
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
                if self._journals is not None:
                    os.close(self._journals)
                    self._journals = None
            self.folder.close()

    def _head_text(self, snapshot: Snapshot) -> str:
        head: JsonObject = {
            "dataset": snapshot.dataset,
            "task_id": snapshot.task_id,
            "trial": snapshot.trial,
            "model": snapshot.model,
            "method": snapshot.method,
            "info": snapshot.info,
        }
        if not snapshot.actions and snapshot.no_tool is not None:
            head["no_tool"] = verdict_to_json(1, None, snapshot.no_tool)
        return self._scrub(dumps(head))

    def _append(self, lines: list[str]) -> None:
        if not lines:
            return
        data = ("\n".join(lines) + "\n").encode("utf-8")
        try:
            if self._fd is None:
                self._journals = self.folder.subfolder(JOURNALS)
                self._fd = self.folder.create(self.name, dir_fd=self._journals)
            view, written = memoryview(data), 0
            while written < len(data):  # O_APPEND: one write per event in practice; a short write continues it
                written += os.write(self._fd, view[written:])
        except OSError as exc:  # a full disk must not take the proxy down: say so once, keep serving
            self._warn(f"cannot write the journal in {self.folder.path}: {exc.strerror or exc}")
            return
        with self._cond:
            if not self._unsynced:  # wake the syncer once per fsync, not once per call
                self._unsynced = True
                self._cond.notify()

    def _sync_loop(self) -> None:
        while True:
            with self._cond:
                while not self._unsynced and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return  # close() does the last fsync itself
                self._unsynced = False
            started = time.perf_counter()
            self._sync()
            self._closing.wait(max(PACE * (time.perf_counter() - started), SYNC_PAUSE_S))

    def _sync(self) -> None:
        fd = self._fd
        if fd is None:
            return
        try:
            os.fsync(fd)
            if self._journals is not None:
                self.folder.fsync(self._journals)  # the journal's own name
        except OSError as exc:
            self._warn(f"cannot fsync the journal in {self.folder.path}: {exc.strerror or exc}")

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MARK)
        return redact_text(text)

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            print(f"prefix-exec guard: warning: {message}", file=sys.stderr, flush=True)


def episode_conn(key: str) -> str:
    """The journal's name for the connections of episode ``key`` (one rollout)."""
    return f"episode:{key}"


def _token() -> str:
    return secrets.token_hex(3)
