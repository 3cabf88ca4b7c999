"""``python -m prefix_exec.cli``: the same as the ``prefix-exec`` console script."""

from prefix_exec.cli import console

console()
