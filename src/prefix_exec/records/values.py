"""Typed access to the fields of a rollout or record row (:class:`Fields`), and the numbers and lists checked
where they are read (issue 45): a token count or a time that no call can have, in a file written before these
checks or by another tool, reads as 0 instead of ending the run (``float()`` of an integer past 1e308 raises, and
one such count poisons every total it is summed into); a ``transcript`` whose items are not messages is the row's
input error.

A value read as 0 is never silent: each is noted as a :class:`Zeroed` (file, line, field, the value as written)
in the collection :func:`noting_zeroed` opens, and the commands that read totals (``metrics``, ``report``,
``run --resume``, ``make smoke-local``) print :func:`zeroed_lines` on stderr. Outside such a collection (a library
caller) nothing is collected.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NoReturn

from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonObject

#: Largest T (evaluated action slots) a record may carry. Curves and tables run to the largest T, so one
#: hostile ``"T": 10**18`` would otherwise ask for exabytes; real rollouts have tens to hundreds of calls.
MAX_T = 100_000
#: The largest token count one model call may report (2^31 - 1, far past any context window).
MAX_TOKENS = 2**31 - 1
#: The longest time one call may report, in seconds (a week).
MAX_SECONDS = 7 * 24 * 3600.0
#: The largest count a rollout's metadata may hold (requests retried, answers read from the cache...).
MAX_COUNT = 1_000_000
#: Values noted one line each by :func:`zeroed_lines`; the rest are counted.
SHOWN = 5


@dataclass(frozen=True)
class Zeroed:
    """A number read from a file that no call can have, counted as 0: where (file, 1-based line, field), the
    value as written (:func:`shown`) and what it should have been (``token count``, ``time``, ``retry count``)."""

    path: str | None
    line: int | None
    field: str
    value: str
    what: str

    def describe(self) -> str:
        where = ":".join(str(part) for part in (self.path, self.line) if part is not None) or "a row"
        return f"{where}: field '{self.field}' is {self.value}, which no {self.what} can be; counted as 0"


_FOUND: ContextVar[list[Zeroed] | None] = ContextVar("prefix_exec_zeroed", default=None)


@contextlib.contextmanager
def noting_zeroed() -> Iterator[list[Zeroed]]:
    """Collect every value read as 0 in this block (this thread and context) into the list yielded."""
    found: list[Zeroed] = []
    token = _FOUND.set(found)
    try:
        yield found
    finally:
        _FOUND.reset(token)


def note_zeroed(path: str | None, line: int | None, field: str, value: Any, what: str) -> None:
    """Note that ``value`` at ``path``:``line`` ``field`` was read as 0 (when a collection is open)."""
    found = _FOUND.get()
    if found is not None:
        found.append(Zeroed(path, line, field, shown(value), what))


def zeroed_lines(found: Sequence[Zeroed]) -> list[str]:
    """One line per value read as 0, the first :data:`SHOWN`, then how many more and in how many files."""
    lines = [zeroed.describe() for zeroed in found[:SHOWN]]
    if len(found) > SHOWN:
        files = len({zeroed.path for zeroed in found})
        lines.append(f"... and {len(found) - SHOWN} more such values ({files} file{'s' if files > 1 else ''} in all)")
    return lines


def finite(value: float) -> bool:
    """Whether a JSON number has a finite float value (an integer past 1e308 has none: ``float`` overflows)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def shown(value: Any) -> str:
    """``value`` as written, short: an integer of more than 15 digits by its digit count (``str()`` of one past
    4,300 digits raises, and a float of it overflows)."""
    if isinstance(value, int) and not isinstance(value, bool) and not -(10**15) < value < 10**15:
        try:
            digits = f"{len(str(abs(value))):,}"
        except ValueError:  # past Python's 4,300 digits (made in code, never read from JSON)
            digits = "more than 4,300"
        return f"{'a negative' if value < 0 else 'an'} integer of {digits} digits"
    return repr(value)[:40]


def token_count(f: Fields, name: str) -> int:
    """The row's token count ``name`` (absent: 0): an integer 0 to :data:`MAX_TOKENS`; another integer, or a
    number that is not finite, is noted and read as 0; a finite non-integer is the row's input error."""
    value = f.get(name, (int, float), required=False, default=0)
    if isinstance(value, int):
        if 0 <= value <= MAX_TOKENS:
            return value
    elif math.isfinite(value):
        f.fail(name, f"expected int, got float {value!r:.60}", hint="a token count is a whole number")
    note_zeroed(f.path, f.line, f.prefix + name, value, "token count")
    return 0


def seconds(f: Fields, name: str) -> float:
    """The row's time ``name`` in seconds (absent: 0.0): finite, 0 to :data:`MAX_SECONDS`; another is noted and
    read as 0.0."""
    value = f.get(name, (int, float), required=False, default=0.0)
    try:
        found = float(value)
    except OverflowError:
        found = math.inf
    if math.isfinite(found) and 0 <= found <= MAX_SECONDS:
        return found
    note_zeroed(f.path, f.line, f.prefix + name, value, "time (seconds)")
    return 0.0


def metadata_count(value: Any) -> int | None:
    """``value`` when it is an integer 0 to :data:`MAX_COUNT` (a rollout's ``metadata.retries``), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    return None


def message_list(f: Fields, name: str = "transcript") -> tuple[Any, ...] | None:
    """The row's ``name`` list of messages as a tuple (None when absent); an item that is not an object is an
    input error naming the item."""
    found: list[Any] | None = f.get(name, list, required=False)
    for index, item in enumerate(found or ()):
        if not isinstance(item, dict):
            f.fail(f"{name}[{index}]", f"a message must be a JSON object, got {type(item).__name__}")
    return tuple(found) if found is not None else None


class Fields:
    """Typed access to one JSON object, raising InputError with the file, line and field path."""

    def __init__(self, data: Any, path: str | None, line: int | None, prefix: str = "") -> None:
        self.path, self.line, self.prefix = path, line, prefix
        if not isinstance(data, dict):
            self.fail("", f"expected a JSON object, got {type(data).__name__}")
        self.data: JsonObject = data

    def fail(self, name: str, message: str, hint: str | None = None) -> NoReturn:
        raise InputError(message, path=self.path, line=self.line, field=self.prefix + name or None, hint=hint)

    def sub(self, value: Any, name: str) -> Fields:
        return Fields(value, self.path, self.line, self.prefix + name + ".")

    def get(self, name: str, kind: type | tuple[type, ...], *, required: bool = True, default: Any = None) -> Any:
        if name not in self.data or self.data[name] is None:
            if required:
                self.fail(name, "missing", hint=f"every row needs '{self.prefix}{name}'")
            return default
        value = self.data[name]
        # bool is an int in Python; a JSON true is never a valid count or depth.
        if not isinstance(value, kind) or (kind in (int, (int, float)) and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.fail(
                name,
                f"expected {names}, got {type(value).__name__} {value!r:.60}",
                hint="the canonical row format is described under 'Formats' in README.md",
            )
        return value

    def text(self, name: str, *, required: bool = True) -> Any:
        value = self.get(name, (str, int), required=required)
        return None if value is None else str(value)

    def items(self, name: str) -> list[Any]:
        """The list under ``name``; ``[]`` when absent or null."""
        return list(self.get(name, list, required=False, default=[]))

    def strings(self, name: str) -> list[str]:
        """The list of strings under ``name``; ``[]`` when absent or null."""
        items = self.items(name)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                self.fail(f"{name}[{i}]", f"expected str, got {type(item).__name__} {item!r:.60}")
        return items

    def success(self, *, required: bool) -> int | None:
        """``success``: 0 or 1 (a JSON true or 1.0 reads as 1); ``None`` when absent and not required."""
        value = self.get("success", (int, float, bool), required=required)
        if value is None:
            return None
        if value not in (0, 1):
            self.fail("success", f"must be 0 or 1, got {value!r}")
        return int(value)

    def final_success(self) -> int | None:
        """A scored row's Y: 0 or 1, or ``None`` when the row says it was not recorded: ``"success": null``, or,
        as the records of ``score traces`` without ``--success-field`` said it before Y could be absent,
        ``success`` 0 with ``metadata.success_given`` false (that 0 was a placeholder, never a failure). A row
        without the key is an error: it may be a file that never meant to carry Y."""
        if "success" not in self.data:
            self.fail("success", "missing", hint="every row needs 'success': 0, 1, or null when Y was not recorded")
        if self.data["success"] is None:
            return None
        value = self.success(required=True)
        metadata = self.data.get("metadata")
        if value == 0 and isinstance(metadata, dict) and metadata.get("success_given") is False:
            return None
        return value

    def depth(self, name: str) -> int:
        """T or fed: an integer no larger than MAX_T + 1 (the depth arrays run to it)."""
        value: int = self.get(name, int)
        if value > MAX_T + 1:
            self.fail(
                name,
                f"{value:.3g} is beyond the largest supported horizon T = {MAX_T:,}",
                hint="a rollout has at most tens of thousands of actions; is this field corrupt?",
            )
        return value

    def unit(self) -> JsonObject:
        """The unit identity every row carries (dataset, task_id, model, method; trial 0 when absent), read in
        that order, so the first bad one is the one reported."""
        return {
            "dataset": self.text("dataset"),
            "task_id": self.text("task_id"),
            "model": self.text("model"),
            "method": self.text("method"),
            "trial": self.get("trial", int, required=False, default=0),
        }
