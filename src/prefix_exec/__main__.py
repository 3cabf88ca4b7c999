"""``python -m prefix_exec``: the same as the ``prefix-exec`` console script."""

from prefix_exec.cli import console

console()
