"""The message pump between one MCP client and its server: every message passes, two are intercepted.

The pump works on the SDK's stream pairs (``SessionMessage`` items, the transports doing all framing), one pair
towards the client and one towards the server, so one pump serves stdio and Streamable HTTP alike:

- a ``tools/list`` result is read into the connection's environment (:class:`~prefix_exec.guard.shadow.Shadow`)
  and passed on; when the side file does not fit the server's tools the client gets a JSON-RPC error naming
  the problem instead, and every call is answered with it (the guard fails closed);
- a ``tools/call`` is checked before it is forwarded. ``enforce``: a rejected call never reaches the server;
  the client gets a tool result with ``isError: true`` in words a model can act on
  (:mod:`prefix_exec.guard.block`). ``observe``: it is forwarded and the verdict recorded. The server's answer
  then steps the live session (its ``isError`` and result are evidence, as in replay of a log). A call that
  arrives before any listing makes the guard list the tools itself first. A call the spec cannot judge (its
  schema could not be applied: a pattern past its time bound, a reference that does not resolve; a hook that
  raised) gets a JSON-RPC error saying so, is not forwarded, and the connection goes on.

An elicitation the client answers is heard when the user accepted it (:mod:`prefix_exec.guard.hearing`).

A settled call (answered, blocked, or failed) is recorded before its answer is passed on to the client (the
journal writes the connection's lines at once: :mod:`prefix_exec.guard.journal`), so a kill of the guard loses
only the calls in flight; ``guard_ms`` is the pump's time up to that write.

Every request forwarded has a deadline (``--call-timeout``). A server that exits, writes a line that is not
JSON-RPC, or misses a deadline gets the client a JSON-RPC error for each request in flight, and the connection
ends (its record closed). A client message that is not JSON-RPC gets a JSON-RPC error and the connection goes
on. A tools/call result over the size bound is replaced by an error result (the call did run on the server).
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from mcp.types import JSONRPCMessage as Message

from prefix_exec.envs.custom.evidence import origin_of
from prefix_exec.envs.custom.session import POSTCONDITION
from prefix_exec.errors import InputError, ReplayError
from prefix_exec.guard.block import block_result
from prefix_exec.guard.connection import GuardedConnection
from prefix_exec.guard.messages import OVERSIZE_METHOD, PREFIX, Pending, Streams, error, malformed, ms, short
from prefix_exec.guard.options import GuardOptions
from prefix_exec.guard.replies import after_result, bounded, note_client, note_server, offered
from prefix_exec.guard.shadow import MAX_PAGES, call_of, content_text
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.trajectory import FailureLabel, Observation, ToolCall, Verdict

#: How often deadlines are looked at, in seconds.
TICK_S = 0.05


@dataclass
class _Waiter:
    event: anyio.Event = field(default_factory=anyio.Event)
    answer: Message | None = None


class Pump:
    """Pass messages between ``client`` and ``server`` until either side ends; see the module docstring.

    ``connection`` checks, steps and records the calls; ``version_header`` sets the negotiated
    ``MCP-Protocol-Version`` on messages towards an HTTP server (a raw forward carries no header of its own).
    """

    def __init__(
        self,
        client: Streams,
        server: Streams,
        connection: GuardedConnection,
        options: GuardOptions,
        *,
        version_header: bool = False,
    ) -> None:
        self.client, self.server, self.connection, self.options = client, server, connection, options
        self.shadow, self.log = connection.shadow, connection.log
        self.version_header = version_header
        self.pending: dict[int | str, Pending] = {}
        self.end_reason: str | None = None
        self._internal: dict[str, _Waiter] = {}
        self._next_internal = 0
        self._internal_prefix = secrets.token_hex(4)
        self._scope: anyio.CancelScope | None = None

    async def abandon(self, reason: str) -> None:
        """After a failure outside the pump stopped it (an upstream transport that raised): answer what is in
        flight with ``reason`` and record it as why the connection ended."""
        self.end_reason = None
        for key in ("end", "ended_at"):
            self.log.info.pop(key, None)
        await self._fail(reason)
        self.log.end(reason)
        self.connection.finish()

    def stop(self, reason: str) -> None:
        """End the connection from outside (the HTTP connection's end)."""
        self._finish(reason)

    async def interrupt(self, reason: str) -> None:
        """End the connection from outside (a signal): each request in flight is answered with an error saying
        ``reason`` and each call in flight recorded as interrupted (the connection then ended for the system's
        reason, an infrastructure failure); with nothing in flight it simply ends."""
        if self.pending:
            await self._fail(reason)
        else:
            self._finish(reason)

    async def run(self) -> str:
        """Pump until the connection ends; returns why it ended."""
        try:
            async with anyio.create_task_group() as group:
                self._scope = group.cancel_scope
                group.start_soon(self._client_loop)
                group.start_soon(self._server_loop)
                group.start_soon(self._deadline_loop)
        finally:  # cancelled from outside too (the HTTP guard shutting down): the record is closed
            self.log.end(self.end_reason or "the guard stopped")
            self.connection.finish()
        return self.end_reason or "the guard stopped"

    def _finish(self, reason: str) -> None:
        if self.end_reason is None:
            self.end_reason = reason
        if self._scope is not None:
            self._scope.cancel()

    async def _fail(self, reason: str) -> None:
        """Answer every request in flight with an error saying ``reason``, then end the connection."""
        if self.end_reason is not None:
            return
        self.end_reason = reason
        # The server failed (exited, went silent, wrote garbage): the connection ended for the system's reason,
        # not the agent's, and its record says so (an infrastructure failure: docs/guard.md).
        self.log.info["infrastructure"] = reason
        for request_id, pending in list(self.pending.items()):
            del self.pending[request_id]
            if pending.call is not None:  # recorded with the error as its observation, and listed as interrupted
                self.log.interrupt(pending.call, reason)
                observation = Observation(PREFIX + reason, error=True)
                self._settle(pending, observation, answered=time.perf_counter(), sent=time.perf_counter())
            await self._to_client(error(request_id, INTERNAL_ERROR, PREFIX + reason))
        self._finish(reason)

    # ------------------------------------------------------------------------------------- client -> server

    async def _client_loop(self) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):  # the transport closed it
            async for item in self.client.read:
                await self._from_client(item)
        # The client closed its side: what is in flight is still answered (each wait bounded by its deadline).
        while self.pending:
            await anyio.sleep(TICK_S)
        self._finish("the client closed the session")

    async def _from_client(self, item: SessionMessage | Exception) -> None:
        if isinstance(item, Exception):
            await self._to_client(error(*malformed(item)))
            return
        message = item.message
        if isinstance(message, JSONRPCRequest):
            await self._client_request(message)
        elif isinstance(message, JSONRPCNotification) and message.method == OVERSIZE_METHOD:
            await self._answer_oversize(message.params or {})
        else:
            if isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
                self._cancelled((message.params or {}).get("requestId"))
            self.connection.from_client(message)  # the user's answer to an elicitation is heard (guard.hearing)
            await self._to_server(message)

    async def _client_request(self, message: JSONRPCRequest) -> None:
        received = time.perf_counter()
        params = message.params or {}
        note_client(self.log.info, message.method, params)
        if message.method == "tools/call":
            await self._tools_call(message, received)
            return
        if message.method == "tools/list" and not params.get("cursor"):
            self.shadow.begin_listing()
        pending = Pending(message.method, received, forwarded=time.perf_counter())
        self.pending[message.id] = pending
        await self._to_server(message)

    async def _tools_call(self, message: JSONRPCRequest, received: float) -> None:
        call = call_of(message.params, str(message.id))
        if not self.shadow.ready and self.shadow.problem is None:
            # While the call waits on our listing it is in flight as that listing: a connection that ends meanwhile
            # (no listing in time, the server gone) answers it with an error (_fail), and it goes no further.
            self.pending[message.id] = Pending("tools/list", received, forwarded=time.perf_counter())
            await self._list_tools(message.params or {})
            if self.pending.pop(message.id, None) is None:
                return
        if self.shadow.problem is not None:
            await self._to_client(error(message.id, INTERNAL_ERROR, PREFIX + self.shadow.problem.describe()))
            return
        if not self.options.offered(call.name):  # hidden by --allow-tools/--deny-tools: refused in either mode
            why = f"tool {call.name!r} is not offered through this guard (--allow-tools/--deny-tools)"
            await self._block(message.id, call, Verdict.reject(FailureLabel.SCHEMA, why), received)
            return
        try:
            verdict = self.shadow.check(call)
        except (InputError, ReplayError) as exc:  # the spec or its hooks cannot judge this call: say so, go on
            print(f"{PREFIX}error: {_problem(exc)}", flush=True, file=sys.stderr)
            if self.options.enforce:
                await self._to_client(error(message.id, INTERNAL_ERROR, PREFIX + _problem(exc)))
                return
            verdict = Verdict.accept(notes=(f"not judged: {_problem(exc)}",))  # observe never changes a call's fate
        if not verdict.accepted and self.options.enforce:
            await self._block(message.id, call, verdict, received)
            return
        pending = Pending("tools/call", received, call=call, verdict=verdict)
        token = ((message.params or {}).get("_meta") or {}).get("progressToken")
        pending.progress_token = token if isinstance(token, int | str) else None
        self.pending[message.id] = pending
        pending.forwarded = time.perf_counter()
        await self._to_server(message)

    async def _block(self, request_id: int | str, call: ToolCall, verdict: Verdict, received: float) -> None:
        """Answer ``call`` with a block (never forwarded); logged before the client has it (module docstring)."""
        result = block_result(verdict, call, self.shadow.session)
        blocked = replace(call, observation=Observation(content_text(result["content"]), error=True))
        entry = {"forwarded": False, "by": "check", "guard_ms": ms(time.perf_counter() - received)}
        self._log_call(blocked, verdict, entry)
        await self._to_client(JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result))

    async def _list_tools(self, params: JsonMapping) -> None:
        """List the server's tools ourselves (a call came before any listing), copying the call's ``_meta``
        (a 2026 server reads the protocol version and client from it)."""
        meta = {k: v for k, v in (params.get("_meta") or {}).items() if k != "progressToken"}
        self.shadow.begin_listing()
        cursor: Any = None
        for _ in range(MAX_PAGES):
            self._next_internal += 1
            # A random part per pump: a client that happens to use our spelling never has its answer taken.
            request_id = f"prefix-exec-guard-{self._internal_prefix}-{self._next_internal}"
            waiter = self._internal[request_id] = _Waiter()
            request_params = {**({"_meta": meta} if meta else {}), **({"cursor": cursor} if cursor else {})}
            # params always an object (``{}`` when empty): JSON-RPC allows no ``null`` there, and the TypeScript
            # SDK's servers drop such a request unanswered.
            await self._to_server(
                JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/list", params=request_params)
            )
            with anyio.move_on_after(self.options.call_timeout_s):
                await waiter.event.wait()
            answer = waiter.answer
            if not isinstance(answer, JSONRPCResponse):
                why = answer.error.message if isinstance(answer, JSONRPCError) else "no answer in time"
                await self._fail(f"the server did not list its tools ({why})")
                return
            if self.shadow.add_page(answer.result):
                self._listed()
                return
            cursor = answer.result.get("nextCursor")

    async def _answer_oversize(self, params: JsonMapping) -> None:
        request_id = params.get("id")
        size = params.get("bytes")
        # The notice is the reader's, but a client can send a notification of that name too: trust no field of it.
        seen = f" ({size:,} or more)" if isinstance(size, int) and not isinstance(size, bool) else ""
        text = f"the message is larger than {self.options.max_message_bytes:,} bytes{seen}; not passed on"
        known = request_id if isinstance(request_id, int | str) else None
        await self._to_client(error(known, INVALID_REQUEST, PREFIX + text))

    def _cancelled(self, request_id: Any) -> None:
        pending = self.pending.pop(request_id, None) if isinstance(request_id, int | str) else None
        if pending is not None and pending.call is not None:
            observation = Observation("the client cancelled this call before its result", error=None)
            now = time.perf_counter()
            self._settle(pending, observation, answered=now, sent=now)

    # ------------------------------------------------------------------------------------- server -> client

    async def _server_loop(self) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for item in self.server.read:
                if isinstance(item, Exception):
                    await self._fail(f"the server wrote a message that is not JSON-RPC ({short(item)})")
                    return
                await self._from_server(item.message)
        await self._fail("the server closed its output (it exited)")

    async def _from_server(self, message: Message) -> None:
        if isinstance(message, JSONRPCNotification) and message.method == "notifications/progress":
            token = (message.params or {}).get("progressToken")
            for waiting in self.pending.values():
                if waiting.progress_token is not None and waiting.progress_token == token:
                    waiting.alive = time.perf_counter()  # working on it: --call-timeout counts from now
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            waiter = self._internal.pop(message.id, None) if isinstance(message.id, str) else None
            if waiter is not None:
                waiter.answer = message
                waiter.event.set()
                return
            pending = self.pending.pop(message.id, None)
            if pending is not None:
                await self._answer(pending, message)
                return
        self.connection.elicitations.asked(message)
        await self._to_client(message)

    async def _answer(self, pending: Pending, message: JSONRPCResponse | JSONRPCError) -> None:
        answered = time.perf_counter()
        if isinstance(message, JSONRPCResponse):
            note_server(self.log.info, pending.method, message.result)
        if (
            pending.method == "tools/list"
            and isinstance(message, JSONRPCResponse)
            and self.shadow.add_page(message.result)
        ):
            self._listed()
            if self.shadow.problem is not None:
                message = error(message.id, INTERNAL_ERROR, PREFIX + self.shadow.problem.describe())
        if pending.call is None:
            await self._to_client(offered(message, self.options) if pending.method == "tools/list" else message)
            return
        if isinstance(message, JSONRPCError):
            observation = Observation(message.error.message, error=True)
        elif "content" not in message.result or message.result.get("resultType", "complete") != "complete":
            await self._to_client(message)  # not a final result (input required, a task): the call is not done
            return
        else:
            observation, message = bounded(message, self.options.max_message_bytes)
        verdict = self._settle(pending, observation, answered=answered, sent=time.perf_counter())
        if self.options.enforce and not verdict.accepted and POSTCONDITION in verdict.notes and message.id is not None:
            message = after_result(message.id, pending.call.name, verdict)  # the result failed: the client gets why
        await self._to_client(message)

    def _settle(self, pending: Pending, observation: Observation, *, answered: float, sent: float) -> Verdict:
        assert pending.call is not None and pending.verdict is not None
        call = replace(pending.call, observation=observation)
        verdict = pending.verdict
        if verdict.accepted and self.shadow.ready:
            try:
                verdict = self.shadow.settle(pending.call, observation)
            except (InputError, ReplayError) as exc:  # the call ran and its answer goes on; the check's verdict stays
                print(f"{PREFIX}error: {_problem(exc)}", flush=True, file=sys.stderr)
        # Who decided: the server's own answer (a recorded refusal, evidence) or our check.
        by = "result" if origin_of(verdict) == "recorded" else "check"
        guard_s = (pending.forwarded - pending.received) + (sent - answered)
        entry = {"forwarded": True, "by": by, "guard_ms": ms(guard_s), "server_ms": ms(answered - pending.forwarded)}
        self._log_call(call, verdict, entry)
        return verdict

    def _log_call(self, call: ToolCall, verdict: Verdict, entry: JsonObject) -> None:
        self.log.add(call, verdict, entry)
        self.connection.save()

    def _listed(self) -> None:
        if self.shadow.problem is not None:
            print(f"{PREFIX}error: {self.shadow.problem.describe()}", flush=True, file=sys.stderr)

    async def _to_client(self, message: Message) -> None:
        try:
            await self.client.write.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._finish("the client went away")

    async def _to_server(self, message: Message) -> None:
        metadata = None
        version = self.log.info.get("protocol_version")
        if self.version_header and isinstance(version, str):
            metadata = ClientMessageMetadata(headers={"mcp-protocol-version": version})
        try:
            await self.server.write.send(SessionMessage(message, metadata=metadata))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._fail("the server closed its input (it exited)")

    async def _deadline_loop(self) -> None:
        limit = self.options.call_timeout_s
        while True:
            await anyio.sleep(min(TICK_S, limit / 4))
            now = time.perf_counter()
            late = [p for p in self.pending.values() if now - max(p.forwarded, p.alive) > limit]
            if late:
                await self._fail(f"the server did not answer {late[0].method} within {limit:g} s (--call-timeout)")
                return


def _problem(exc: Exception) -> str:
    """What a spec or hooks problem met while checking a call says (an input error with its hint)."""
    return exc.describe() if isinstance(exc, InputError) else str(exc)
