"""Records whose final success Y was not recorded (``"success": null``: ``score traces`` without
``--success-field``, or any row that says so): what ``metrics`` and ``report`` say about them on stderr.

Absent is not 0: success, RR and the decomposition are taken over the records whose Y is known
(:mod:`prefix_exec.analysis.metrics`) and are absent where none is; PEC, n_k, TER, AUC-PEC and FED never read Y.
"""

from __future__ import annotations

from collections.abc import Iterable


def absent_note(successes: Iterable[int | None]) -> str | None:
    """The note for the records whose Y (each record's ``success``, in ``successes``) is ``None``, or ``None``
    when every record has its Y."""
    values = list(successes)
    absent = sum(1 for y in values if y is None)
    if not absent:
        return None
    return (
        f"success: not recorded for {absent} of {len(values)} records (success null: traces scored without "
        "--success-field, say): success, RR and the decomposition are over the records whose Y is recorded, n/a "
        "where none is (never 0); PEC, FED, TER and AUC-PEC do not use Y"
    )
