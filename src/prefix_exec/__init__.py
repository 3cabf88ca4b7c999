"""prefix-exec: evaluate tool-using agents by prefix executability.

The names in ``__all__`` are the library's public API (docs/architecture.md, "Public API"): read rollouts, replay
them on an environment, score them into a records file, summarize the records. Each is defined in the module
:data:`HOMES` names and loaded on first use (the module ``__getattr__``), so ``import prefix_exec`` imports
nothing else: the command line and every worker process import this package before anything they need.

``prefix_exec.replay`` is the function :func:`prefix_exec.replay.replay`, also once that module is imported (a
package attribute would otherwise become the submodule); its other names import as
``from prefix_exec.replay import replay_session``.
"""

from __future__ import annotations

import sys

# typing.TYPE_CHECKING without importing typing (10 ms here, which every process would pay first); mypy reads a
# name TYPE_CHECKING as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

    from prefix_exec.analysis.rows import MetricRow, read_metric_rows
    from prefix_exec.analysis.summary import Summary, summarize
    from prefix_exec.envs.base import Environment, Session
    from prefix_exec.envs.custom.environment import environment_from_tools, load_spec
    from prefix_exec.envs.custom.session import Reject
    from prefix_exec.errors import InputError, ReplayError
    from prefix_exec.records.codec import read_records, read_rollouts, write_records, write_rollouts
    from prefix_exec.replay import replay, replay_session
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
    "replay",
    "replay_session",
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
    **dict.fromkeys(("replay", "replay_session"), "prefix_exec.replay"),
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


if not TYPE_CHECKING:
    ModuleType = type(sys)  # types.ModuleType, without importing types


class _Package(ModuleType):
    """This package's module type: a submodule named like a public name (``replay``) does not replace that name.

    Importing ``prefix_exec.replay`` would set the package's attribute ``replay`` to the module; the function is
    what ``from prefix_exec import replay`` must give, whatever was imported before. The submodule stays in
    ``sys.modules``, where ``from prefix_exec.replay import ...`` finds it.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name in HOMES and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
