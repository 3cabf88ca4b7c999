"""Whether a simulation's conversation fits the task it is filed under (``kind: "task_mismatch"``).

tau2's user simulator speaks from the task's scenario, so the identifiers the *user* introduces (user ids such as
``mia_li_3668``, retail order ids ``#W2378156``, airline reservation codes such as ``4WQ150``; ids the agent side
showed first do not count, since a user may repeat them) come from that task: its ``user_scenario`` text or its
expected actions' arguments. A simulation whose user introduces identifiers and mentions none that belongs to
its task was filed under the wrong task id (a harness that numbered tasks its own way, or a file produced against
another task version): its DB check and every per-task comparison are then meaningless. Nothing is flagged when
the user introduces no identifier (nothing to compare) or the task holds none. So a retail user who identifies by
name and zip code, or a mismatch between two tasks of one user, goes unflagged: a check that can miss, not one
that fires on clean files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from prefix_exec.envs.tau.information import identifier_arguments
from prefix_exec.json_types import JsonMapping
from prefix_exec.records.consistency import Disagreement

#: Identifier shapes of airline and retail: user ids, retail order ids, airline reservation codes.
_PATTERNS = (
    re.compile(r"\b[a-z]+_[a-z]+_\d{3,}\b"),
    re.compile(r"#?\bW\d{7}\b"),
    re.compile(r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}\b"),
)


def identifiers(text: str) -> set[str]:
    """The identifier-like tokens of ``text``, lower-cased, without a leading ``#``."""
    return {m.group(0).lstrip("#").lower() for pattern in _PATTERNS for m in pattern.finditer(text)}


def task_identifiers(task: JsonMapping) -> set[str]:
    """Identifiers of a task: in its user scenario text and in its expected actions' identifier arguments."""
    found = identifiers(json.dumps(task.get("user_scenario"), default=str))
    criteria = task.get("evaluation_criteria")
    actions = criteria.get("actions") if isinstance(criteria, Mapping) else None
    for action in actions if isinstance(actions, list) else ():
        arguments = action.get("arguments") if isinstance(action, Mapping) else None
        if isinstance(arguments, Mapping):
            found |= {str(value).lstrip("#").lower() for _, value in identifier_arguments(arguments)}
    return found


def task_mismatch(
    task: JsonMapping,
    transcript: Sequence[JsonMapping],
    *,
    dataset: str,
    task_id: str,
    model: str,
    method: str,
    trial: int,
) -> Disagreement | None:
    """A ``task_mismatch`` entry when the user names identifiers and none is the task's, else ``None``."""
    said: set[str] = set()  # ids the user introduced
    mentioned: set[str] = set()  # every id the user said, repeated ones included
    shown: set[str] = set()  # what the agent side said or looked up: a user may repeat those ids
    for message in transcript:
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content) if content else ""
        if message.get("role") == "user":
            found = identifiers(text)
            said |= found - shown
            mentioned |= found
        else:
            shown |= identifiers(text + json.dumps(message.get("tool_calls") or [], default=str))
    own = task_identifiers(task)
    if not said or not own or mentioned & own:
        return None
    return Disagreement(
        dataset=dataset,
        task_id=task_id,
        model=model,
        method=method,
        trial=trial,
        depth=0,
        tool="",
        arguments={},
        recorded_error=False,
        recorded_content=sorted(said),
        replay_accepted=False,
        replay_label=None,
        replay_reason=(
            f"the user names {', '.join(sorted(said)[:5])}, none of which is in task {task_id} "
            f"({', '.join(sorted(own)[:5])}): the conversation does not fit its task"
        ),
        kind="task_mismatch",
    )
