"""The crash runs of ``scripts/traces/generate.py --crash``: five of the shop's conversations, each with one model call
the scripted server fails, so that a framework's run ends by the system's fault (or survives it) and its trace
records the failed model call.

Which call fails is chosen from the request itself (:func:`fault_of`, the server's ``fault_of`` hook): the
conversation its first user message names, and the call's number in it (how many assistant messages the request
carries, from 0), once; so a retried call is answered. The plan (:data:`PLAN`):

- ``cancel-1``: HTTP 500 on call 2, after ``find_order`` and ``get_order`` ran: the run raises;
- ``cancel-2``: call 2 (after ``get_order`` and the ``cancel_order`` the tool rejected) is not answered before the
  client's timeout (:data:`CLIENT_TIMEOUT_S`; the server holds it :data:`HANG_S`): the run raises;
- ``cancel-6``: call 1 (after ``get_order``'s "not found") gets its connection closed with no answer: the run raises;
- ``status-3``: HTTP 500 on call 2 (the second user turn's first call); the framework's or the loop's own retry
  asks again and the run completes (:data:`RETRIED`);
- ``email-7``: HTTP 400 "maximum context length" on call 1 (after ``send_email``'s refusal): the run raises, but the
  request was at fault, not the system.

Every client is made with ``max_retries=0`` (the openai client's own retries would hide the failed attempt inside
one model span, and a crash would be retried away): only the retries named in :data:`RETRIED` happen, one each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shop import conversations as shop_conversations

#: task -> (model call from 0, the server's fault: tests/fakes/openai_server.py).
PLAN: dict[str, tuple[int, str]] = {
    "cancel-1": (2, "500"),
    "cancel-2": (2, "hang"),
    "cancel-6": (1, "drop"),
    "status-3": (2, "500"),
    "email-7": (
        1,
        "400:This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 "
        "tokens. Please reduce the length of the messages.",
    ),
}
#: The conversations whose failed call is retried once (by the loop, the Agents SDK's runner, pydantic-ai's
#: RetryOnModelErrors), so the run completes.
RETRIED = frozenset({"status-3"})
#: The clients' timeout, and how long the server holds a "hang" request (longer: the client gives up first).
CLIENT_TIMEOUT_S = 1.0
HANG_S = 3.0


def timeout(crashing: bool) -> dict[str, float]:
    """The clients' ``timeout`` keyword for a crash run (none otherwise: the client's default)."""
    return {"timeout": CLIENT_TIMEOUT_S} if crashing else {}


def conversations() -> list[dict[str, Any]]:
    """The shop's conversations the plan names, in the shop's order."""
    return [c for c in shop_conversations() if c["task_id"] in PLAN]


def fault_of(convs: list[dict[str, Any]]) -> Callable[[dict[str, Any]], str | None]:
    """The server's ``fault_of``: the planned fault for a request, the first time its (task, call) is asked."""
    by_first = {next(m["content"] for m in c["messages"] if m["role"] == "user"): c["task_id"] for c in convs}
    served: set[tuple[str, int]] = set()

    def fault(request: dict[str, Any]) -> str | None:
        messages = request["messages"]
        first = next(m["content"] for m in messages if m["role"] == "user")
        task = by_first[first if isinstance(first, str) else first[0]["text"]]
        call = sum(1 for m in messages if m["role"] == "assistant")
        if PLAN[task][0] != call or (task, call) in served:
            return None
        served.add((task, call))
        return PLAN[task][1]

    return fault
