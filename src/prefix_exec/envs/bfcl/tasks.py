"""BFCL v3 multi-turn tasks, read from the data that ships inside the ``bfcl-eval`` package.

The v4 file names (``BFCL_v4_multi_turn_<category>.json``) hold the v3 multi-turn categories. A task joins
the question file (initial state, involved classes, held-back functions) with its ground truth
(``possible_answer/``) and the function docs of its classes (``multi_turn_func_doc/``).

``bfcl_eval`` is imported lazily: only this subpackage needs it, and it is installed with ``--no-deps``.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from prefix_exec.extras import install_hint
from prefix_exec.json_types import JsonMapping, JsonObject

#: The four v3 multi-turn categories, in the paper's order.
CATEGORIES: tuple[str, ...] = ("base", "miss_func", "miss_param", "long_context")

#: The API classes of the multi-turn categories and the doc file of each.
DOC_FILES: Mapping[str, str] = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}

INSTALL_HINT = install_hint("bfcl_eval")


@dataclass(frozen=True)
class BfclTask:
    """One multi-turn task.

    ``ground_truth[t]`` lists BFCL's call strings for user turn ``t`` (empty for a turn where the model is
    expected not to call, such as miss_param's clarification turn or miss_func's reveal turn).
    ``missed_function`` maps a function name to the 0-based turn at which miss_func reveals it; before that
    turn it is not exposed (see :func:`_first_use` for the one task whose ground truth uses one earlier).
    ``excluded_function`` is kept for reference only: BFCL does not act on it. ``questions[t]`` is the text
    of turn ``t``'s user messages (empty at miss_func's reveal turn), for the information check.
    """

    id: str
    category: str
    involved_classes: tuple[str, ...]
    initial_config: JsonMapping
    ground_truth: tuple[tuple[str, ...], ...]
    missed_function: Mapping[str, int] = field(default_factory=dict)
    excluded_function: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()

    @property
    def turns(self) -> int:
        return len(self.ground_truth)

    @property
    def long_context(self) -> bool:
        """BFCL loads the APIs with their long-context padding for this category (as its execution code does)."""
        return "long_context" in self.category


def category_of(task_id: str) -> str:
    """``multi_turn_miss_func_12`` -> ``miss_func``. Raises ``KeyError`` for a non multi-turn id."""
    prefix, _, number = task_id.rpartition("_")
    category = prefix.removeprefix("multi_turn_")
    if not prefix.startswith("multi_turn_") or category not in CATEGORIES or not number.isdigit():
        raise KeyError(task_id)
    return category


def bfcl_module(name: str) -> ModuleType:
    """Import ``bfcl_eval.<name>``, or raise ``ImportError`` saying how to install it."""
    try:
        return importlib.import_module(f"bfcl_eval.{name}")
    except ImportError as exc:
        raise ImportError(f"the BFCL environment needs the bfcl-eval package ({exc}); {INSTALL_HINT}") from exc


def data_dir() -> Path:
    """The ``bfcl_eval/data`` folder."""
    package = bfcl_module("constants.executable_backend_config")
    return Path(str(package.__file__)).resolve().parents[1] / "data"


def _read_jsonl(path: Path) -> list[JsonObject]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@functools.cache
def load_category(category: str) -> Mapping[str, BfclTask]:
    """Every task of ``category``, by id, in file order."""
    if category not in CATEGORIES:
        raise KeyError(f"unknown BFCL multi-turn category {category!r}; expected one of {', '.join(CATEGORIES)}")
    root = data_dir()
    name = f"BFCL_v4_multi_turn_{category}.json"
    answers = {row["id"]: row["ground_truth"] for row in _read_jsonl(root / "possible_answer" / name)}
    tasks: dict[str, BfclTask] = {}
    for row in _read_jsonl(root / name):
        truth = tuple(tuple(turn) for turn in answers[row["id"]])
        missed = {
            fn: min(int(turn), _first_use(truth, fn, int(turn)))
            for turn, names in row.get("missed_function", {}).items()
            for fn in names
        }
        tasks[row["id"]] = BfclTask(
            id=row["id"],
            category=category,
            involved_classes=tuple(row["involved_classes"]),
            initial_config=row["initial_config"],
            ground_truth=truth,
            missed_function=missed,
            excluded_function=tuple(row.get("excluded_function", ())),
            questions=tuple(
                "\n".join(str(m.get("content", "")) for m in turn if m.get("role") == "user")
                for turn in row["question"]
            ),
        )
    return tasks


def _first_use(truth: tuple[tuple[str, ...], ...], function: str, default: int) -> int:
    """The first turn whose ground truth calls ``function``, else ``default``.

    BFCL's own ground truth for ``multi_turn_miss_func_49`` calls ``tail`` in turn 1 although
    ``missed_function`` reveals it only in turn 3: BFCL executes held-back functions all the same, and its
    data treats ``tail`` as available there. A held-back function is therefore exposed from the earlier of
    its reveal turn and its first ground-truth use, so that BFCL's own answers stay executable.
    """
    pattern = re.compile(rf"^\s*{re.escape(function)}\s*\(")
    for index, calls in enumerate(truth):
        if any(pattern.match(call) for call in calls):
            return index
    return default


def load_task(task_id: str) -> BfclTask:
    """The task ``task_id``; ``KeyError`` when there is no such multi-turn task."""
    return load_category(category_of(task_id))[task_id]


def all_tasks() -> list[BfclTask]:
    """The 800 tasks of the four categories, category by category in file order."""
    return [task for category in CATEGORIES for task in load_category(category).values()]


@functools.cache
def function_docs(class_name: str) -> Mapping[str, JsonMapping]:
    """BFCL's function docs of one API class, by function name."""
    if class_name not in DOC_FILES:
        raise KeyError(f"unknown BFCL backend class {class_name!r}")
    rows = _read_jsonl(data_dir() / "multi_turn_func_doc" / DOC_FILES[class_name])
    return {row["name"]: row for row in rows}
