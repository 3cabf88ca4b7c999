"""The guard's own ``tools/list`` requests: a client called a tool before listing them, so the guard lists them
itself (the call is checked against that listing) and takes the answers before they reach the client.

Their ids carry a random part per connection, so a client that happens to use the same spelling never has its
answer taken. Their params are always an object (``{}`` when empty): JSON-RPC allows no ``null`` there, and the
TypeScript SDK's servers drop such a request unanswered.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

from prefix_exec.json_types import JsonMapping


@dataclass
class Waiter:
    """One of our requests: ``answer`` is set (and ``event``) when the server answers it."""

    event: anyio.Event = field(default_factory=anyio.Event)
    answer: JSONRPCResponse | JSONRPCError | None = None


class OwnListings:
    """The guard's ``tools/list`` requests of one connection that await their answers."""

    def __init__(self) -> None:
        self._waiting: dict[str, Waiter] = {}
        self._count = 0
        self._prefix = secrets.token_hex(4)

    def request(self, call_params: JsonMapping, cursor: Any) -> tuple[JSONRPCRequest, Waiter]:
        """A listing request (its page at ``cursor``), copying the ``_meta`` of the call that made it (a 2026
        server reads the protocol version and client from it), and what waits for its answer."""
        meta = {k: v for k, v in (call_params.get("_meta") or {}).items() if k != "progressToken"}
        self._count += 1
        request_id = f"prefix-exec-guard-{self._prefix}-{self._count}"
        waiter = self._waiting[request_id] = Waiter()
        params = {**({"_meta": meta} if meta else {}), **({"cursor": cursor} if cursor else {})}
        return JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/list", params=params), waiter

    def take(self, message: JSONRPCResponse | JSONRPCError) -> bool:
        """Whether ``message`` answers one of our requests (then it is that request's, never the client's)."""
        waiter = self._waiting.pop(message.id, None) if isinstance(message.id, str) else None
        if waiter is None:
            return False
        waiter.answer = message
        waiter.event.set()
        return True
