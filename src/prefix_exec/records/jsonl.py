"""JSON Lines files: reading with clear errors, crash-safe appends, and the keys a resumed run skips.

Writers append one line per row and flush and fsync it, so a killed run keeps every line it finished;
:func:`completed_keys` lets a resumed run skip them, and a torn last line from a crash is ignored and cut.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping, dumps, loads
from prefix_exec.trajectory import UnitKey

#: Largest JSONL line read, in bytes (and largest JSON document: spec files, inspect log members, in characters
#: or bytes). A rollout or record is kilobytes; a longer line is an input error (one bad line, not a
#: MemoryError), whatever the file holds.
MAX_LINE_CHARS = 64 * 1024 * 1024


def json_problem(exc: json.JSONDecodeError) -> str:
    """``<problem> at column N``. json's own message for some problems already ends in "at" ("Invalid control
    character at"); it is not doubled."""
    return f"{exc.msg.removesuffix(' at')} at column {exc.colno}"


def ends_early(exc: json.JSONDecodeError) -> bool:
    """The text stops before its JSON is complete (a string or object left open), rather than holding a wrong
    character somewhere: a line cut off, not a line mistyped."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(exc.doc.rstrip())


def check_regular_file(path: Path) -> None:
    """Refuse anything but a regular file (after following symlinks): a device, a FIFO or a socket would
    read forever or block. Raises :class:`InputError`."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError("no such file", path=path, hint="check the path") from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None
    if stat.S_ISDIR(mode):
        raise InputError("is a directory, expected a file", path=path)
    if not stat.S_ISREG(mode):
        raise InputError(
            "is not a regular file (a device, FIFO or socket); refusing to read it",
            path=path,
            hint="pass a regular file",
        )


def iter_json_lines(path: str | Path, *, tolerant: bool = False) -> Iterator[tuple[int, Any]]:
    """``(line_number, parsed_json)`` for every non-blank line.

    A line that is not JSON (or not UTF-8, or over :data:`MAX_LINE_CHARS`) raises :class:`InputError`; with
    ``tolerant`` it is yielded as ``(line_number, InputError)`` instead, so the caller can report it and read on.
    """
    for number, text in numbered_lines(path):
        try:
            if isinstance(text, InputError):
                raise text
            if not text.strip():
                continue
            yield number, loads(text)
        except InputError as bad:
            if not tolerant:
                raise
            yield number, bad
        except ValueError as exc:
            if not isinstance(exc, json.JSONDecodeError):
                message = f"not usable JSON ({exc})"
            elif ends_early(exc):
                # The column json names (where the unfinished string or object began) is not where the line
                # went wrong: it stops early. Without a final newline, it is likely the file that stops.
                torn = " (the file may be truncated)" if isinstance(text, str) and not text.endswith("\n") else ""
                message = f"the line is cut off: its JSON stops before the object is complete{torn}"
            else:
                message = f"not valid JSON ({json_problem(exc)})"
            error = InputError(
                message,
                path=Path(path),
                line=number,
                hint="each line must be one complete JSON object (JSON Lines)",
            )
            if not tolerant:
                raise error from None
            yield number, error


def numbered_lines(path: str | Path) -> Iterator[tuple[int, str | InputError]]:
    """``(line_number, line)`` for each line of a regular UTF-8 text file, numbered from 1, blank ones
    included. A line that is not UTF-8, or longer than :data:`MAX_LINE_CHARS` bytes, comes as the
    :class:`InputError` naming it, and the lines after it are read on (one bad line never loses the others).
    Not a regular file: an :class:`InputError` raised for the whole file."""
    p = Path(path)
    check_regular_file(p)
    with p.open("rb") as fh:
        yield from enumerate(utf8_lines(fh, p), start=1)


def utf8_lines(fh: IO[bytes], path: Path) -> Iterator[str | InputError]:
    """The lines of a file opened in binary, each decoded as UTF-8 on its own: a line that does not decode,
    or one over :data:`MAX_LINE_CHARS` bytes (read in bounded pieces and skipped), is its :class:`InputError`.
    A UTF-8 byte-order mark opening the file is dropped."""
    number = 0
    while True:
        # readline with a cap: a file of one endless line (no newline) is read in bounded pieces.
        raw = fh.readline(MAX_LINE_CHARS + 1)
        if not raw:
            return
        number += 1
        if number == 1 and raw.startswith(codecs.BOM_UTF8):  # RFC 8259 lets a reader ignore it; Windows writes it
            raw = raw[len(codecs.BOM_UTF8) :]
        if len(raw) > MAX_LINE_CHARS:
            while not raw.endswith(b"\n"):  # skip the rest of the over-long line, it is reported by length
                raw = fh.readline(MAX_LINE_CHARS)
                if not raw:
                    break
            yield InputError(f"line longer than {MAX_LINE_CHARS:,} bytes", path=path, line=number)
            continue
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield InputError(
                f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line)",
                path=path,
                line=number,
                hint="is this a binary file? JSONL files are UTF-8 text",
            )


class JsonlWriter:
    """Append-only JSONL that survives a kill: every line is flushed and fsynced as it is written.

    Opened with ``append=True`` it first cuts a torn trailing line (no final newline) left by a crash, so
    the file stays valid JSONL.
    """

    def __init__(self, path: str | Path, *, append: bool) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if append:
            _truncate_torn_tail(self.path)
        self._fh: IO[str] = self.path.open("a" if append else "w", encoding="utf-8")

    def write(self, row: JsonMapping, *, sync: bool = True) -> int:
        """Append ``row``, flushed to the kernel (a kill of this process keeps it) and, with ``sync``, fsynced
        (a crash of the machine keeps it too); rows written with ``sync=False`` are fsynced by :meth:`sync`."""
        return self.write_line(dumps(row), sync=sync)

    def write_line(self, line: str, *, sync: bool = True) -> int:
        """Append ``line`` (one JSON value encoded by :func:`dumps`, without its newline) as :meth:`write` does."""
        self._fh.write(line + "\n")
        self._fh.flush()
        if sync:
            os.fsync(self._fh.fileno())
        return 1

    def sync(self) -> None:
        """fsync every row written so far (one fsync for a group of rows written with ``sync=False``)."""
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
        self._fh.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _truncate_torn_tail(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as fh:
        data = fh.read()
        if data.endswith(b"\n"):
            return
        fh.truncate(data.rfind(b"\n") + 1)


def unit_key(row: JsonMapping) -> UnitKey:
    """The unit key of a JSON row (a rollout, a record, a failure); ``trial`` defaults to 0.

    Raises ``KeyError``, ``TypeError`` or ``ValueError`` when a field is missing or not of its kind.
    """
    return (str(row["dataset"]), str(row["task_id"]), str(row["model"]), str(row["method"]), int(row.get("trial", 0)))


def latest_by_unit(path: str | Path) -> dict[UnitKey, str]:
    """Each unit's last line in ``path`` (newline-terminated), in the order units last appear; lines that are
    not JSON rows with a unit key are passed over, as are lines no reader takes (not UTF-8, over
    :data:`MAX_LINE_CHARS`, nested past :data:`~prefix_exec.json_types.MAX_DEPTH`, integers past 4,300 digits).
    An absent file has none; anything but a regular file is an :class:`InputError`, never opened."""
    p = Path(path)
    latest: dict[UnitKey, str] = {}
    if not p.exists():
        return latest
    for _, line in numbered_lines(p):
        if isinstance(line, InputError):
            continue
        try:
            key = unit_key(loads(line))
        except (KeyError, TypeError, ValueError, AttributeError):  # JSONDecodeError is a ValueError
            continue
        latest.pop(key, None)
        latest[key] = line if line.endswith("\n") else line + "\n"
    return latest


def completed_keys(path: str | Path, *, kind: str | None = None) -> set[UnitKey]:
    """Unit keys ``(dataset, task_id, model, method, trial)`` already written to ``path`` (for ``--resume``).

    A torn last line from a crash is not counted: it will be cut and redone. With ``kind`` (``"record"``),
    a row of another kind (a rollouts file given as the output) is an :class:`InputError`, since counting
    its rows as done would skip every unit.
    """
    p = Path(path)
    if not p.exists():
        return set()
    keys: set[UnitKey] = set()
    for number, text in numbered_lines(p):
        if isinstance(text, InputError):
            raise InputError(f"cannot resume: {text.message}", path=p, line=number, hint="pass a fresh --out file")
        if not text.endswith("\n"):
            break
        try:
            row = loads(text)
            found = row.get("kind", kind) if kind is not None else kind
            keys.add(unit_key(row))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise InputError(
                "cannot resume: this line is not a record", path=p, line=number, hint="pass a fresh --out file"
            ) from None
        if found != kind:
            raise InputError(
                f"cannot resume: this line is a {found} row, not a {kind}",
                path=p,
                line=number,
                hint="--out must be the records file of an earlier run (is this an input file?)",
            )
    return keys


def expand_inputs(
    paths: Iterable[str | Path],
    find: Callable[[Path], Iterable[Path]],
    *,
    none_found: str,
    hint: str | None = None,
) -> list[Path]:
    """Input files: a file as given, a folder as the sorted files ``find`` picks in it.

    A folder where ``find`` picks nothing, or a path that does not exist, is an :class:`InputError`.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(find(path))
            if not found:
                raise InputError(none_found, path=path, hint=hint)
            files += found
        elif path.exists():
            files.append(path)
        else:
            raise InputError("no such file or folder", path=path)
    return files
