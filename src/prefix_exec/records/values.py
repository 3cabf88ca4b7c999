"""Numbers and lists of a rollout or record row checked where they are read (issue 45): a token count or a time
that no call can have, in a file written before these checks or by another tool, reads as 0 instead of ending
the run (``float()`` of an integer past 1e308 raises, and one such count poisons every total it is summed into);
a ``transcript`` whose items are not messages is the row's input error.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefix_exec.records.codec import Fields

#: The largest token count one model call may report (2^31 - 1, far past any context window).
MAX_TOKENS = 2**31 - 1
#: The longest time one call may report, in seconds (a week).
MAX_SECONDS = 7 * 24 * 3600.0


def token_count(value: int) -> int:
    """``value`` (an int already type-checked) when it is 0 to :data:`MAX_TOKENS`, else 0."""
    return value if 0 <= value <= MAX_TOKENS else 0


def seconds(value: float) -> float:
    """``value`` (an int or float already type-checked) as seconds when finite, 0 to :data:`MAX_SECONDS`,
    else 0.0."""
    try:
        found = float(value)
    except OverflowError:
        return 0.0
    return found if math.isfinite(found) and 0 <= found <= MAX_SECONDS else 0.0


def message_list(f: Fields, name: str = "transcript") -> tuple[Any, ...] | None:
    """The row's ``name`` list of messages as a tuple (None when absent); an item that is not an object is an
    input error naming the item."""
    found: list[Any] | None = f.get(name, list, required=False)
    for index, item in enumerate(found or ()):
        if not isinstance(item, dict):
            f.fail(f"{name}[{index}]", f"a message must be a JSON object, got {type(item).__name__}")
    return tuple(found) if found is not None else None
