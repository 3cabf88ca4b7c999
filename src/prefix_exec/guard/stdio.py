"""The stdio guard: the client launches ``prefix-exec guard -- COMMAND`` in place of the server.

The SDK's own transports carry the messages: :func:`mcp.server.stdio.stdio_server` towards the client (our
stdin and stdout) and :func:`mcp.client.stdio.stdio_client` towards the real server, which it starts as a
child process with our environment and stops (stdin closed, then SIGTERM, then SIGKILL, every wait bounded)
when the session ends. Between them runs the :class:`~prefix_exec.guard.pump.Pump`.

Our stdin is read by :class:`BoundedLines`, a daemon thread that never holds more than the size bound of one
line: a longer line is skipped to its end and replaced by an :data:`~prefix_exec.guard.pump.OVERSIZE_METHOD`
notification (the pump answers the request with an error). Being a daemon, it never keeps the process alive
on a stdin that stays open: when the server ends the session, the guard answers what is in flight, closes its
stdout and exits, so the client sees the end at once. SIGTERM (and SIGINT, unless it was ignored when the
guard started) ends the session the same way, with the record closed.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
from typing import IO

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.stdio import stdio_server
from mcp.types import JSONRPCNotification

from prefix_exec.guard.options import GuardOptions
from prefix_exec.guard.pump import OVERSIZE_METHOD, Pump, Streams
from prefix_exec.guard.session import GuardedSession

#: Lines buffered between the reader thread and the transport.
_QUEUE = 16
# The top-level id of a JSON-RPC message, looked for in the first bytes of an over-size line (SDK clients
# write "jsonrpc", "id", "method", then "params"); an id after '"params"' could be a nested one and is not used.
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')
_HEAD = 4096


class BoundedLines:
    """Lines of a binary stream as text, each at most ``limit`` bytes, read by a daemon thread.

    Async-iterable, as :func:`stdio_server` takes its ``stdin``; :meth:`close` ends the iteration.
    """

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self.stream, self.limit = stream, limit
        self._send, self._receive = anyio.create_memory_object_stream[str](_QUEUE)

    def start(self) -> None:
        """Start the reader thread (call from the event loop)."""
        token = anyio.lowlevel.current_token()
        thread = threading.Thread(target=self._read, args=(self._send, token), name="prefix-exec-guard-stdin")
        thread.daemon = True
        thread.start()

    def close(self) -> None:
        self._receive.close()

    def __aiter__(self) -> BoundedLines:
        return self

    async def __anext__(self) -> str:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def _read(self, send: MemoryObjectSendStream[str], token: anyio.lowlevel.EventLoopToken) -> None:
        try:
            while True:
                line = self.stream.readline(self.limit + 1)
                if not line:
                    break
                if len(line) > self.limit and not line.endswith(b"\n"):
                    text = self._oversize(line)
                else:
                    text = line.decode("utf-8", errors="replace")
                anyio.from_thread.run(send.send, text, token=token)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, RuntimeError, OSError, ValueError):
            pass  # the session ended (or the loop is gone): nothing more to read for
        finally:
            with contextlib.suppress(RuntimeError):
                anyio.from_thread.run_sync(send.close, token=token)

    def _oversize(self, head: bytes) -> str:
        """Skip the rest of an over-size line; the notification that stands for it (with the request's id when
        the line's head shows it)."""
        size = len(head)
        while True:
            chunk = self.stream.readline(1 << 20)
            size += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                break
        start = head[:_HEAD]
        match = _ID.search(start)
        request_id: int | str | None = None
        if match is not None and (b'"params"' not in start or start.index(b'"params"') > match.start()):
            raw = match.group(1)
            request_id = int(raw) if raw[:1] != b'"' else raw[1:-1].decode("utf-8", errors="replace")
        notice = JSONRPCNotification(jsonrpc="2.0", method=OVERSIZE_METHOD, params={"id": request_id, "bytes": size})
        return notice.model_dump_json(by_alias=True, exclude_unset=True) + "\n"


async def serve_stdio(command: list[str], session: GuardedSession, options: GuardOptions) -> str:
    """Run one stdio session: our stdin/stdout to the client, ``command`` as the server; returns why it ended.

    Raises :class:`OSError` when the server cannot be started (the CLI says so and exits).
    """
    reader = BoundedLines(sys.stdin.buffer, options.max_message_bytes)
    reader.start()
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    reason = "the guard stopped"
    async with anyio.create_task_group() as group, stdio_server(stdin=reader) as (client_read, client_write):  # type: ignore[arg-type]
        try:
            async with stdio_client(params) as (server_read, server_write):
                pump = Pump(Streams(client_read, client_write), Streams(server_read, server_write), session, options)
                group.start_soon(_on_signals, pump)
                reason = await pump.run()
        finally:
            # What the pump sent is written before stdout closes; then the reader stops, and the client sees
            # the end of the session (our stdout closes when the process exits).
            await client_write.aclose()
            reader.close()
            group.cancel_scope.cancel()
    return reason


async def _on_signals(pump: Pump) -> None:
    """End the session (record closed) on SIGTERM, and on SIGINT unless it was ignored at start."""
    signals = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signals.append(signal.SIGINT)
    with anyio.open_signal_receiver(*signals) as received:
        async for number in received:
            pump.stop(f"stopped by {signal.Signals(number).name}")
            return
