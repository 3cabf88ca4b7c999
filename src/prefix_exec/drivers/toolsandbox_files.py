"""The ToolSandbox run folder a live scenario leaves, in the layout and formats of ToolSandbox's own CLI.

One folder per unit, ``<files>/<dataset>/<model>/<method>/trial<k>/<scenario>/``, holding
``result_summary.json`` (one ``per_scenario_results`` row, as ``tool_sandbox.cli`` writes it) and
``trajectories/<scenario>/`` with ``execution_context.json`` and ``conversation.json`` (ToolSandbox's own
serialisers). Each unit writes only its own folder, so worker processes never share a file; a rerun of the
unit replaces it. ``prefix-exec score toolsandbox <folder> --model M --method X`` scores it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prefix_exec.envs.toolsandbox.live import toolsandbox
from prefix_exec.records.outputs import write_new

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def run_folder(files: Path, dataset: str, model: str, method: str, trial: int, scenario: str) -> Path:
    """The unit's run folder; each part is reduced to a safe file name (no separators, no ``..``)."""
    parts = [_safe(part) for part in (dataset, model, method, f"trial{trial}", scenario)]
    return files.joinpath(*parts)


def write_run_files(
    folder: Path, name: str, scenario: Any, context: Any, result: Any, error: dict[str, str] | None
) -> None:
    """Write the scenario's run files; ``error`` holds ``exception_type``/``traceback`` of an aborted loop."""
    trajectory = folder / "trajectories" / _safe(name)
    trajectory.mkdir(parents=True, exist_ok=True)
    _write(trajectory / "execution_context.json", context.to_dict(serialize_console=False), indent=4)
    if error is None:  # ToolSandbox's CLI writes no conversation for a scenario whose loop raised
        messages = toolsandbox_messages()
        evaluation = scenario.evaluation
        conversation = messages.serialize_to_conversation(
            execution_context=context,
            evaluation_result=result,
            milestones=evaluation.milestone_matcher.milestones,
            minefields=evaluation.minefield_matcher.milestones,
        )
        _write(trajectory / "conversation.json", conversation, indent=2)
    row = {
        "name": name,
        "categories": [str(c) for c in scenario.categories],
        "traceback": error["traceback"] if error else None,
        "exception_type": error["exception_type"] if error else None,
        "milestone_similarity": 0 if error else result.milestone_similarity,
        "minefield_similarity": 0 if error else result.minefield_similarity,
        "similarity": 0 if error else result.similarity,
        "turn_count": scenario.max_messages if error else result.turn_count,
        "milestone_mapping": {} if error else dict(result.milestone_mapping),
        "minefield_mapping": {} if error else dict(result.minefield_mapping),
    }
    _write(
        folder / "result_summary.json",
        {"per_scenario_results": [row], "category_aggregated_results": {}, "git_sha": None},
        indent=4,
    )


def toolsandbox_messages() -> Any:
    return toolsandbox("messages")


def _safe(part: str) -> str:
    text = _UNSAFE.sub("_", part).strip("._") or "_"
    return text[:120]


def _write(path: Path, data: Any, *, indent: int) -> None:
    """Write JSON through a new file of a random name and a rename (:func:`prefix_exec.records.outputs.write_new`), so a
    killed run never leaves half a file and a link planted beside it is never written through."""
    write_new(path, json.dumps(data, indent=indent, ensure_ascii=False, default=str).encode("utf-8"))
