"""The folder a report (or the demo) writes into, and the manifest that says which files it wrote.

``files.json`` in the folder lists, as plain names, every file the last run wrote there. Claiming a folder:

- a new or empty folder is taken as it is;
- a folder holding only what an earlier run listed in its ``files.json`` is ours: those files are removed
  first, so no stale figure or table of the earlier run survives;
- any other non-empty folder was not written by us and is refused (an :class:`InputError`, nothing is
  touched) unless ``overwrite`` is set; then the files an earlier run listed are removed and every other
  file is left alone.

A manifest is untrusted input: only names of regular files directly inside the folder are ever removed.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefix_exec.errors import InputError

MANIFEST = "files.json"


def _listed(folder: Path) -> list[str] | None:
    """Names an earlier run listed, or ``None`` when there is no readable manifest."""
    try:
        names = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return [n for n in names if n and n == Path(n).name and n not in (".", "..")]


class OutputFolder:
    """A claimed output folder: ``add`` each written file, then ``finish`` writes the manifest."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.files: list[Path] = []

    @classmethod
    def claim(cls, out: str | Path, *, overwrite: bool = False, option: str = "--out") -> OutputFolder:
        """Check and prepare ``out`` (rules in the module docstring). Raises before changing anything."""
        path = Path(out)
        if path.exists() and not path.is_dir():
            raise InputError(
                f"{option} must be a folder, and this is an existing file",
                path=path,
                hint=f"pass a new or existing folder as {option}",
            )
        listed = _listed(path) if path.is_dir() else None
        if path.is_dir():
            present = {p.name for p in path.iterdir()}
            ours = set(listed or ()) | ({MANIFEST} if listed is not None else set())
            foreign = sorted(present - ours)
            if foreign and not overwrite:
                shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
                raise InputError(
                    f"{option} is not empty and was not written by prefix-exec (it holds {shown})",
                    path=path,
                    hint="pass a new or empty folder, or add --overwrite to write into it "
                    "(files an earlier report listed in files.json are replaced, "
                    "other files are kept)",
                )
        try:
            path.mkdir(parents=True, exist_ok=True)
            for name in listed or ():
                target = path / name
                if target.is_symlink() or target.is_file():  # a link is removed, never followed
                    target.unlink()
        except OSError as exc:
            raise InputError(f"cannot prepare the {option} folder: {exc.strerror or exc}", path=path) from None
        return cls(path)

    def add(self, name: str) -> Path:
        """The path of ``name`` in the folder, recorded as written."""
        target = self.path / name
        if target not in self.files:
            self.files.append(target)
        return target

    def finish(self) -> Path:
        """Write ``files.json`` listing every added file (itself included last)."""
        manifest = self.add(MANIFEST)
        manifest.write_text(json.dumps([p.name for p in self.files], indent=1), encoding="utf-8")
        return manifest
