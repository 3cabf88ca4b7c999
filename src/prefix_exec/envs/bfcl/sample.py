"""Our stratified BFCL sample, ``stratified-200``: 50 tasks from each multi-turn category, drawn once, seeded.

The paper evaluates 50 tasks per category, 200 in all, drawn once; it publishes no task ids. This is our own
draw of that design, not the paper's tasks, so its results are comparable with the paper's only in design.

Each category is its own stratum: ``random.Random(f"{seed}:{category}")`` draws 50 of the category's task
ids (in file order) without replacement, and the ids are listed in category order, then by task number.
String seeds are hashed with SHA-512 by :class:`random.Random`, so the draw is the same on every platform
and Python version. The list drawn with :data:`SEED` (a seed of our choosing) ships as
``prefix_exec/data/bfcl_stratified_200.json`` and a test checks that it still matches the draw.
"""

from __future__ import annotations

import json
import random
from importlib import resources
from pathlib import Path

from prefix_exec.envs.bfcl.tasks import CATEGORIES, load_category

SEED = 20260330
PER_CATEGORY = 50
SHIPPED = "bfcl_stratified_200.json"
#: The sample's name in ``score bfcl --sample`` and a grid's ``subset``.
NAME = "stratified-200"


def _number(task_id: str) -> int:
    return int(task_id.rsplit("_", 1)[1])


def draw(seed: int = SEED, per_category: int = PER_CATEGORY) -> list[str]:
    """Draw the stratified sample: ``per_category`` ids from each category."""
    chosen: list[str] = []
    for category in CATEGORIES:
        ids = list(load_category(category))
        picked = random.Random(f"{seed}:{category}").sample(ids, per_category)
        chosen += sorted(picked, key=_number)
    return chosen


def sample_name(name: str) -> str:
    """:data:`NAME` for ``name``; ``KeyError`` for any other name."""
    if name == NAME:
        return NAME
    raise KeyError(f"unknown BFCL sample {name!r}; the one sample is {NAME!r}")


def stratified_200() -> list[str]:
    """The shipped sample (200 task ids), as drawn with :data:`SEED`."""
    text = resources.files("prefix_exec.data").joinpath(SHIPPED).read_text(encoding="utf-8")
    ids: list[str] = json.loads(text)["task_ids"]
    return ids


def write(path: Path, seed: int = SEED) -> None:
    """Write the sample drawn with ``seed`` as ``{"seed", "per_category", "task_ids"}`` JSON."""
    ids = draw(seed)
    payload = {"seed": seed, "per_category": PER_CATEGORY, "categories": list(CATEGORIES), "task_ids": ids}
    path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
