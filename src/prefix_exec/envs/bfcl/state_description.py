"""A compact, deterministic text description of a live BFCL session's state, for planners.

The description is one JSON object: per involved stateful class (in the task's order; MathAPI has no state),
the public attributes BFCL's own state log shows (``vars(instance)`` without ``_``-prefixed names), plus
``cwd`` for the file system (its current directory is private, and plans depend on it). API objects
(the file system's ``Directory`` and ``File``) become their public attributes; a reference back to an
object being written (``Directory.parent``) is left out.

It is bounded by ``max_chars``: strings are cut to :data:`STRING_CHARS`, and lists and dicts keep their
first *n* entries plus a ``"... N more"`` marker (the attributes of an instance or API object are all
kept), with *n* halved (8, 4, 2, 1) until the text fits; a text that still does not fit is cut and ends
with ``…``. The same state always gives the same text: entries keep the API's insertion order, sets
are sorted, and no memory address or ``repr`` of an object appears.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from prefix_exec.envs.bfcl import api_classes
from prefix_exec.json_types import JsonObject

#: Longest string kept whole, in characters.
STRING_CHARS = 80
#: Deepest nesting shown; deeper values become ``"..."``.
MAX_DEPTH = 8
#: Entries kept per list or dict, tried in order until the summary fits.
ENTRY_LIMITS = (8, 4, 2, 1)


def describe_state(instances: Mapping[str, Any], classes: tuple[str, ...], max_chars: int = 2000) -> str:
    """The description of ``instances`` (class name -> API instance) for ``classes``, at most ``max_chars`` long."""
    if max_chars < 1:
        raise ValueError("max_chars must be >= 1")
    text = ""
    for limit in ENTRY_LIMITS:
        state = {name: _instance(instances[name], limit) for name in classes if name not in api_classes.STATELESS}
        text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
        if len(text) <= max_chars:
            return text
    return text[: max_chars - 1] + "…"


def _instance(instance: Any, limit: int) -> Any:
    shown = _compact(api_classes.public_state(instance), limit, 0, (id(instance),), attributes=True)
    cwd = _cwd(instance)
    if cwd is not None and isinstance(shown, dict):
        shown = {"cwd": cwd, **shown}
    return shown


def _cwd(instance: Any) -> str | None:
    """The file system's current directory as a path from the root, or ``None`` for other classes."""
    current = vars(instance).get("_current_dir")
    names: list[str] = []
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        names.append(str(getattr(current, "name", "?")))
        current = getattr(current, "parent", None)
    return "/" + "/".join(reversed(names)) if names else None


def _compact(value: Any, limit: int, depth: int, path: tuple[int, ...], *, attributes: bool = False) -> Any:
    """``value`` as JSON data, bounded; ``attributes`` marks an object's attribute dict (never cut)."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value if len(value) <= STRING_CHARS else value[: STRING_CHARS - 1] + "…"
    if depth >= MAX_DEPTH:
        return "..."
    inner = (*path, id(value))
    if isinstance(value, Mapping):
        items = list(value.items())
        keep = len(items) if attributes else limit
        shown: JsonObject = {str(k): _compact(v, limit, depth + 1, inner) for k, v in items[:keep] if id(v) not in path}
        if len(items) > keep:
            shown["..."] = f"{len(items) - keep} more"
        return shown
    if isinstance(value, list | tuple | set | frozenset):
        elements = sorted(value, key=repr) if isinstance(value, set | frozenset) else list(value)
        listed = [_compact(v, limit, depth + 1, inner) for v in elements[:limit] if id(v) not in path]
        if len(elements) > limit:
            listed.append(f"... {len(elements) - limit} more")
        return listed
    if hasattr(value, "__dict__"):
        public = {k: v for k, v in vars(value).items() if not k.startswith("_") and id(v) not in path}
        return _compact(public, limit, depth, (*path, id(value)), attributes=True)
    return type(value).__name__
