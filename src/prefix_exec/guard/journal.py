"""The guard's journal, ``--record DIR``: the files a guarded connection leaves for scoring, kept current call by
call (the option keeps its name; in code the folder and its writer are the journal, and a "record" is only a
scored line of ``records.jsonl``).

- ``DIR/rollouts.jsonl``: one canonical rollout per MCP connection (``score custom`` reads it);
- ``DIR/records.jsonl``: one scored record per connection, the guard's own verdicts (``metrics``, ``report``);
- ``DIR/tools.json``: the tools the server listed, as an MCP ``tools/list`` result (``score custom --tools``).

Each settled call rewrites the connection's line in both files before its answer is passed on to the client
(:meth:`Journal.update`, called by the pump): a temporary file beside the file, renamed over it, so the files
are whole at every moment. The guarantee: every call whose answer (or block) the client has received is in
both files, so a kill of the guard, SIGKILL included, loses only the calls in flight (received, not yet
answered). A write that reached the kernel survives the death of the process; only a power loss or an
operating-system crash needs ``fsync``, which a thread of its own does after the writes, paced (after an fsync
of t seconds it waits 3t, at least 0.5 s), and :meth:`Journal.close` does at the end. So a machine crash can
lose the calls of the last pause; a process crash loses nothing answered.

A write costs O(the file): the connection's lines are rebuilt from each call's JSON text, made once
(:class:`~prefix_exec.guard.log.ConnectionLog`), and the file is read again only when another writer changed it
since (its inode, size and modification time say so). Lines of other connections (earlier runs, or another guard
recording into the same folder at the same time) are kept: the writer holds ``DIR/.guard.lock`` while it
reads, changes and renames a file.

Secrets never reach these files: every line and ``tools.json`` lose URL credentials
(:func:`prefix_exec.records.redaction.redact_text`) and every occurrence of the given secret values (the server's
secret-looking environment variables and command-line values; :func:`prefix_exec.records.redaction.secret_values`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from prefix_exec.guard.log import Snapshot
from prefix_exec.json_types import JsonObject
from prefix_exec.records.redaction import MARK, redact_text

#: Longest wait for another guard's hold on the folder's lock before writing anyway, in seconds.
LOCK_WAIT_S = 5.0
#: After an fsync that took t seconds, the syncer waits PACE * t before the next, and at least SYNC_PAUSE_S
#: (an fsync starts the writeback of what a call's write then has to wait for).
PACE = 3.0
SYNC_PAUSE_S = 0.5
#: Longest wait at close for the syncer's fsync in progress, in seconds.
CLOSE_WAIT_S = 30.0

#: The files a ``--record`` folder holds.
RECORDED = ("rollouts.jsonl", "records.jsonl", "tools.json")
#: What identifies a file's content as we last wrote it: (inode, size, modification time in ns).
_Stamp = tuple[int, int, int]


class Journal:
    """The writer of one journal, a ``--record`` folder. :meth:`update` and :meth:`add_tools` write at once (from any
    thread: a lock orders them); :meth:`close` fsyncs and stops the syncer thread."""

    def __init__(self, folder: Path, *, secrets: Iterable[str] = ()) -> None:
        self.folder = folder  # made at the first write: a guard that never served a call leaves nothing behind
        self.rollouts, self.records, self.tools_path = (folder / name for name in RECORDED)
        texts = {s for s in secrets if len(s) >= 4}
        texts |= {json.dumps(s)[1:-1] for s in texts}  # as a JSON string holds it (quotes, backslashes escaped)
        self._secrets = sorted(texts, key=len, reverse=True)
        self._written: dict[tuple[str, str, int], tuple[str, str]] = {}
        self._known: dict[Path, tuple[_Stamp, str]] = {}  # each file's text as we last wrote it, and its stamp
        self._at: dict[tuple[Path, tuple[str, str, int]], int] = {}  # where a connection's line was, by file
        self._clean: dict[tuple[str, str, int], tuple[list[str], list[str], list[str]]] = {}  # scrubbed texts
        self._spares: set[Path] = set()  # the files' previous texts, removed at close
        self._tools: dict[str, JsonObject] = {}
        self._trials: dict[str, int] = {}
        self._lock = threading.Lock()
        self._unsynced = False
        self._closed = False
        self._warned = False
        self._cond = threading.Condition()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._sync_loop, name="prefix-exec-guard-fsync", daemon=True)
        self._thread.start()

    def trial_for(self, task_id: str) -> int:
        """A trial number for a new connection of ``task_id`` (``--task``): one more than the trials of it the
        folder's rollouts hold, so connections of one task never share a unit key."""
        trials = [-1]
        for line in _read_whole_lines(self.rollouts).splitlines():
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                row = json.loads(line)
                if row.get("task_id") == task_id:
                    trials.append(int(row.get("trial", 0)))
        with self._lock:
            taken = [key[2] for key in self._written if key[1] == task_id]
            self._trials[task_id] = max([*trials, *taken, self._trials.get(task_id, -1)]) + 1
            return self._trials[task_id]

    def update(self, snapshot: Snapshot) -> None:
        """Rewrite the connection's lines in both files now (returns once the kernel has them; no fsync)."""
        with self._lock:
            clean = self._clean.setdefault(snapshot.key, ([], [], []))
            for done, texts in zip(clean, (snapshot.actions, snapshot.verdicts, snapshot.calls), strict=True):
                done.extend(self._scrub(text) for text in texts[len(done) :])  # each call's texts once
            lines = replace(snapshot, actions=tuple(clean[0]), verdicts=tuple(clean[1]), calls=tuple(clean[2]))
            self._write(lambda: self._write_connection(snapshot.key, lines.lines(self._scrub)))

    def add_tools(self, tools: list[JsonObject]) -> None:
        """Tools a server listed; ``tools.json`` holds every tool seen, by name (the latest definition)."""
        with self._lock:
            for tool in tools:
                self._tools[str(tool.get("name"))] = tool
            self._write(lambda: self._write_tools(dict(self._tools)))

    def close(self) -> None:
        """Stop the syncer and fsync what was written (waits at most :data:`CLOSE_WAIT_S` for an fsync)."""
        with self._cond:
            self._closed = True
            self._closing.set()
            self._cond.notify()
        self._thread.join(CLOSE_WAIT_S)
        self._sync()
        with self._lock:
            for spare in self._spares:
                with contextlib.suppress(OSError):
                    spare.unlink(missing_ok=True)
            self._spares.clear()

    def _write(self, write: Callable[[], None]) -> None:
        try:
            write()
        except OSError as exc:  # a full disk must not take the proxy down: say so once, keep serving
            self._warn(f"cannot write the record in {self.folder}: {exc.strerror or exc}")
            return
        with self._cond:
            if not self._unsynced:  # wake the syncer once per fsync, not once per call (each wake costs the GIL)
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
            # Paced: a busy disk's fsyncs take a bounded share of the time. Only close() ends the pause.
            self._closing.wait(max(PACE * (time.perf_counter() - started), SYNC_PAUSE_S))

    def _sync(self) -> None:
        """fsync the three files as they are now, and the folder (which holds their renames)."""
        for path in (self.rollouts, self.records, self.tools_path, self.folder):
            try:
                descriptor = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # not written yet (or no call ever came)
            except OSError as exc:
                self._warn(f"cannot fsync the record in {self.folder}: {exc.strerror or exc}")
                continue
            try:
                os.fsync(descriptor)
            except OSError as exc:
                self._warn(f"cannot fsync the record in {self.folder}: {exc.strerror or exc}")
            finally:
                os.close(descriptor)

    def _write_connection(self, key: tuple[str, str, int], lines: tuple[str, str]) -> None:
        with self._locked():
            for index, path in enumerate((self.rollouts, self.records)):
                text = self._current(path)
                old = self._written[key][index] + "\n" if key in self._written else None
                new = lines[index] + "\n"
                at = self._at.get((path, key), -1)
                if old is not None and not text.startswith(old, at):
                    at = text.find(old)  # another connection's line before it changed (or another writer)
                if old is not None and at >= 0:
                    text = text[:at] + new + text[at + len(old) :]
                else:
                    at, text = len(text), text + new
                self._at[(path, key)] = at
                self._replace(path, text)
        self._written[key] = lines

    def _write_tools(self, tools: dict[str, JsonObject]) -> None:
        with self._locked():
            merged: dict[str, JsonObject] = {}
            with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
                earlier = json.loads(self.tools_path.read_text(encoding="utf-8"))["tools"]
                merged = {str(t["name"]): t for t in earlier if isinstance(t, dict) and "name" in t}
            merged.update(tools)
            text = json.dumps({"tools": list(merged.values())}, indent=1, ensure_ascii=False)
            self._replace(self.tools_path, self._scrub(text) + "\n")

    def _current(self, path: Path) -> str:
        """The file's whole lines: as we last wrote it when nobody replaced or changed it since, else read."""
        known = self._known.get(path)
        if known is not None and known[0] == _stamp(path):
            return known[1]
        return _read_whole_lines(path)

    def _replace(self, path: Path, text: str) -> None:
        """Write ``text`` to ``path`` whole or not at all: written into a spare file beside it, then swapped
        with it (no fsync: the kernel has it, and the syncer makes it durable). The spare is the file's
        previous text, overwritten in place (cheaper than a new file's pages) unless another process has it
        open (a reader that opened ``path`` before the last swap): then it is a new file, and the reader keeps
        the text it opened, whole."""
        spare = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        data = text.encode("utf-8")
        descriptor = _open_spare(spare)
        try:
            written = 0
            while written < len(data):
                written += os.pwrite(descriptor, memoryview(data)[written:], written)
            os.ftruncate(descriptor, len(data))
            found = os.fstat(descriptor)  # the file's stamp once it is ``path`` (a rename keeps both)
        finally:
            os.close(descriptor)
        if not _swap(spare, path):
            os.replace(spare, path)
        self._spares.add(spare)
        self._known[path] = ((found.st_ino, found.st_size, found.st_mtime_ns), text)

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
                    time.sleep(0.001)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            print(f"prefix-exec guard: warning: {message}", file=sys.stderr, flush=True)


def _open_spare(spare: Path) -> int:
    """A descriptor to write ``spare`` through: the file there when no other process has it open (a write
    lease says so, Linux), else a new file in its place."""
    try:  # O_NOFOLLOW: a link planted at the spare's name fails here and is removed, never written through
        descriptor = os.open(spare, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError:
        spare.unlink(missing_ok=True)
        return os.open(spare, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        # A lease broken (someone opening the spare in the instant it is held) signals SIGIO, whose default
        # ends the process: SIGURG's default is to ignore it.
        fcntl.fcntl(descriptor, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(descriptor, fcntl.F_SETLEASE, fcntl.F_WRLCK)  # refused while anyone else has it open
        fcntl.fcntl(descriptor, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        return descriptor
    except (OSError, AttributeError):  # open elsewhere, or no leases here: a new file
        os.close(descriptor)
    spare.unlink(missing_ok=True)
    return os.open(spare, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)


def _swap(new: Path, path: Path) -> bool:
    """Exchange two files' names atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False, changing nothing,
    where it is not available (another system, a filesystem without it, ``path`` not there yet).

    Why not ``os.replace``: on ext4 (its default ``auto_da_alloc``) a rename over an existing file starts the
    writeback of the new file at once, about 1 ms for a few hundred kB on this project's machine, per call; an
    exchange does not (0.3 ms), and it is as atomic: ``path`` names the old text or the new, whole."""
    global _renameat2
    if _renameat2 is False:
        return False
    if _renameat2 is None:
        function = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None) if sys.platform == "linux" else None
        if function is None:
            _renameat2 = False
            return False
        function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        _renameat2 = function
    if _renameat2(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(path), _RENAME_EXCHANGE) == 0:
        return True
    if ctypes.get_errno() in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # ENOENT: no ``path`` yet
        _renameat2 = False  # the kernel or the filesystem does not exchange: os.replace from now on
    return False


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2
_renameat2: Any = None  # libc's renameat2 once looked up, False when there is none


def _stamp(path: Path) -> _Stamp | None:
    try:
        found = path.stat()
    except FileNotFoundError:
        return None
    return (found.st_ino, found.st_size, found.st_mtime_ns)


def _read_whole_lines(path: Path) -> str:
    """The file's text up to its last newline (a torn last line, from a machine crash, is dropped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    return text[: text.rfind("\n") + 1]
