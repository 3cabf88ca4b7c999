"""Old spellings that still work: each says once per process, on stderr, what replaced it.

Used where users type a name (a command-line option, a keyword argument of a public function): the old
spelling keeps working and prints ``prefix-exec: <old> is deprecated; use <new>``, the first time only.
"""

from __future__ import annotations

import sys
import threading

_SAID: set[str] = set()
_LOCK = threading.Lock()


def deprecated(old: str, new: str) -> None:
    """Print the one deprecation line of ``old`` (replaced by ``new``), unless this process printed it already."""
    with _LOCK:
        if old in _SAID:
            return
        _SAID.add(old)
    print(f"prefix-exec: {old} is deprecated; use {new}", file=sys.stderr)
