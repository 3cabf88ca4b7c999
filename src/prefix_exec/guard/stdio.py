"""The stdio guard: the client launches ``prefix-exec guard -- COMMAND`` in place of the server.

The SDK's own transports carry the messages: :func:`mcp.server.stdio.stdio_server` towards the client (our
stdin and stdout) and :func:`mcp.client.stdio.stdio_client` towards the real server, which it starts as a
child process with our environment and stops (stdin closed, then SIGTERM, then SIGKILL, every wait bounded)
when the connection ends. Between them runs the :class:`~prefix_exec.guard.pump.Pump`.

Our stdin and stdout are read and written by the event loop itself (:mod:`prefix_exec.guard.pipes`), each
line bounded; nothing waits on a stdin that stays open: when the server ends the connection, the guard answers
what is in flight, closes its stdout and exits, so the client sees the end at once. SIGTERM (and SIGINT,
unless it was ignored when the guard started) ends the connection the same way, with the record closed.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server

from prefix_exec.guard.connection import GuardedConnection
from prefix_exec.guard.messages import Streams, short
from prefix_exec.guard.options import GuardOptions
from prefix_exec.guard.pipes import open_stdin, open_stdout
from prefix_exec.guard.pump import Pump
from prefix_exec.records.redaction import redact_url

#: Longest wait, at the end of a connection, for the client to take what the guard still has to write (seconds).
FLUSH_S = 5.0


async def serve_stdio(
    command: list[str], connection: GuardedConnection, options: GuardOptions, *, upstream: str | None = None
) -> str:
    """Run one stdio connection: our stdin/stdout to the client, ``command`` as the server; returns why it ended.
    With ``upstream`` (a Streamable HTTP URL) the server is that endpoint instead: the guard bridges a stdio client
    to an HTTP server (``prefix-exec guard --upstream URL`` without ``--listen``).

    Raises :class:`OSError` when the server cannot be started (the CLI says so and exits).
    """
    reader = await open_stdin(sys.stdin.fileno(), options.max_message_bytes)
    writer = await open_stdout(sys.stdout.fileno())
    if upstream is not None:
        opener: Any = streamable_http_client(upstream)
    else:
        opener = stdio_client(StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ)))
    reason = "the guard stopped"
    async with anyio.create_task_group() as signals:
        with anyio.CancelScope() as bounded:
            async with stdio_server(stdin=reader, stdout=writer) as (client_read, client_write):  # type: ignore[arg-type]
                pump: Pump | None = None
                try:
                    async with opener as streams:
                        client, server = Streams(client_read, client_write), Streams(streams[0], streams[1])
                        pump = Pump(client, server, connection, options, version_header=upstream is not None)
                        signals.start_soon(_on_signals, pump)
                        reason = await pump.run()
                except Exception as exc:  # a bridged upstream refused or broke: what is in flight gets the reason
                    if pump is None or upstream is None:
                        raise
                    reason = f"the upstream {redact_url(upstream)} failed: {_leaf(exc)}"
                    await pump.abandon(reason)
                finally:
                    # Everything the pump sent is written and flushed before stdout closes (the transport's
                    # writer ends once its stream is closed, and its reader once ours stops), within a bound.
                    await client_write.aclose()
                    reader.close()
                    bounded.deadline = anyio.current_time() + FLUSH_S
        if writer is not None:
            writer.close()
        signals.cancel_scope.cancel()
    return reason


def _leaf(exc: BaseException) -> str:
    """The first underlying error of an exception group, in one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return short(exc) if isinstance(exc, Exception) else type(exc).__name__


async def _on_signals(pump: Pump) -> None:
    """End the connection (record closed) on SIGTERM, and on SIGINT unless it was ignored at start."""
    signals = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signals.append(signal.SIGINT)
    with anyio.open_signal_receiver(*signals) as received:
        async for number in received:
            await pump.interrupt(f"the guard was stopped by {signal.Signals(number).name}")
            return
