"""Deterministic greedy multi-label stratified sampling of tasks.

The paper draws its ToolSandbox subset once: N = 200 scenario templates chosen by a deterministic greedy
multi-label stratifier over ToolSandbox's scenario categories, so that every category keeps its share of the
pool. It publishes neither the ids nor its stratifier: this is our implementation of that design, and a
sample drawn with it is our own. The same function serves any pool of named items with zero or more labels
each (single-label pools, such as BFCL's four categories, are the easy special case).

Algorithm (:func:`stratified_sample`), for a pool of ``P`` items, ``L`` labels with pool counts ``c_l`` and a
sample size ``n``; the target count of label ``l`` is ``t_l = n * c_l / P``:

1. Order the pool canonically (sorted names), then shuffle it with ``random.Random(seed)``. This order only
   breaks ties, so the result does not depend on the input order, and the same seed gives the same pick.
2. Greedy fill: at step ``j = 1..n`` add the remaining item that minimizes ``sum_l (s_l - j * c_l / P)^2``
   after adding it (``s_l`` = label counts in the sample so far), the first in tie-break order on ties.
   Tracking the proportional path ``j * c_l / P`` instead of the final target keeps rare labels from being
   postponed until no item carrying them is left.
3. Swap repair: while some swap of one chosen item for one unchosen item lowers
   ``(max_l |s_l - t_l|, sum_l (s_l - t_l)^2)`` (lexicographically), apply the best such swap (first in
   tie-break order on ties). Each swap strictly lowers that pair, so this terminates.

With disjoint labels (one per task) a sample within one task of every target always exists, and the sampler
finds one. With overlapping labels ±1 may be infeasible; the tests check by brute force over small pools that
the sampler reaches ±1 whenever some sample does, but that is not a proof of global optimality.
:func:`label_deviation` reports how far a sample is from the proportional targets.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from prefix_exec.errors import InputError
from prefix_exec.records import outputs

DEFAULT_SEED = 0


def stratified_sample(pool: Mapping[str, Collection[str]], n: int, *, seed: int = DEFAULT_SEED) -> list[str]:
    """Pick ``n`` names of ``pool`` (name -> labels) keeping each label's share close to the pool's.

    Returns the chosen names in sorted order. Raises ``ValueError`` when ``n`` is negative or larger than
    the pool. Deterministic in ``(pool, n, seed)``; independent of the pool's iteration order.
    """
    if n < 0 or n > len(pool):
        raise ValueError(f"cannot choose {n} of {len(pool)} items")
    order = sorted(pool)
    random.Random(seed).shuffle(order)
    labels = sorted({label for name in order for label in pool[name]})
    if n == len(pool) or not labels:
        return sorted(order[:n])
    column = {label: k for k, label in enumerate(labels)}
    X = np.zeros((len(order), len(labels)), dtype=np.float64)
    for row, name in enumerate(order):
        for label in pool[name]:
            X[row, column[label]] = 1.0
    share = X.sum(axis=0) / len(order)
    chosen = _greedy_fill(X, share, n)
    chosen = _swap_repair(X, share * n, chosen)
    return sorted(order[i] for i in np.flatnonzero(chosen))


def label_deviation(pool: Mapping[str, Collection[str]], sample: Collection[str]) -> dict[str, float]:
    """Per label, the sample count minus its proportional target ``len(sample) * c_l / len(pool)``."""
    pool_counts: dict[str, int] = {}
    sample_counts: dict[str, int] = {}
    for labels in pool.values():
        for label in set(labels):
            pool_counts[label] = pool_counts.get(label, 0) + 1
    for name in sample:
        for label in set(pool[name]):
            sample_counts[label] = sample_counts.get(label, 0) + 1
    n, size = len(sample), len(pool)
    return {label: sample_counts.get(label, 0) - n * count / size for label, count in sorted(pool_counts.items())}


def _greedy_fill(X: NDArray[np.float64], share: NDArray[np.float64], n: int) -> NDArray[np.bool_]:
    chosen = np.zeros(X.shape[0], dtype=bool)
    counts = np.zeros(X.shape[1])
    weight = (X * X).sum(axis=1)
    for step in range(1, n + 1):
        gap = counts - step * share
        # ||gap + x_i||^2 = ||gap||^2 + 2 x_i . gap + ||x_i||^2; the first term is the same for every i.
        cost = 2.0 * (X @ gap) + weight
        cost[chosen] = np.inf
        best = int(np.argmin(cost))  # argmin returns the first minimum: the tie-break order
        chosen[best] = True
        counts += X[best]
    return chosen


def _swap_repair(X: NDArray[np.float64], target: NDArray[np.float64], chosen: NDArray[np.bool_]) -> NDArray[np.bool_]:
    chosen = chosen.copy()
    counts = X[chosen].sum(axis=0)
    while True:
        outside = np.flatnonzero(~chosen)
        if outside.size == 0:
            return chosen
        gap = counts - target
        best = (float(np.abs(gap).max()), float(gap @ gap), -1, -1)
        for i in np.flatnonzero(chosen):
            new = gap - X[i] + X[outside]  # one row per candidate replacement of item i
            worst = np.abs(new).max(axis=1)
            square = (new * new).sum(axis=1)
            k = int(np.argmin(np.where(worst <= worst.min() + _EPS, square, np.inf)))
            candidate = (float(worst[k]), float(square[k]), int(i), int(outside[k]))
            if _better(candidate, best):
                best = candidate
        if best[2] < 0:
            return chosen
        _, _, drop, add = best
        chosen[drop], chosen[add] = False, True
        counts += X[add] - X[drop]


_EPS = 1e-9


def _better(a: tuple[float, float, int, int], b: tuple[float, float, int, int]) -> bool:
    """Lexicographically smaller (max deviation, sum of squares), with a tolerance for float noise."""
    return a[0] < b[0] - _EPS or (a[0] <= b[0] + _EPS and a[1] < b[1] - _EPS)


# ------------------------------------------------------------------------------------------- label files


def read_labels(path: str | Path) -> dict[str, list[str]]:
    """Name -> labels from a ToolSandbox ``result_summary.json``, a JSON list/object, or a CSV file.

    Accepted shapes:

    - ``result_summary.json``: ``per_scenario_results[].name`` and ``.categories``;
    - JSON list of ``{"name": ..., "categories"|"labels": [...]}`` objects, or a JSON object
      ``{name: [labels]}``;
    - CSV with a header: a ``name`` (or ``scenario``/``task_id``/``id``) column and a ``labels`` (or
      ``categories``/``category``/``label``) column whose labels are separated by ``;`` or ``|``. A name may
      repeat over rows; its labels are merged.
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return _labels_from_csv(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}", path=path, hint="CSV label files need a .csv suffix") from None
    if isinstance(data, dict) and "per_scenario_results" in data:
        data = data["per_scenario_results"]
    if isinstance(data, dict):
        return {str(name): _label_list(labels, path, str(name)) for name, labels in data.items()}
    if isinstance(data, list):
        out: dict[str, list[str]] = {}
        for number, row in enumerate(data):
            if not isinstance(row, dict) or "name" not in row:
                raise InputError("each entry needs a 'name'", path=path, field=f"[{number}]")
            labels = row.get("categories", row.get("labels", []))
            out[str(row["name"])] = _label_list(labels, path, f"[{number}]")
        return out
    raise InputError("expected a result_summary.json, a JSON list of objects, or a JSON object", path=path)


def write_sample(names: Sequence[str], path: str | Path, *, inputs: Iterable[str | Path] = ()) -> None:
    """Write the chosen names: a JSON list for ``*.json``, else one name per line. A ``path`` that is one of
    ``inputs`` (the labels file) or no regular file is an :class:`InputError` (:mod:`prefix_exec.records.outputs`)."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        text = json.dumps(list(names), indent=1) + "\n"
    else:
        text = "".join(f"{name}\n" for name in names)
    outputs.write_text(path, text, inputs)


def read_names(path: str | Path) -> list[str]:
    """Names written by :func:`write_sample` (a JSON list, or one per line; blank and ``#`` lines skipped)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc}", path=path) from None
        if not isinstance(data, list):
            raise InputError("expected a JSON list of names", path=path)
        return [str(name) for name in data]
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _label_list(labels: Any, path: Path, where: str) -> list[str]:
    if isinstance(labels, str):
        return [labels]
    if not isinstance(labels, list):
        raise InputError("labels must be a list of strings", path=path, field=where)
    return [str(label) for label in labels]


_NAME_COLUMNS = ("name", "scenario", "task_id", "id")
_LABEL_COLUMNS = ("labels", "categories", "category", "label")


def _labels_from_csv(path: Path) -> dict[str, list[str]]:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
            header = [h.strip().lower() for h in (rows[0].keys() if rows else [])]
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    name_col = next((c for c in _NAME_COLUMNS if c in header), None)
    label_col = next((c for c in _LABEL_COLUMNS if c in header), None)
    if name_col is None or label_col is None:
        raise InputError(
            f"a CSV label file needs a name column ({', '.join(_NAME_COLUMNS)}) and a label column "
            f"({', '.join(_LABEL_COLUMNS)})",
            path=path,
        )
    out: dict[str, list[str]] = {}
    for row in rows:
        row = {str(k).strip().lower(): v for k, v in row.items()}
        name = (row.get(name_col) or "").strip()
        if not name:
            continue
        raw = (row.get(label_col) or "").replace("|", ";")
        labels = out.setdefault(name, [])
        labels.extend(label.strip() for label in raw.split(";") if label.strip() and label.strip() not in labels)
    return out
