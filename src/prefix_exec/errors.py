"""Errors for broken input: they name the file, line and field, and say what to do.

The CLI turns an :class:`InputError` into a one-paragraph message and exit code 2, never a traceback. A
:class:`ReplayError` is a rollout replay cannot score at all; ``score`` commands report it as a skipped unit.
"""

from __future__ import annotations

from pathlib import Path


class ReplayError(Exception):
    """A rollout that cannot be scored at all (unknown task, missing final success)."""


class InputError(Exception):
    """Input the user can fix: a malformed file, a missing field, an unknown name."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.hint = hint
        super().__init__(self.describe())

    def detail(self) -> str:
        """The field and message, without the location: ``field 'x': expected int``."""
        return (f"field '{self.field}': " if self.field else "") + self.message

    def describe(self) -> str:
        """Location, field, message and hint, as the CLI prints it."""
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.line}" if self.line is not None else "") + ": "
        text = where + self.detail()
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text
