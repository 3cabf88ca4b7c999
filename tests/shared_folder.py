"""Where the shared fixtures are (the real benchmark logs: bfcl/, tau/, toolsandbox/), for tests and benchmarks.

They are looked for beside the repository (``../shared/data``), beside the folder holding it (a git worktree
under ``../wt/NAME``), or wherever ``PREFIX_EXEC_SHARED_DATA`` points; they are read in place, never copied.
A benchmark puts this folder on ``sys.path`` to import it, as it imports the test oracles.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def shared_data() -> Path:
    """``PREFIX_EXEC_SHARED_DATA`` when set, else the first of ``../shared/data`` and ``../../shared/data``
    (from the repository) that is a folder, else the first (missing: the caller says so)."""
    named = os.environ.get("PREFIX_EXEC_SHARED_DATA")
    if named:
        return Path(named)
    beside = [folder / "shared" / "data" for folder in (REPO.parent, REPO.parent.parent)]
    return next((path for path in beside if path.is_dir()), beside[0])
