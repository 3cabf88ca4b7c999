"""Where a command may write: the one rule every command that writes a file follows.

- **An output is never an input.** A path that is, or resolves to, a file the command reads (the same path,
  a symlink to it, a hard link: the same device and inode) is a clash: an input error before anything is
  written, naming both paths, whatever ``--overwrite`` says. For a folder output (``report``, ``demo``), an
  input directly inside the folder is a clash too: the folder's files are replaced or removed by name.
- **Only regular files are written.** An existing output that is a folder, a FIFO, a device or a socket is
  refused without being opened (``lstat``/``stat`` first, so a FIFO never blocks the command).
- **Text is written whole, beside the target, then renamed over it** (:func:`write_text`): a reader never
  sees half a file, and another name of the same file (a hard link) keeps the text it had.

Every check raises :class:`~prefix_exec.errors.InputError` (the CLI's exit 2), never changing anything first.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from prefix_exec.errors import InputError

#: File kinds by ``stat`` mode test, for the message that refuses one.
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """``'a regular file'``, ``'a folder'``, ``'a FIFO'``, ... for a ``st_mode``."""
    return next((name for test, name in _KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode) else "special")


@dataclass(frozen=True)
class Inputs:
    """The files a command reads, as given and as (device, inode) pairs, to tell whether a path is one of them.

    Folders among them are kept as folders (a report's run directory): a path is one of them only if it is
    that folder. A path that does not exist is kept by its resolved name, should the command create it first.
    """

    paths: tuple[Path, ...]
    identities: tuple[tuple[int, int] | None, ...]

    @classmethod
    def of(cls, paths: Iterable[str | Path]) -> Inputs:
        given = tuple(Path(p) for p in paths)
        return cls(given, tuple(_identity(p) for p in given))

    def matching(self, path: Path) -> Path | None:
        """The input ``path`` is (same file after symlinks, or same device and inode), or ``None``."""
        found = _identity(path)
        resolved = os.path.realpath(path)
        for given, identity in zip(self.paths, self.identities, strict=True):
            if (found is not None and identity == found) or os.path.realpath(given) == resolved:
                return given
        return None

    def inside(self, folder: Path) -> list[tuple[Path, Path]]:
        """``(entry, input)`` for each file directly in ``folder`` that is an input: the input itself, a symlink
        to it or a hard link of it. Subfolders are passed over (a folder output replaces files only)."""
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return []
        found = []
        for entry in entries:
            given = None if entry.is_dir() else self.matching(entry)
            if given is not None:
                found.append((entry, given))
        return found


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino)


def input_clash(out: Path, given: Path, *, option: str) -> InputError:
    """The error for an output ``out`` that clashes with (is) the input ``given``."""
    return InputError(
        f"{option} is also an input of this command ({given}); writing it would destroy the input",
        path=out,
        hint=f"choose another {option}",
    )


def check_file(out: str | Path, inputs: Iterable[str | Path] | Inputs = (), *, option: str = "--out") -> Path:
    """Check that the file ``out`` may be written (module rules) and return the path to write: ``out`` with
    its symlinks resolved (a symlink output writes its target, as ``open`` would). Nothing is opened."""
    path = Path(out)
    known = inputs if isinstance(inputs, Inputs) else Inputs.of(inputs)
    given = known.matching(path)
    if given is not None:
        raise input_clash(path, given, option=option)
    target = Path(os.path.realpath(path))
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise InputError(f"cannot check {option}: {exc.strerror or exc}", path=path) from None
    if not stat.S_ISREG(mode):
        raise InputError(
            f"{option} is {kind_of(mode)}, not a regular file; refusing to write it",
            path=path,
            hint=f"pass a file path as {option}",
        )
    return target


def write_text(
    out: str | Path, text: str, inputs: Iterable[str | Path] | Inputs = (), *, option: str = "--out"
) -> Path:
    """Write ``text`` (UTF-8; what UTF-8 cannot encode as backslash escapes) to the file ``out`` after
    :func:`check_file`: into a new file beside the target, fsynced, then renamed over it. Parent folders are
    created. Returns the path written (``out`` resolved)."""
    target = check_file(out, inputs, option=option)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the folder of {option}: {exc.strerror or exc}", path=Path(out)) from None
    write_new(target, text.encode("utf-8", errors="backslashreplace"))
    return target


def write_new(target: Path, data: bytes) -> None:
    """Write ``data`` into a file created beside ``target`` (``O_EXCL | O_NOFOLLOW``: never through a link),
    fsync it, then rename it over ``target``. A failure, or an interrupt, removes the new file and leaves the
    target as it was."""
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        descriptor = os.open(temporary, flags, 0o666)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=target) from None
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException as exc:  # Ctrl-C too: a report folder left holding our temporary would be refused
        temporary.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InputError(f"cannot write: {exc.strerror or exc}", path=target) from None
        raise
