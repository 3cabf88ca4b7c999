"""The folder a report (or the demo) writes into, and the manifest that proves which files it wrote.

``files.json`` in the folder lists every file the last run wrote there, each as ``{"name", "bytes",
"sha256"}``. A file counts as ours only while it is a regular file whose size and SHA-256 still match its entry:
a name merely listed (a hand-edited manifest) proves nothing, and a ``files.json`` that is not a non-empty list
of such entries (one an older prefix-exec wrote as plain names, or the user's own) is no manifest but a file
like any other. Claiming a folder:

- a new or empty folder is taken as it is;
- a folder holding only files its manifest proves ours is ours: those files are removed first, so no stale
  figure or table of the earlier run survives;
- any other non-empty folder was not written by us and is refused (an :class:`InputError`, nothing is
  touched) unless ``overwrite`` is set; then the files proven ours are removed, the files this run writes
  replace what has their names, and every other file is left alone;
- a folder holding one of the command's inputs (the input itself, a symlink to it or a hard link of it) is
  refused, ``overwrite`` or not: its files are replaced and removed by name (:mod:`prefix_exec.records.outputs`).

Every file is written beside its name and renamed over it (:func:`prefix_exec.records.outputs.write_new`), so a
symlink or FIFO left at one of our names is replaced, never written through.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from prefix_exec.errors import InputError
from prefix_exec.records.outputs import Inputs, kind_of, write_new

MANIFEST = "files.json"
#: Largest manifest read, bytes (a report lists tens of files; anything larger is not ours).
MAX_MANIFEST_BYTES = 1 << 20


def _digest(path: Path, size: int) -> str | None:
    """SHA-256 of the regular file ``path`` when it has ``size`` bytes (not a symlink); else ``None``."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size != size:
            return None
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def _entries(folder: Path) -> list[tuple[str, int, str]] | None:
    """``(name, bytes, sha256)`` entries of the folder's manifest, or ``None`` when there is no manifest of ours:
    none, an unreadable one, or a ``files.json`` that is not a non-empty list of such entries. A user's own
    ``files.json`` (a list of names, or of other objects) is then one of their files, never replaced unasked."""
    manifest = folder / MANIFEST
    try:
        info = os.lstat(manifest)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_MANIFEST_BYTES:
            return None
        listed = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(listed, list) or not listed:
        return None
    entries = [_entry(item) for item in listed]
    return None if None in entries else [e for e in entries if e is not None]


def _entry(item: object) -> tuple[str, int, str] | None:
    """One manifest entry ``{"name", "bytes", "sha256"}``, or ``None`` when ``item`` is anything else (a plain
    name, as an older prefix-exec wrote, included)."""
    if not isinstance(item, dict) or set(item) != {"name", "bytes", "sha256"}:
        return None
    name, size, sha = item["name"], item["bytes"], item["sha256"]
    plain = isinstance(name, str) and name == Path(name).name and name not in ("", ".", "..", MANIFEST)
    if not plain or not isinstance(size, int) or isinstance(size, bool) or not isinstance(sha, str):
        return None
    return name, size, sha


def proven(folder: Path) -> tuple[set[str], bool]:
    """Names of the files in ``folder`` its manifest proves ours (size and SHA-256 match), and whether it has a
    readable manifest at all."""
    entries = _entries(folder)
    if entries is None:
        return set(), False
    return {name for name, size, sha in entries if _digest(folder / name, size) == sha}, True


class OutputFolder:
    """A claimed output folder: write each file with :meth:`write_text` (or write it beside and :meth:`add` its
    name), then :meth:`finish` writes the manifest."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.files: list[Path] = []

    @classmethod
    def claim(
        cls,
        out: str | Path,
        *,
        overwrite: bool = False,
        inputs: Iterable[str | Path] = (),
        option: str = "--out",
    ) -> OutputFolder:
        """Check and prepare ``out`` (rules in the module docstring); ``inputs``: the files the command reads.
        Raises before changing anything."""
        path = Path(out)
        try:
            mode = path.stat().st_mode
        except OSError:
            mode = None
        if mode is not None and not stat.S_ISDIR(mode):
            raise InputError(
                f"{option} must be a folder, and this is an existing {kind_of(mode).removeprefix('a ')}",
                path=path,
                hint=f"pass a new or existing folder as {option}",
            )
        ours: set[str] = set()
        if mode is not None:
            _clash_with_inputs_inside(path, Inputs.of(inputs), option)
            ours, has_manifest = proven(path)
            present = {p.name for p in path.iterdir()}
            foreign = sorted(present - ours - ({MANIFEST} if has_manifest else set()))
            if foreign and not overwrite:
                shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
                raise InputError(
                    f"{option} is not empty and was not written by prefix-exec (it holds {shown})",
                    path=path,
                    hint="pass a new or empty folder, or add --overwrite to write into it (files an earlier "
                    "report wrote and its files.json proves by content are removed, files with the names this "
                    "run writes are replaced, other files are kept)",
                )
        try:
            path.mkdir(parents=True, exist_ok=True)
            for name in sorted(ours):
                (path / name).unlink()
        except OSError as exc:
            raise InputError(f"cannot prepare the {option} folder: {exc.strerror or exc}", path=path) from None
        return cls(path)

    def add(self, name: str) -> Path:
        """The path of ``name`` in the folder, recorded as written (for a file written there by other code)."""
        target = self.path / name
        if target not in self.files:
            self.files.append(target)
        return target

    def write_text(self, name: str, text: str) -> Path:
        """Write ``text`` (UTF-8, unencodable characters as backslash escapes) as ``name`` and record it."""
        target = self.add(name)
        write_new(target, text.encode("utf-8", errors="backslashreplace"))
        return target

    def finish(self) -> Path:
        """Write ``files.json``: every added file with its size and SHA-256, in the order added."""
        entries = []
        for path in [p for p in self.files if p.name != MANIFEST]:
            data = path.read_bytes()
            entries.append({"name": path.name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
        manifest = self.add(MANIFEST)  # last in ``files``, never in its own list
        write_new(manifest, (json.dumps(entries, indent=1) + "\n").encode("utf-8"))
        return manifest


def _clash_with_inputs_inside(folder: Path, inputs: Inputs, option: str) -> None:
    found = inputs.inside(folder)
    if found:
        entry, given = found[0]
        same = "" if os.path.abspath(entry) == os.path.abspath(given) else f" (as {entry.name})"
        raise InputError(
            f"{option} holds an input of this command, {given}{same}; its files are replaced and removed by name",
            path=folder,
            hint=f"choose a new folder as {option}, or move the input out of it",
        )
