"""``--record DIR``: the files a guarded session leaves for scoring, kept current call by call.

- ``DIR/rollouts.jsonl``: one canonical rollout per MCP session (``score custom`` reads it);
- ``DIR/records.jsonl``: one scored record per session, the guard's own verdicts (``metrics``, ``report``);
- ``DIR/tools.json``: the tools the server listed, as an MCP ``tools/list`` result (``score custom --tools``).

Each settled call hands the session's :class:`~prefix_exec.guard.log.Snapshot` to a writer thread, so the
client never waits for the disk. The writer replaces the session's line in both files (write a temporary
file, fsync, rename), so the files are whole at every moment. A write's cost grows with the session, so the
writer is paced (after a write of t seconds it waits 3t, at most 0.5 s) and one write covers every call that
settled meanwhile: an agent's calls, seconds apart, are each written at once; under a flood of calls a kill
loses at most the calls of the last pause and write (close, SIGTERM and SIGINT write everything). Lines of
other sessions (earlier runs, or another guard recording into the same folder at the same time) are kept:
the writer holds ``DIR/.guard.lock`` while it reads, changes and renames a file.

Secrets never reach these files: every line and ``tools.json`` lose URL credentials
(:func:`prefix_exec.redaction.redact_text`) and every occurrence of the given secret values (the server's
secret-looking environment variables and command-line values; :func:`prefix_exec.redaction.secret_values`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from prefix_exec.guard.log import Snapshot
from prefix_exec.json_types import JsonObject
from prefix_exec.redaction import MARK, redact_text

#: Longest wait for another guard's hold on the folder's lock before writing anyway, in seconds.
LOCK_WAIT_S = 5.0
#: After a write that took t seconds, the writer waits PACE * t before the next (at most MAX_PAUSE_S).
PACE = 3.0
MAX_PAUSE_S = 0.5
#: Longest wait at close for the last write, in seconds.
CLOSE_WAIT_S = 30.0


class Recorder:
    """The writer of one ``--record`` folder; :meth:`close` writes what is pending and stops the thread."""

    def __init__(self, folder: Path, *, secrets: Iterable[str] = ()) -> None:
        self.folder = folder  # made at the first write: a guard that never served a call leaves nothing behind
        self.rollouts, self.records, self.tools_path = (
            folder / "rollouts.jsonl",
            folder / "records.jsonl",
            folder / "tools.json",
        )
        texts = {s for s in secrets if len(s) >= 4}
        texts |= {json.dumps(s)[1:-1] for s in texts}  # as a JSON string holds it (quotes, backslashes escaped)
        self._secrets = sorted(texts, key=len, reverse=True)
        self._written: dict[tuple[str, str, int], tuple[str, str]] = {}
        self._pending: dict[tuple[str, str, int], Snapshot] = {}
        self._tools: dict[str, JsonObject] = {}
        self._tools_dirty = False
        self._trials: dict[str, int] = {}
        self._closed = False
        self._warned = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="prefix-exec-guard-recorder", daemon=True)
        self._thread.start()

    def trial_for(self, task_id: str) -> int:
        """A trial number for a new session of ``task_id`` (``--task``): one more than the trials of it the
        folder's rollouts hold, so sessions of one task never share a unit key."""
        trials = [-1]
        for line in _read_whole_lines(self.rollouts).splitlines():
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                row = json.loads(line)
                if row.get("task_id") == task_id:
                    trials.append(int(row.get("trial", 0)))
        with self._cond:
            taken = [key[2] for key in (*self._written, *self._pending) if key[1] == task_id]
            self._trials[task_id] = max([*trials, *taken, self._trials.get(task_id, -1)]) + 1
            return self._trials[task_id]

    def update(self, snapshot: Snapshot) -> None:
        """Have the session's lines rewritten (soon, on the writer thread)."""
        with self._cond:
            self._pending[snapshot.key] = snapshot
            self._cond.notify()

    def add_tools(self, tools: list[JsonObject]) -> None:
        """Tools a server listed; ``tools.json`` holds every tool seen, by name (the latest definition)."""
        with self._cond:
            for tool in tools:
                self._tools[str(tool.get("name"))] = tool
            self._tools_dirty = True
            self._cond.notify()

    def close(self) -> None:
        """Write everything pending, then stop (waits at most :data:`CLOSE_WAIT_S`)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(CLOSE_WAIT_S)

    def _run(self) -> None:
        pause = 0.0
        while True:
            with self._cond:
                # Paced: after a write that took t seconds the next one waits PACE * t (a long session's lines
                # cost more to rewrite; the writer keeps a bounded share of the CPU the proxy runs on), unless
                # the recorder is closing.
                if pause:
                    self._cond.wait_for(lambda: self._closed, timeout=pause)
                while not self._pending and not self._tools_dirty and not self._closed:
                    self._cond.wait()
                batch, self._pending = self._pending, {}
                tools = dict(self._tools) if self._tools_dirty else None
                self._tools_dirty = False
                closing = self._closed
            started = time.perf_counter()
            try:
                if batch:
                    self._write_sessions(list(batch.values()))
                if tools is not None:
                    self._write_tools(tools)
            except OSError as exc:  # a full disk must not take the proxy down: say so once, keep serving
                self._warn(f"cannot write the record in {self.folder}: {exc.strerror or exc}")
            pause = min(PACE * (time.perf_counter() - started), MAX_PAUSE_S)
            if closing:
                with self._cond:
                    if not self._pending and not self._tools_dirty:
                        return

    def _write_sessions(self, snapshots: list[Snapshot]) -> None:
        made = {s.key: tuple(self._scrub(line) for line in s.lines()) for s in snapshots}
        with self._locked():
            for index, path in enumerate((self.rollouts, self.records)):
                text = _read_whole_lines(path)
                for key, lines in made.items():
                    old = self._written.get(key)
                    new = lines[index] + "\n"
                    if old is not None and old[index] + "\n" in text:
                        text = text.replace(old[index] + "\n", new, 1)
                    else:
                        text += new
                _replace(path, text)
        self._written.update({key: (lines[0], lines[1]) for key, lines in made.items()})

    def _write_tools(self, tools: dict[str, JsonObject]) -> None:
        with self._locked():
            merged: dict[str, JsonObject] = {}
            with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
                earlier = json.loads(self.tools_path.read_text(encoding="utf-8"))["tools"]
                merged = {str(t["name"]): t for t in earlier if isinstance(t, dict) and "name" in t}
            merged.update(tools)
            text = json.dumps({"tools": list(merged.values())}, indent=1, ensure_ascii=False)
            _replace(self.tools_path, self._scrub(text) + "\n")

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MARK)
        return redact_text(text)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with (self.folder / ".guard.lock").open("a") as handle:
            deadline = time.monotonic() + LOCK_WAIT_S
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        self._warn(f"another process holds {handle.name}; writing without it")
                        break
                    time.sleep(0.01)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            print(f"prefix-exec guard: warning: {message}", file=sys.stderr, flush=True)


def _read_whole_lines(path: Path) -> str:
    """The file's text up to its last newline (a torn last line, from a machine crash, is dropped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    return text[: text.rfind("\n") + 1]


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: a temporary file beside it, fsynced, renamed over it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
