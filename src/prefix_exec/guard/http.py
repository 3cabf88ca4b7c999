"""The Streamable HTTP guard: ``prefix-exec guard --listen HOST:PORT --upstream URL`` (or ``-- COMMAND``).

An ASGI app (served by uvicorn) in front of an MCP server: its Streamable HTTP endpoint, or a stdio server the guard
starts per connection. Each MCP connection the client opens (an ``initialize`` without an MCP session id) gets an
MCP session id of its own, the SDK's :class:`~mcp.server.streamable_http.StreamableHTTPServerTransport` towards the
client, an SDK client connection to the server (:func:`~mcp.client.streamable_http.streamable_http_client`, which
opens the upstream's own connection, or :func:`~mcp.client.stdio.stdio_client`, which starts the command and stops
it when the connection ends) and a :class:`~prefix_exec.guard.pump.Pump` between them, with its own shadow state
and rollout: connections are independent. A request naming an unknown MCP session id gets 404, as the SDK's own
session manager answers; ``DELETE`` ends the connection, and so do the idle timeout and the upstream failing.

The guard needs a connection to keep a connection's state in, so it speaks the session-based protocol versions
(the ``initialize`` handshake). A request of the 2026 per-request protocol is answered with the SDK's
"unsupported protocol version" error listing the handshake versions, on which SDK clients in ``auto`` mode
fall back to ``initialize``. Request bodies over the size bound get 413 before they are parsed, and requests
whose ``Host`` or ``Origin`` header does not name the guard get 421 or 403 before that
(:mod:`prefix_exec.guard.hosts`: DNS rebinding).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from types import FrameType
from typing import Any
from uuid import uuid4

import anyio
import uvicorn
from anyio.abc import TaskGroup, TaskStatus
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.types import UNSUPPORTED_PROTOCOL_VERSION, ErrorData, JSONRPCError
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS
from sse_starlette.sse import AppStatus
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from prefix_exec.guard.connection import new_connection
from prefix_exec.guard.hosts import HostCheck, HostPolicy, policy_for
from prefix_exec.guard.journal import Journal
from prefix_exec.guard.messages import Streams, short
from prefix_exec.guard.options import GuardOptions
from prefix_exec.guard.pump import Pump
from prefix_exec.json_types import JsonObject

#: A connection with no request in flight for this long is ended, in seconds (the SDK's default).
IDLE_TIMEOUT_S = 30 * 60
#: Longest wait, as a connection ends, for the transport to deliver the answers the pump sent (seconds).
FLUSH_S = 2.0
#: Most connections open at once; a request that would open one more gets 503.
MAX_CONNECTIONS = 1000
#: Longest wait, at SIGINT/SIGTERM, for every connection to answer its requests in flight and close its record
#: (seconds); uvicorn's own graceful shutdown (5 s more at most) follows.
INTERRUPT_S = 10.0
#: How often the waits on a connection's requests look again, in seconds.
POLL_S = 0.02


class GuardApp:
    """The ASGI app: routes each request to its connection's transport, opening connections as clients ask.
    ``server`` is the upstream's URL, or the command of a stdio server started for each connection."""

    def __init__(
        self,
        server: str | list[str],
        options: GuardOptions,
        journal: Journal | None,
        origin: JsonObject,
        dataset: str | None,
    ) -> None:
        self.server, self.options, self.journal, self.origin, self.dataset = server, options, journal, origin, dataset
        self.connections: dict[str, StreamableHTTPServerTransport] = {}
        self.pumps: dict[str, Pump] = {}
        #: POST requests being handled, per connection: a connection ends only once these have had their answers.
        self.posts: dict[str, int] = {}
        self._group: TaskGroup | None = None

    async def interrupt(self, reason: str) -> None:
        """The guard is stopping (SIGINT/SIGTERM): every connection answers its requests in flight with an error
        saying ``reason``, records its calls in flight as interrupted, delivers those answers and ends, its record
        closed (as over stdio); bounded by :data:`INTERRUPT_S`."""
        with anyio.move_on_after(INTERRUPT_S):
            for pump in list(self.pumps.values()):
                await pump.interrupt(reason)
            while self.connections:
                await anyio.sleep(POLL_S)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._request(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """The connections' task group lives from startup to shutdown; at shutdown every connection ends (its
        record closed) before uvicorn stops."""
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with anyio.create_task_group() as group:
            self._group = group
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            group.cancel_scope.cancel()
        self._group = None
        await send({"type": "lifespan.shutdown.complete"})

    async def _request(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        connection_id = headers.get(MCP_SESSION_ID_HEADER)
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await _unsupported(version)(scope, receive, send)
        elif connection_id is not None:
            transport = self.connections.get(connection_id)
            if transport is None:
                await _error_response("Session not found", 404)(scope, receive, send)
                return
            await self._counted(connection_id, transport.handle_request(scope, receive, send), scope)
            if transport.is_terminated:
                self.connections.pop(connection_id, None)
        elif len(self.connections) >= MAX_CONNECTIONS or self._group is None:
            await _error_response("Too many open sessions", 503)(scope, receive, send)
        else:
            await self._open(scope, receive, send)

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        connection_id = uuid4().hex
        transport = StreamableHTTPServerTransport(mcp_session_id=connection_id, idle_timeout=IDLE_TIMEOUT_S)
        self.connections[connection_id] = transport
        assert self._group is not None
        await self._group.start(self._run, transport)
        status: list[int] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await self._counted(connection_id, transport.handle_request(scope, receive, watch), scope)
        if not status or status[0] >= 400:  # nothing was established: no connection to keep
            self.connections.pop(connection_id, None)
            await transport.terminate()

    async def _counted(self, connection_id: str, handling: Any, scope: Scope) -> None:
        """Await ``handling`` (one request's handling), counted in :attr:`posts` when it is a POST."""
        post = scope.get("method") == "POST"
        if post:
            self.posts[connection_id] = self.posts.get(connection_id, 0) + 1
        try:
            await handling
        finally:
            if post and (left := self.posts.pop(connection_id, 1) - 1) > 0:
                self.posts[connection_id] = left

    async def _delivered(self, connection_id: str) -> None:
        """Wait, at most :data:`FLUSH_S`, for the connection's POSTs to finish: each answer the pump sent is
        written on its request's event stream by a task of the transport's, which closing the connection would
        cut off (the client would see its stream end without an answer)."""
        with anyio.move_on_after(FLUSH_S):
            while self.posts.get(connection_id):
                await anyio.sleep(POLL_S)

    async def _run(self, transport: StreamableHTTPServerTransport, *, task_status: TaskStatus[None]) -> None:
        connection_id = str(transport.mcp_session_id)
        try:
            async with transport.connect() as (client_read, client_write):
                task_status.started()
                await self._pump(connection_id, transport, Streams(client_read, client_write))
                await self._delivered(connection_id)
        except Exception as exc:  # one connection's failure (the upstream refused) never takes the others down
            print(f"prefix-exec guard: session {connection_id[:12]} ended: {exc}", file=sys.stderr, flush=True)
        finally:
            self.connections.pop(connection_id, None)
            self.pumps.pop(connection_id, None)
            with anyio.CancelScope(shield=True):
                await transport.terminate()

    async def _pump(self, connection_id: str, transport: StreamableHTTPServerTransport, client: Streams) -> None:
        guarded = new_connection(
            self.options,
            self.journal,
            transport="streamable-http",
            origin=self.origin,
            connection_id=connection_id,
            dataset=self.dataset,
        )
        pump: Pump | None = None
        try:
            async with _server_streams(self.server) as (server_read, server_write):
                http = isinstance(self.server, str)  # an HTTP upstream gets the protocol version header
                pump = Pump(client, Streams(server_read, server_write), guarded, self.options, version_header=http)
                self.pumps[connection_id] = pump
                idle = transport.idle_scope or anyio.CancelScope()
                with idle:
                    await pump.run()
                if idle.cancelled_caught:
                    guarded.log.end("idle timeout")
                    guarded.save()
        except Exception as exc:  # the upstream refused or broke: the client's requests in flight get the reason
            if pump is None:
                raise
            await pump.abandon(f"the {_named(self.origin)} failed: {_leaf(exc)}")


def _server_streams(server: str | list[str]) -> Any:
    """The SDK's client connection to ``server``: a Streamable HTTP URL, or a command started as a stdio server
    with the guard's environment (and stopped, every wait bounded, when the connection ends)."""
    if isinstance(server, str):
        return streamable_http_client(server)
    return stdio_client(StdioServerParameters(command=server[0], args=server[1:], env=dict(os.environ)))


def _named(origin: JsonObject) -> str:
    """The server as messages name it: ``upstream URL`` or ``server COMMAND`` (both with their secrets removed)."""
    if "upstream" in origin:
        return f"upstream {origin['upstream']}"
    command = origin.get("command")
    return f"server {' '.join(map(str, command)) if isinstance(command, list) else command}"


def _leaf(exc: BaseException) -> str:
    """The first underlying error of an exception group, in one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return short(exc) if isinstance(exc, Exception) else type(exc).__name__


def serve_http(
    host: str,
    port: int,
    server: str | list[str],
    options: GuardOptions,
    journal: Journal | None,
    *,
    origin: JsonObject,
    dataset: str | None = None,
    hosts: HostPolicy | None = None,
) -> None:
    """Serve until SIGINT or SIGTERM (then every request in flight is answered with an error and its call
    recorded as interrupted, every connection's record closed: :class:`_Server`). ``server`` is the upstream's
    URL, or the command of a stdio server started for each connection. Port 0 picks a free port; the address is
    printed on stderr either way. ``hosts``: the Host and Origin headers answered (:mod:`prefix_exec.guard.hosts`;
    None: the listener's own and loopback hosts, no origin), checked before anything else, so a refused request
    never reaches the server."""
    guard = GuardApp(server, options, journal, origin, dataset)
    limited = RequestBodyLimitMiddleware(guard, options.max_message_bytes)
    app = HostCheck(limited, hosts if hosts is not None else policy_for(host, [], []))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(2048)  # before the address is printed: a client that reads it can connect at once
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    print(
        f"prefix-exec guard: listening on http://{shown}:{bound}/ ({_named(origin)})",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
    _Server(config, guard).run(sockets=[sock])


class _Server(uvicorn.Server):
    """uvicorn's server, whose shutdown first lets every connection answer its requests in flight.

    Left to itself, a signal makes sse-starlette end every open event stream at once (its automatic drain), so a
    client whose call was in flight got an empty 200 and the call vanished from the record. Here the drain waits
    until the connections have answered (:meth:`GuardApp.interrupt`), then runs as before.
    """

    def __init__(self, config: uvicorn.Config, guard: GuardApp) -> None:
        super().__init__(config)
        self.guard = guard
        self.stopped_by: int | None = None
        AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]  # this process serves one app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.stopped_by = sig
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.stopped_by is not None:
            await self.guard.interrupt(f"the guard was stopped by {signal.Signals(self.stopped_by).name}")
        AppStatus.should_exit = True  # what is still open (a GET stream) is drained as uvicorn shuts down
        await super().shutdown(sockets)


def _error_response(text: str, status: int) -> Response:
    body = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=-32600, message=f"prefix-exec guard: {text}"))
    return Response(body.model_dump_json(by_alias=True, exclude_unset=True), status, media_type="application/json")


def _unsupported(version: str) -> Response:
    data = {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version}
    text = "prefix-exec guard keeps per-session state: use the initialize handshake"
    body = JSONRPCError(
        jsonrpc="2.0", id=None, error=ErrorData(code=UNSUPPORTED_PROTOCOL_VERSION, message=text, data=data)
    )
    return Response(body.model_dump_json(by_alias=True, exclude_unset=True), 400, media_type="application/json")
