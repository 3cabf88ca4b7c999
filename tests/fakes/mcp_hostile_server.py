"""A misbehaving MCP server for the guard's hostile tests: newline-delimited JSON-RPC written by hand, on purpose
(a real SDK server cannot be made to write garbage or die mid-call).

It answers ``initialize`` and ``tools/list`` (tools ``echo``, ``die``, ``hang``, ``garbage``, ``huge``) and:
``echo`` returns its text; ``die`` exits (code 3) without answering; ``hang`` never answers (and keeps
reading); ``garbage`` writes a line that is not JSON-RPC; ``huge`` returns a text of ``size`` characters;
``slow`` answers after ``seconds``, sending a progress notification every 0.2 s meanwhile (to the request's
``_meta.progressToken``; none without one). Any
other method gets METHOD_NOT_FOUND, as servers answer unknown methods. With the environment variable
``HOSTILE_SILENT_LISTING`` set it never answers ``tools/list``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

#: Set in the environment: tools/list is never answered.
SILENT_LISTING = "HOSTILE_SILENT_LISTING"
TOOLS = [
    {"name": name, "inputSchema": {"type": "object", "properties": props}}
    for name, props in (
        ("echo", {"text": {"type": "string"}}),
        ("die", {}),
        ("hang", {}),
        ("garbage", {}),
        ("huge", {"size": {"type": "integer"}}),
        ("slow", {"seconds": {"type": "number"}}),
    )
]


def send(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def answer(request: dict[str, Any]) -> None:
    rid, method, params = request.get("id"), request.get("method"), request.get("params") or {}
    if rid is None:
        return  # a notification
    if method == "initialize":
        info = {"name": "hostile", "version": "0.1"}
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": info},
            }
        )
    elif method == "tools/list":
        if not os.environ.get(SILENT_LISTING):
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        token = (params.get("_meta") or {}).get("progressToken")
        if params.get("name") == "slow":
            slow(rid, float((params.get("arguments") or {}).get("seconds", 1)), token)
        call(rid, params.get("name"), params.get("arguments") or {})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"method not found: {method}"}})


def slow(rid: Any, seconds: float, token: Any) -> None:
    import time

    deadline = time.monotonic() + seconds
    step = 0
    while time.monotonic() < deadline:
        time.sleep(0.2)
        step += 1
        if token is not None:
            progress = {"progressToken": token, "progress": step}
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})


def call(rid: Any, name: str, args: dict[str, Any]) -> None:
    if name == "die":
        os._exit(3)
    if name == "hang":
        return
    if name == "garbage":
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
        return
    text = "x" * int(args.get("size", 0)) if name == "huge" else str(args.get("text", ""))
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}], "isError": False}})


for line in sys.stdin:
    if line.strip():
        answer(json.loads(line))
