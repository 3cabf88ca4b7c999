"""The paper's BFCL sample: 50 tasks from each of the four multi-turn categories, drawn once, seeded.

Each category is its own stratum: ``random.Random(f"{seed}:{category}")`` draws 50 of the category's task
ids (in file order) without replacement, and the ids are listed in category order, then by task number.
String seeds are hashed with SHA-512 by :class:`random.Random`, so the draw is the same on every platform
and Python version. The list drawn with :data:`SEED` ships as ``prefix_exec/data/bfcl_paper_sample.json``
and a test checks that it still matches the draw.
"""

from __future__ import annotations

import json
import random
from importlib import resources
from pathlib import Path

from prefix_exec.envs.bfcl.tasks import CATEGORIES, load_category

SEED = 20260330
PER_CATEGORY = 50
SHIPPED = "bfcl_paper_sample.json"


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


def paper_sample() -> list[str]:
    """The shipped sample (200 task ids), as drawn with :data:`SEED`."""
    text = resources.files("prefix_exec.data").joinpath(SHIPPED).read_text(encoding="utf-8")
    ids: list[str] = json.loads(text)["task_ids"]
    return ids


def write(path: Path, seed: int = SEED) -> None:
    """Write the sample drawn with ``seed`` as ``{"seed", "per_category", "task_ids"}`` JSON."""
    ids = draw(seed)
    payload = {"seed": seed, "per_category": PER_CATEGORY, "categories": list(CATEGORIES), "task_ids": ids}
    path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
