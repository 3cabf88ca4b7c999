"""Old spellings that still work: each says once per process, on stderr, what replaced it.

Used where users type a name (a command-line option, a keyword argument of a public function): the old
spelling keeps working and prints ``prefix-exec: <old> is deprecated; use <new>``, the first time only.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from typing import Any

_SAID: set[str] = set()
_LOCK = threading.Lock()


def deprecated(old: str, new: str) -> None:
    """Print the one deprecation line of ``old`` (replaced by ``new``), unless this process printed it already."""
    with _LOCK:
        if old in _SAID:
            return
        _SAID.add(old)
    print(f"prefix-exec: {old} is deprecated; use {new}", file=sys.stderr)


class DeprecatedOption(argparse.Action):
    """A command-line option's old spelling: stores into the new option's ``dest`` and says :func:`deprecated`.

    ``parser.add_argument("--old", dest="new", action=DeprecatedOption, new="--new", help=argparse.SUPPRESS)``
    """

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        deprecated(option_string or self.option_strings[0], self.new)
        setattr(namespace, self.dest, values)
