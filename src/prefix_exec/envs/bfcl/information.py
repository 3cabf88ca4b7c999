"""Information availability on BFCL: a credential the agent passes must come from something it had seen.

The paper's executability includes "is the information available". On BFCL the arguments that cannot be
read off the task's state by any call, and that a model therefore has only when the user or a tool gave
them, are credentials: :data:`CREDENTIALS` (tokens, client ids and secrets, passwords) and the user names
of the login functions (:data:`LOGIN_NAMES`). Such a value must appear, as a whole token
(case-insensitive, see :class:`~prefix_exec.envs.tau.information.Evidence`), in

- a user message of this turn or an earlier one,
- the result text of an earlier accepted call,
- the arguments of an earlier accepted call (the agent's own values, such as a name it created), or
- the function docs of the task's classes (every value the model was shown).

A credential nobody gave is a guess, such as ``authenticate_travel(client_id='<UNKNOWN>')`` in
miss_param where the agent should have asked: TravelAPI accepts any credentials, so without this check
the call would be executable. Entity ids (files, orders, bookings, tickets, users, stock symbols) are
*not* checked: BFCL's own answers use ids that exist in the task's state without ever looking them up
(``rm(file_name='DylanProject.txt')`` with no ``ls``, ``cancel_order(order_id=12446)`` for "my most recent
order"), so a textual rule over them would reject BFCL's ground truth. A call the API answers with
a soft failure (``authentication_status: False``) is not checked either: the API already said the
values did not match, and BFCL's own answer to ``multi_turn_*_188`` authenticates with a password the user
never gave and is answered so. docs/bfcl.md lists the rule's false positives and negatives.
"""

from __future__ import annotations

from collections.abc import Iterator

from prefix_exec.envs.tau.information import Evidence
from prefix_exec.json_types import JsonMapping

#: Argument names that are credentials wherever they occur.
CREDENTIALS: frozenset[str] = frozenset({"access_token", "client_id", "client_secret", "refresh_token", "password"})
#: (function, argument) pairs naming the account a login function logs into.
LOGIN_NAMES: frozenset[tuple[str, str]] = frozenset(
    {
        ("authenticate_twitter", "username"),
        ("ticket_login", "username"),
        ("trading_login", "username"),
        ("message_login", "user_id"),
    }
)


def checked_arguments(name: str, arguments: JsonMapping) -> Iterator[tuple[str, str]]:
    """``(argument, value)`` for every argument of ``name(**arguments)`` the rule checks (non-empty text)."""
    for key, value in arguments.items():
        credential = key in CREDENTIALS or (name, key) in LOGIN_NAMES
        if credential and isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            yield key, str(value)


def unseen(name: str, arguments: JsonMapping, evidence: Evidence) -> list[tuple[str, str]]:
    """The checked arguments of the call whose value appears in no text of ``evidence``."""
    return [(key, value) for key, value in checked_arguments(name, arguments) if not evidence.contains(value)]


def reason(name: str, missing: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{key}={value!r}" for key, value in missing)
    return (
        f"{name}: {shown} appears in no user message, earlier tool result, earlier call or function doc "
        "(a credential nobody gave)"
    )
