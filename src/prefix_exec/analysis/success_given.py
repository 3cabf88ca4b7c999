"""Records whose final success Y was not in their input: ``score traces`` without ``--success-field`` writes Y as 0
with ``metadata.success_given`` false (a record has no absent Y). ``metrics`` says how many such records it read, since
every Y-based figure (success, RR, the decomposition) counts them as failures."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from prefix_exec.errors import InputError
from prefix_exec.records.jsonl import numbered_lines

#: The text a record without Y holds, looked for before a line is parsed (most lines have none).
MARK = '"success_given": false'


def absent_success(files: Iterable[str | Path]) -> int:
    """How many records of ``files`` carry ``metadata.success_given`` false; a file or line that cannot be read
    counts nothing (reading the records says why)."""
    count = 0
    for path in files:
        try:
            for _, text in numbered_lines(path):
                if isinstance(text, str) and MARK in text:
                    count += _absent(text)
        except (InputError, OSError):
            continue
    return count


def _absent(text: str) -> int:
    try:
        row = json.loads(text)
    except (ValueError, RecursionError):
        return 0
    metadata = row.get("metadata") if isinstance(row, dict) else None
    return int(isinstance(metadata, dict) and metadata.get("success_given") is False)


def absent_note(count: int) -> str | None:
    """The note for ``count`` records without Y, or ``None``."""
    if not count:
        return None
    return (
        f"{count} record{'s' if count != 1 else ''} carry no final success (metadata.success_given false: traces "
        "scored without --success-field): Y is recorded as 0, so success, RR and the decomposition count them as "
        "failures; PEC, FED, TER and AUC-PEC do not use Y"
    )
