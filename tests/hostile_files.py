"""Case files for the hostile-input tests: text, or a stand-in for a special file the test makes instead."""

from __future__ import annotations

import os
from pathlib import Path

#: File contents that stand for a FIFO and a symlink to /dev/zero.
FIFO, ZERO = "\u0000FIFO", "\u0000ZERO"


def write_case_file(path: Path, text: str | bytes) -> None:
    """Write one case file: ``FIFO`` makes a named pipe, ``ZERO`` a link to /dev/zero, bytes as they are,
    anything else the text (lone surrogates kept as they are)."""
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text == FIFO:
        os.mkfifo(path)
    elif text == ZERO:
        path.symlink_to("/dev/zero")
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
