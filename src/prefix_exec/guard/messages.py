"""JSON-RPC pieces the pump uses: the stream pairs, the errors it answers with, and the request id of a line
that could not be read whole (an over-size line, JSON the SDK's reader refuses).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from prefix_exec.json_types import JsonObject
from prefix_exec.trajectory import ToolCall, Verdict

#: The notification the stdio reader puts in place of a client line over the size bound (never forwarded).
OVERSIZE_METHOD = "prefix-exec/oversize"
#: What every message of the guard's own begins with.
PREFIX = "prefix-exec guard: "
# The top-level id of a JSON-RPC message, in the first bytes of a line that could not be read whole.
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')
#: The first bytes of a line that could not be read whole, where its id is looked for (and all pipes keep of it).
HEAD_BYTES = 4096


class Inbound(Protocol):
    def __aiter__(self) -> Inbound: ...
    async def __anext__(self) -> SessionMessage | Exception: ...


class Outbound(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


@dataclass
class Streams:
    """One side's stream pair, as an SDK transport yields it."""

    read: Inbound
    write: Outbound


@dataclass
class Pending:
    """A client request forwarded to the server and not answered yet (``perf_counter`` seconds)."""

    method: str
    received: float
    forwarded: float = 0.0
    call: ToolCall | None = None
    verdict: Verdict | None = None
    #: When the server last showed it was working on the request (a progress notification): the deadline counts
    #: from here, so a call that reports progress is not hung.
    alive: float = 0.0
    progress_token: int | str | None = None
    #: The task the call runs as (``tasks/result`` requests for it, :mod:`prefix_exec.guard.tasks`).
    task_id: str | None = None


def overdue(pending: Iterable[Pending], limit: float, *, client_gone: bool) -> str | None:
    """The method of a request in flight past its deadline (``limit`` seconds since it was forwarded or last showed
    progress), else None. ``tasks/result`` waits for a task's end by design (long work, whose ``tasks/get`` polls
    are timed) and is timed only once the client has gone."""
    now = time.perf_counter()
    for request in pending:
        if (request.method != "tasks/result" or client_gone) and now - max(request.forwarded, request.alive) > limit:
            return request.method
    return None


def error(request_id: int | str | None, code: int, text: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=text))


def oversize(notice: Any, limit: int) -> JSONRPCError:
    """The error for a client message over ``limit`` bytes, from the reader's notice in its place (its params).
    A client can send a notification of that name too: no field of it is trusted."""
    request_id, size = notice.get("id"), notice.get("bytes")
    seen = f" ({size:,} or more)" if isinstance(size, int) and not isinstance(size, bool) else ""
    known = request_id if isinstance(request_id, int | str) and not isinstance(request_id, bool) else None
    text = f"the message is larger than {limit:,} bytes{seen}; not passed on"
    return error(known, INVALID_REQUEST, PREFIX + text)


def malformed(exc: Exception) -> tuple[int | str | None, int, str]:
    """The id (when the line shows one), code and text of the error for a client line the transport could not
    read: a parse error, or an invalid request."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    request_id = None
    for seen in (e.get("input") for e in errors):
        if isinstance(seen, str) and _unreadable(errors):  # the line itself: JSON the reader refused
            request_id = request_id_in(seen.encode("utf-8", "replace"))
        elif isinstance(seen, dict) and isinstance(seen.get("id"), int | str) and not isinstance(seen["id"], bool):
            request_id = seen["id"]  # a JSON object that is no JSON-RPC message
        if request_id is not None:
            break
    inputs = [e.get("input") for e in errors]
    shown = next((_excerpt(i) for i in inputs if i is not None), "")  # what was sent, so a user sees it
    if _unreadable(errors):
        return request_id, PARSE_ERROR, PREFIX + "the message is not JSON (or not JSON this guard reads)" + shown
    text = "the message is not a JSON-RPC 2.0 request, notification or response"
    return request_id, INVALID_REQUEST, PREFIX + text + shown


#: How much of a refused client message an error quotes, in characters.
EXCERPT_CHARS = 120


def _excerpt(value: Any) -> str:
    text = value.rstrip("\r\n") if isinstance(value, str) else json.dumps(value, ensure_ascii=True, default=str)
    cut = text[:EXCERPT_CHARS].encode("ascii", "backslashreplace").decode("ascii")
    return f": {cut}{'...' if len(text) > EXCERPT_CHARS else ''}"


def _unreadable(errors: list[Any]) -> bool:
    return any(e.get("type") == "json_invalid" for e in errors)


def request_id_in(line: bytes) -> int | str | None:
    """The top-level id of a JSON-RPC message that could not be read whole, from its first bytes, or None.

    SDK clients write ``jsonrpc``, ``id``, ``method``, then ``params``; an id found after ``"params"`` could be a
    nested one and is not used, so a client that writes params first gets an error with id null (as JSON-RPC
    allows for a message whose id cannot be read)."""
    head = line[:HEAD_BYTES]
    match = _ID.search(head)
    if match is None or (b'"params"' in head and head.index(b'"params"') < match.start()):
        return None
    raw = match.group(1)
    try:
        found = json.loads(raw)
    except ValueError:
        return None
    return found if isinstance(found, int | str) else None


def short(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def identity(raw: Any) -> JsonObject | None:
    """``{"name", "version"}`` of a clientInfo/serverInfo object (each cut to 200 characters)."""
    if not isinstance(raw, dict):
        return None
    return {k: str(raw[k])[:200] for k in ("name", "version") if raw.get(k) is not None}


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)
