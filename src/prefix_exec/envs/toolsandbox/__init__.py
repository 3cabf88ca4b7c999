"""ToolSandbox (apple/ToolSandbox): its semantics, its recorded runs, and (when installed) live sessions.

- :mod:`.semantics`: exception -> label, verdicts, minefields, Y and the metadata contract, shared by the
  importer, the recorded and the live environment;
- :mod:`.recorded`: replay of the outcomes a run folder recorded (no ToolSandbox needed);
- :mod:`.calls`: the Python code handed to ToolSandbox, built by us from parsed values;
- :mod:`.live`: sessions on ToolSandbox's execution context (needs ToolSandbox; see docs/toolsandbox.md).
"""

from prefix_exec.envs.toolsandbox.recorded import RecordedSession, RecordedToolSandbox, recorded_environment
from prefix_exec.envs.toolsandbox.semantics import (
    DATASET,
    ENVIRONMENT_FAULT_NOTE,
    EXCEPTION_RULES,
    HEURISTIC_NOTE,
    INSUFFICIENT_INFORMATION,
    ExceptionRule,
    ScenarioFacts,
    classify_exception,
    split_exception,
)

__all__ = [
    "DATASET",
    "ENVIRONMENT_FAULT_NOTE",
    "EXCEPTION_RULES",
    "HEURISTIC_NOTE",
    "INSUFFICIENT_INFORMATION",
    "ExceptionRule",
    "RecordedSession",
    "RecordedToolSandbox",
    "ScenarioFacts",
    "classify_exception",
    "recorded_environment",
    "split_exception",
]
