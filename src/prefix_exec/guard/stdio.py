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
import signal
import sys
import threading
from collections.abc import Iterator

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.stdio import stdio_server
from mcp.types import JSONRPCNotification

from prefix_exec.guard.options import GuardOptions
from prefix_exec.guard.pump import OVERSIZE_METHOD, Pump, Streams, request_id_in
from prefix_exec.guard.session import GuardedSession

#: Lines buffered between the reader thread and the transport.
_QUEUE = 16
#: Bytes read at a time, and kept of an over-size line (where its id is looked for).
_CHUNK = 1 << 16
_HEAD_BYTES = 4096
#: Longest wait, at the end of a session, for the client to take what the guard still has to write (seconds).
FLUSH_S = 5.0


class BoundedLines:
    """Lines of a file descriptor as text, each at most ``limit`` bytes, read by a daemon thread.

    Async-iterable, as :func:`stdio_server` takes its ``stdin``; :meth:`close` ends the iteration. The thread
    reads the descriptor with ``os.read`` (no Python buffered reader, whose lock a daemon thread blocked in a
    read would hold while the interpreter exits, which aborts it).
    """

    def __init__(self, fd: int, limit: int) -> None:
        self.fd, self.limit = fd, limit
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
            for text in self._lines():
                anyio.from_thread.run(send.send, text, token=token)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, RuntimeError, OSError):
            pass  # the session ended (or the loop is gone): nothing more to read for
        finally:
            with contextlib.suppress(RuntimeError):
                anyio.from_thread.run_sync(send.close, token=token)

    def _lines(self) -> Iterator[str]:
        """Each line as text; a line over the bound as the notification that stands for it."""
        pending = b""
        skipping: tuple[bytes, int] | None = None  # (head, size so far) of an over-size line being skipped
        while chunk := os.read(self.fd, _CHUNK):
            pending += chunk
            while True:
                end = pending.find(b"\n")
                if skipping is not None:
                    head, size = skipping
                    if end < 0:
                        skipping, pending = (head, size + len(pending)), b""
                        break
                    skipping, pending = None, pending[end + 1 :]
                    yield _oversize(head, size + end)
                elif end < 0:
                    if len(pending) > self.limit:
                        skipping, pending = (pending[:_HEAD_BYTES], len(pending)), b""
                    break
                elif end > self.limit:
                    yield _oversize(pending[:_HEAD_BYTES], end)
                    pending = pending[end + 1 :]
                else:
                    yield pending[: end + 1].decode("utf-8", errors="replace")
                    pending = pending[end + 1 :]


def _oversize(head: bytes, size: int) -> str:
    """The notification that stands for an over-size line (with the request's id when its head shows it)."""
    params = {"id": request_id_in(head), "bytes": size}
    notice = JSONRPCNotification(jsonrpc="2.0", method=OVERSIZE_METHOD, params=params)
    return notice.model_dump_json(by_alias=True, exclude_unset=True) + "\n"


async def serve_stdio(command: list[str], session: GuardedSession, options: GuardOptions) -> str:
    """Run one stdio session: our stdin/stdout to the client, ``command`` as the server; returns why it ended.

    Raises :class:`OSError` when the server cannot be started (the CLI says so and exits).
    """
    reader = BoundedLines(sys.stdin.fileno(), options.max_message_bytes)
    reader.start()
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    reason = "the guard stopped"
    async with anyio.create_task_group() as signals:
        with anyio.CancelScope() as bounded:
            async with stdio_server(stdin=reader) as (client_read, client_write):  # type: ignore[arg-type]
                try:
                    async with stdio_client(params) as (server_read, server_write):
                        client, server = Streams(client_read, client_write), Streams(server_read, server_write)
                        pump = Pump(client, server, session, options)
                        signals.start_soon(_on_signals, pump)
                        reason = await pump.run()
                finally:
                    # Everything the pump sent is written and flushed before stdout closes (the transport's
                    # writer ends once its stream is closed, and its reader once ours stops), within a bound.
                    await client_write.aclose()
                    reader.close()
                    bounded.deadline = anyio.current_time() + FLUSH_S
        signals.cancel_scope.cancel()
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
