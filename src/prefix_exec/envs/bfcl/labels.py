"""Which failure label a BFCL API error gets, and which results are soft (accepted, but noted).

An API call is rejected when it returns an error: a dict with an ``"error"`` key (TravelAPI's
``{"booking_status": False, "error": ...}`` included), a list holding such a dict (TicketAPI's
``get_user_tickets``), a list holding an ``"Error: ..."`` string (TradingBot's ``get_watchlist``), or a
raised exception. :data:`ERROR_TABLE` maps the message to a label; the first matching row wins, and rows
are ordered by the protocol's tie-break order (schema first). A message no row matches is a
``precondition`` failure (the benchmark refused the transition for a reason the table does not name),
flagged in the verdict notes as unclassified.

Raised exceptions: ``KeyError``/``IndexError`` mean a referenced key or id does not exist
(``dependency``); every other exception (``TypeError``, ``ValueError``, ``AttributeError``, ...) means the
argument values did not fit the function (``schema``), unless the message matches a table row first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from prefix_exec.trajectory import FailureLabel

S, D, P, C = (
    FailureLabel.SCHEMA,
    FailureLabel.DEPENDENCY,
    FailureLabel.PRECONDITION,
    FailureLabel.STATE_CONSISTENCY,
)

#: (pattern, label, why) rows, matched case-insensitively against the error message; first match wins.
ERROR_TABLE: tuple[tuple[str, FailureLabel, str], ...] = (
    # schema: the argument values do not fit the function
    (r"invalid character|unsupported path|path not allowed|invalid mode|invalid option", S, "bad argument value"),
    (r"invalid (priority|fields|headlight mode|ignition mode|speed|date format|travel class)", S, "bad argument value"),
    (r"must be (positive|between|a number|numbers|one of)|cannot be (negative|zero)", S, "argument out of range"),
    (r"all elements in the list must be numbers|input must be a number", S, "argument of the wrong type"),
    (
        r"empty list|divide by zero|square root of a negative|not supported|too large to represent",
        S,
        "argument out of domain",
    ),
    (r"above the tank capacity|min fuel level", S, "argument out of range"),
    # dependency: a referenced file, id, user or record does not exist
    (
        r"no such (file|directory)|not a directory|is a directory|not a file or directory",
        D,
        "referenced path does not exist",
    ),
    (r"not found|card not registered|credit card not registered|keyerror", D, "referenced id does not exist"),
    (r"invalid (stock symbol|departure airport code|destination airport code)", D, "referenced id does not exist"),
    (r"no available (route|exchange rate)", D, "referenced route or rate does not exist"),
    # precondition: the state does not allow the action yet
    (r"not authenticated|not logged in|no user is currently logged in|please log in", P, "not authenticated"),
    (r"token (not initialized|expired)|invalid access token", P, "not authenticated"),
    (r"start the engine|doors must be locked|brake pedal|press the brake|fuel tank is empty", P, "vehicle state"),
    (r"market is closed", P, "market closed"),
    (r"insufficient funds|balance is less than budget|exceeded budget limit", P, "insufficient balance"),
    (r"already the root|directory not empty", P, "file-system state"),
    # state_consistency: the action conflicts with the current state (it was already done)
    (r"already exists|file exists|already (closed|resolved|completed|registered)", C, "already done"),
)

_COMPILED = tuple((re.compile(pattern, re.IGNORECASE), label, why) for pattern, label, why in ERROR_TABLE)

#: Exception types that mean "the referenced key does not exist".
_DEPENDENCY_EXCEPTIONS = frozenset({"KeyError", "IndexError"})


def label_error(message: str, exception: str | None = None) -> tuple[FailureLabel, str, bool]:
    """``(label, why, classified)`` for an API error message (and the exception type, if one was raised).

    ``classified`` is False when no table row matched and the fallback was used.
    """
    for pattern, label, why in _COMPILED:
        if pattern.search(message):
            return label, why, True
    if exception is not None:
        if exception in _DEPENDENCY_EXCEPTIONS:
            return D, f"{exception}: referenced key does not exist", True
        return S, f"{exception}: arguments do not fit the function", True
    return P, "unclassified backend error", False


def error_of(result: Any) -> str | None:
    """The error message carried by an API result, or ``None`` for a normal result."""
    if isinstance(result, Mapping) and "error" in result:
        return str(result["error"])
    if isinstance(result, list) and result:
        first = result[0]
        if isinstance(first, Mapping) and "error" in first:
            return str(first["error"])
        if isinstance(first, str) and first.startswith("Error:"):
            return first.removeprefix("Error:").strip()
    return None


#: ``status``-like values that mean "nothing happened", accepted but noted.
_SOFT_VALUES = frozenset({"Already retweeted", "Already logged in", "No user is currently logged in"})


def soft_signals(result: Any) -> tuple[str, ...]:
    """Notes for a result that is not an error but reports that the action did not take effect.

    ``{"verification_status": False}``, ``{"login_status": False}``, ``{"follow_status": False}`` and the
    like (any ``*_status`` key set to False), and the status strings in ``_SOFT_VALUES``.
    """
    if not isinstance(result, Mapping):
        return ()
    notes = [f"soft: {key}=False" for key, value in result.items() if str(key).endswith("_status") and value is False]
    notes += [
        f"soft: {key}={value!r}" for key, value in result.items() if isinstance(value, str) and value in _SOFT_VALUES
    ]
    return tuple(notes)
