"""prefix-exec: evaluate tool-using agents by prefix executability.

The names in ``__all__`` are the library's public API (docs/architecture.md, "Public API"): read rollouts, load an
environment, score rollouts into a records file, summarize the records. Each is defined in the module
:data:`HOMES` names and loaded on first use (the module ``__getattr__``), so ``import prefix_exec`` imports no
other module of ours: the command line and every worker process import this package before anything they need.

Replay itself is the module :mod:`prefix_exec.replay` (``from prefix_exec.replay import replay``): a package
attribute cannot be both that module and its function, so the face leaves both names to the module.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefix_exec.analysis.rows import MetricRow, read_metric_rows
    from prefix_exec.analysis.summary import Summary, summarize
    from prefix_exec.envs.base import Environment, Session
    from prefix_exec.envs.custom.environment import environment_from_tools, load_spec
    from prefix_exec.envs.custom.session import Reject
    from prefix_exec.errors import InputError, ReplayError
    from prefix_exec.records.codec import read_records, read_rollouts, write_records, write_rollouts
    from prefix_exec.scoring.run import ScoreReport, score_to_file
    from prefix_exec.scoring.units import Scorable, with_environment
    from prefix_exec.trajectory import (
        CallCost,
        FailureLabel,
        Observation,
        PrefixRecord,
        Rollout,
        Skipped,
        ToolCall,
        Verdict,
    )

__all__ = [
    "CallCost",
    "Environment",
    "FailureLabel",
    "InputError",
    "MetricRow",
    "Observation",
    "PrefixRecord",
    "Reject",
    "ReplayError",
    "Rollout",
    "Scorable",
    "ScoreReport",
    "Session",
    "Skipped",
    "Summary",
    "ToolCall",
    "Verdict",
    "environment_from_tools",
    "load_spec",
    "read_metric_rows",
    "read_records",
    "read_rollouts",
    "score_to_file",
    "summarize",
    "with_environment",
    "write_records",
    "write_rollouts",
]

#: Each public name and the module that defines it (``__all__`` lists the same names).
HOMES: dict[str, str] = {
    **dict.fromkeys(("MetricRow", "read_metric_rows"), "prefix_exec.analysis.rows"),
    **dict.fromkeys(("Summary", "summarize"), "prefix_exec.analysis.summary"),
    **dict.fromkeys(("Environment", "Session"), "prefix_exec.envs.base"),
    **dict.fromkeys(("environment_from_tools", "load_spec"), "prefix_exec.envs.custom.environment"),
    "Reject": "prefix_exec.envs.custom.session",
    **dict.fromkeys(("InputError", "ReplayError"), "prefix_exec.errors"),
    **dict.fromkeys(("read_records", "read_rollouts", "write_records", "write_rollouts"), "prefix_exec.records.codec"),
    **dict.fromkeys(("ScoreReport", "score_to_file"), "prefix_exec.scoring.run"),
    **dict.fromkeys(("Scorable", "with_environment"), "prefix_exec.scoring.units"),
    **dict.fromkeys(
        ("CallCost", "FailureLabel", "Observation", "PrefixRecord", "Rollout", "Skipped", "ToolCall", "Verdict"),
        "prefix_exec.trajectory",
    ),
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for (then kept here)."""
    home = HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    __import__(home)  # the builtin: importlib itself is one more import
    value = getattr(sys.modules[home], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
