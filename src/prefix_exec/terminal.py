"""What the CLI prints is safe on a terminal: text from input never carries a raw control character.

Names, ids, recorded errors and reasons from logs reach stderr and stdout in hundreds of messages and tables. A
value holding ``ESC ] 0 ; ... BEL`` retitles the user's window, ``ESC [ 2 J`` clears the screen, a carriage return
rewrites the line a warning is on: printed raw, input could hide or forge what the tool says. Rather than escape
at each message, the CLI (:func:`prefix_exec.cli.main`) writes through :class:`Escaping` streams for the length of
a command: every C0 control character but line feed and tab, DEL and every C1 control character is written as
its JSON escape (``\\u001b``, ``\\r``), which names it and changes nothing else. The one writer that draws with
control characters on purpose, the run's progress bar, writes to :func:`unescaped` of its stream.

JSON the CLI prints is unchanged in meaning: JSON text holds no raw C0 character, and a C1 character inside a
string, written as its ``\\uXXXX`` escape, decodes to the same string.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO, cast

#: The characters :class:`Escaping` writes as escapes: C0 but ``\n`` and ``\t``, DEL, C1.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escaped(text: str) -> str:
    """``text`` with each :data:`CONTROL` character as its JSON escape (``"\\x1b"`` -> ``"\\\\u001b"``)."""
    return CONTROL.sub(lambda found: json.dumps(found.group())[1:-1], text)


class Escaping:
    """A text stream writing to ``stream`` with :func:`escaped` text; everything else (``flush``, ``isatty``,
    ``fileno``, ``buffer``, ``encoding``) is ``stream``'s."""

    def __init__(self, stream: TextIO) -> None:
        self.unescaped = stream

    def write(self, text: str) -> int:
        self.unescaped.write(escaped(text))
        return len(text)  # what the caller gave, as TextIO.write counts it

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unescaped, name)


def unescaped(stream: TextIO) -> TextIO:
    """The stream under ``stream`` when it is :class:`Escaping`, else ``stream``: for a writer of our own that
    draws with control characters (a progress bar), and never writes input's text."""
    return cast(TextIO, getattr(stream, "unescaped", stream)) if isinstance(stream, Escaping) else stream


def draws_bars(stream: TextIO) -> bool:
    """Whether a progress bar can be drawn on ``stream``: a terminal with a known, non-zero width (tqdm draws
    nothing on one of unknown width; a file, a pipe or CI's log gets plain lines, or nothing)."""
    try:
        return stream.isatty() and os.get_terminal_size(stream.fileno()).columns > 0
    except (AttributeError, ValueError, OSError):
        return False


@contextlib.contextmanager
def escaping_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`Escaping` streams for the block (not wrapped twice), then as
    they were."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, Escaping):
        sys.stdout = cast(TextIO, Escaping(sys.stdout))
    if not isinstance(sys.stderr, Escaping):
        sys.stderr = cast(TextIO, Escaping(sys.stderr))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
