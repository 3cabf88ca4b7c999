"""The stdio guard's own ends of the client's pipes, for :func:`mcp.server.stdio.stdio_server` (which takes any
``stdin`` it can iterate lines of and any ``stdout`` with ``write`` and ``flush``).

The SDK's defaults read and write through a worker thread, two thread hops per message each way; on pipes the
event loop can wait on the descriptors itself, and the guard does (:func:`open_stdin`, :func:`open_stdout`),
which is most of the latency a proxy adds. Where stdin or stdout is no pipe (a terminal, a regular file), the
reader falls back to a daemon thread and the writer to the SDK's own.

Every line is bounded (:class:`LineSplitter`): a line longer than the limit is skipped to its end, never held,
and stands as an :data:`~prefix_exec.guard.pump.OVERSIZE_METHOD` notification that the pump answers with an
error for the request (its id read from the line's first bytes).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
from collections import deque
from collections.abc import Iterator

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream
from mcp.types import JSONRPCNotification

from prefix_exec.guard.messages import HEAD_BYTES, OVERSIZE_METHOD, request_id_in

#: Bytes read at a time.
CHUNK = 1 << 16
#: Lines buffered between the fallback reader thread and the transport.
_QUEUE = 16


class LineSplitter:
    """Bytes in, lines of text out (each ending in a newline), none longer than ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._pending = b""
        self._skipping: tuple[bytes, int] | None = None  # (head, size so far) of an over-size line being skipped

    def feed(self, chunk: bytes) -> Iterator[str]:
        self._pending += chunk
        while True:
            end = self._pending.find(b"\n")
            if self._skipping is not None:
                head, size = self._skipping
                if end < 0:
                    self._skipping, self._pending = (head, size + len(self._pending)), b""
                    return
                self._skipping, self._pending = None, self._pending[end + 1 :]
                yield oversize(head, size + end)
            elif end < 0:
                if len(self._pending) > self.limit:
                    self._skipping, self._pending = (self._pending[:HEAD_BYTES], len(self._pending)), b""
                return
            elif end > self.limit:
                yield oversize(self._pending[:HEAD_BYTES], end)
                self._pending = self._pending[end + 1 :]
            else:
                yield self._pending[: end + 1].decode("utf-8", errors="replace")
                self._pending = self._pending[end + 1 :]


def oversize(head: bytes, size: int) -> str:
    """The notification that stands for an over-size line (with the request's id when its head shows it)."""
    params = {"id": request_id_in(head), "bytes": size}
    notice = JSONRPCNotification(jsonrpc="2.0", method=OVERSIZE_METHOD, params=params)
    return notice.model_dump_json(by_alias=True, exclude_unset=True) + "\n"


class PipeLines:
    """Lines of a pipe, read by the event loop; async-iterable. :meth:`close` ends the iteration."""

    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.ReadTransport, limit: int) -> None:
        self._reader, self._transport = reader, transport
        self._splitter = LineSplitter(limit)
        self._ready: deque[str] = deque()

    def close(self) -> None:
        self._transport.close()

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        while not self._ready:
            chunk = await self._reader.read(CHUNK)
            if not chunk:
                raise StopAsyncIteration
            self._ready.extend(self._splitter.feed(chunk))
        return self._ready.popleft()


class ThreadLines:
    """Lines of a descriptor, read by a daemon thread with ``os.read`` (for a stdin that is no pipe). A daemon
    never keeps the process alive on a stdin that stays open, and holds no Python buffered reader, whose lock a
    thread blocked in a read would hold while the interpreter exits (which aborts it)."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self._splitter = LineSplitter(limit)
        self._send, self._receive = anyio.create_memory_object_stream[str](_QUEUE)
        token = anyio.lowlevel.current_token()
        thread = threading.Thread(target=self._read, args=(self._send, token), name="prefix-exec-guard-stdin")
        thread.daemon = True
        thread.start()

    def close(self) -> None:
        self._receive.close()

    def __aiter__(self) -> ThreadLines:
        return self

    async def __anext__(self) -> str:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def _read(self, send: MemoryObjectSendStream[str], token: anyio.lowlevel.EventLoopToken) -> None:
        try:
            while chunk := os.read(self.fd, CHUNK):
                for line in self._splitter.feed(chunk):
                    anyio.from_thread.run(send.send, line, token=token)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, RuntimeError, OSError):
            pass  # the connection ended (or the loop is gone): nothing more to read for
        finally:
            with contextlib.suppress(RuntimeError):
                anyio.from_thread.run_sync(send.close, token=token)


async def open_stdin(fd: int, limit: int) -> PipeLines | ThreadLines:
    """Bounded lines of ``fd``: read by the event loop when it is a pipe, else by a daemon thread."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:  # stdin closed: the thread's first read ends the input
        mode = 0
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):  # asyncio takes a character device (/dev/null), then
        return ThreadLines(fd, limit)  # epoll refuses it in a callback: a traceback and no end of input, ever
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=CHUNK * 2)
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(fd), "rb", buffering=0)
        )
    except (ValueError, OSError):  # a regular file or anything the loop cannot wait on
        return ThreadLines(fd, limit)
    return PipeLines(reader, transport, limit)


class PipeOut:
    """The client's end of our stdout as the event loop writes it: ``write`` queues, ``flush`` waits until the
    pipe took it. :meth:`close` closes it, so the client sees the end of the connection at once."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8", errors="backslashreplace"))

    async def flush(self) -> None:
        await self._writer.drain()

    def close(self) -> None:
        self._writer.close()


async def open_stdout(fd: int) -> PipeOut | None:
    """Our stdout for the transport, or None when it is no pipe (the SDK's own writer is used then). Stray
    writes to ``fd`` (a library printing) go to stderr from now on, so they never mix into the messages."""
    loop = asyncio.get_running_loop()
    private = os.dup(fd)
    try:
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(private, "wb", buffering=0)
        )
    except (ValueError, OSError):
        os.close(private)
        return None
    os.dup2(2, fd)
    return PipeOut(asyncio.StreamWriter(transport, protocol, None, loop))
