"""The ``--record`` folder, held as a directory handle so that nothing planted in it is followed.

Every file the guard writes is created relative to the folder's descriptor with ``O_NOFOLLOW | O_EXCL`` (a new
journal, a temporary file later renamed over its target), so a link, FIFO or device planted at one of our names is
never written through, read, or waited on; files read are opened ``O_NOFOLLOW | O_NONBLOCK`` and must be regular
(``fstat``), UTF-8 and under :data:`MAX_FILE_BYTES`. The folder itself is opened ``O_NOFOLLOW``: a link in place
of the folder is refused at start (the path's parents are the user's own choice and are followed).

Linux and macOS only (``dir_fd`` and ``O_NOFOLLOW``), as the guard is.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from prefix_exec.errors import InputError

#: Largest file the folder's reader accepts (a derived ``rollouts.jsonl`` of many connections stays far below).
MAX_FILE_BYTES = 4 * 1024 * 1024 * 1024
#: Longest wait for another guard's hold on the folder's lock, in seconds, before writing without it.
LOCK_WAIT_S = 10.0
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class RecordFolder:
    """A handle on the folder ``path`` (a link refused), opened now when it exists, else made and opened at the
    first use of :attr:`fd` (a guard that never served a call leaves nothing behind). :meth:`close` releases it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        if os.path.lexists(path):
            self._open()

    @property
    def exists(self) -> bool:
        return self._fd is not None or os.path.lexists(self.path)

    @property
    def fd(self) -> int:
        return self._fd if self._fd is not None else self._open()

    def _open(self) -> int:
        if not os.path.lexists(self.path):
            self.path.mkdir(parents=True, exist_ok=True)
        try:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise InputError(
                f"--record must be a folder of its own (not a link, not a file): {exc.strerror or exc}",
                path=self.path,
                hint="give --record a new or existing plain folder",
            ) from None
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def subfolder(self, name: str) -> int:
        """A descriptor for the folder's subfolder ``name`` (made when missing; a link there is refused)."""
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o755, dir_fd=self.fd)
        try:
            return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.fd)
        except OSError as exc:
            raise InputError(
                f"{name} in the record folder is not a plain folder: {exc.strerror or exc}",
                path=self.path / name,
                hint="remove what is there, or give --record another folder",
            ) from None

    def read_text(self, name: str, *, dir_fd: int | None = None) -> str | None:
        """The UTF-8 text of the regular file ``name`` (None when there is none). Anything else at that name
        (a link, a FIFO, a device, a folder), a file over :data:`MAX_FILE_BYTES` or one that is not UTF-8 raises
        :class:`InputError` naming it: the folder is the guard's alone."""
        where = self.fd if dir_fd is None else dir_fd
        try:
            fd = os.open(name, _READ, dir_fd=where)
        except FileNotFoundError:
            return None
        except OSError as exc:  # ELOOP: a link planted there
            raise self._refused(name, exc.strerror or str(exc)) from None
        try:
            found = os.fstat(fd)
            if not stat.S_ISREG(found.st_mode):
                raise self._refused(name, "not a regular file")
            if found.st_size > MAX_FILE_BYTES:
                raise self._refused(name, f"larger than {MAX_FILE_BYTES:,} bytes")
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._refused(name, f"not UTF-8 (byte {exc.start:,})") from None

    def check_regular(self, name: str) -> None:
        """Refuse anything but a regular file (or nothing) at ``name``, without opening it."""
        try:
            found = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(found.st_mode):
            raise self._refused(name, "not a regular file")

    def create(self, name: str, *, dir_fd: int | None = None) -> int:
        """A new file ``name``, opened for appending; it must not exist (``O_EXCL``, links never followed)."""
        where = self.fd if dir_fd is None else dir_fd
        return os.open(name, _CREATE | os.O_APPEND, 0o644, dir_fd=where)

    def replace(self, name: str, text: str) -> None:
        """Write ``text`` as the file ``name``, whole or not at all: a new temporary file (``O_EXCL``) renamed over
        the name (the rename replaces whatever is there, a planted link included, and never follows it)."""
        spare = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        fd = self.create(spare)
        try:
            data = text.encode("utf-8")
            view, written = memoryview(data), 0
            while written < len(data):
                written += os.write(fd, view[written:])
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(spare, dir_fd=self.fd)
            raise
        os.close(fd)
        os.replace(spare, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def fsync(self, fd: int | None = None) -> None:
        os.fsync(self.fd if fd is None else fd)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's lock (``.guard.lock``, created here, never through a link), waiting at most
        :data:`LOCK_WAIT_S`: derived files are read, merged and renamed by one guard at a time."""
        try:
            fd = os.open(".guard.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=self.fd)
        except OSError as exc:
            raise self._refused(".guard.lock", exc.strerror or str(exc)) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise self._refused(".guard.lock", "not a regular file")
            deadline = time.monotonic() + LOCK_WAIT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break  # a stuck holder must not stop this guard: the derived files are rebuildable
                    time.sleep(0.005)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _refused(self, name: str, why: str) -> InputError:
        return InputError(
            f"{name} in the record folder is refused: {why}",
            path=self.path / name,
            hint="the --record folder is the guard's alone; remove what is there, or give another folder",
        )
