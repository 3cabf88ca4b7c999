"""A misbehaving MCP server for the guard's hostile tests: newline-delimited JSON-RPC written by hand, on purpose
(a real SDK server cannot be made to write garbage or die mid-call).

It answers ``initialize`` and ``tools/list`` (tools ``echo``, ``die``, ``hang``, ``garbage``, ``huge``) and:
``echo`` returns its text; ``die`` exits (code 3) without answering; ``hang`` never answers (and keeps
reading); ``garbage`` writes a line that is not JSON-RPC; ``huge`` returns a text of ``size`` characters;
``slow`` answers after ``seconds``, sending a progress notification every 0.2 s meanwhile (to the request's
``_meta.progressToken``; none without one). A ``tools/call`` with ``task`` in its params runs as a task (MCP
2025-11-25): the answer is the task (``T-<request id>``; an ``echo`` of ``bad-task`` gets a task the SDK's types
refuse), ``tasks/result`` answers with the call's result (an unknown task gets an error, as do the results of
``garbage-result``, a result with neither content nor task), ``tasks/cancel`` cancels it. Any
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
    elif method == "tools/call" and "task" in params:
        start_task(rid, params.get("name"), params.get("arguments") or {})
    elif method in ("tasks/result", "tasks/cancel"):
        end_task(rid, method, str(params.get("taskId")))
    elif method == "tools/call":
        token = (params.get("_meta") or {}).get("progressToken")
        if params.get("name") == "slow":
            slow(rid, float((params.get("arguments") or {}).get("seconds", 1)), token)
        call(rid, params.get("name"), params.get("arguments") or {})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"method not found: {method}"}})


#: The open tasks: task id -> the text their result echoes.
TASKS: dict[str, str] = {}
NOW = "2026-01-01T00:00:00Z"


def start_task(rid: Any, name: str, args: dict[str, Any]) -> None:
    text = str(args.get("text", ""))
    if text == "bad-task":
        send({"jsonrpc": "2.0", "id": rid, "result": {"task": {"taskId": 5}}})
        return
    TASKS[f"T-{rid}"] = text
    task = {"taskId": f"T-{rid}", "status": "working", "createdAt": NOW, "lastUpdatedAt": NOW, "ttl": None}
    send({"jsonrpc": "2.0", "id": rid, "result": {"task": task}})


def end_task(rid: Any, method: str, task_id: str) -> None:
    if task_id not in TASKS:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"no task {task_id}"}})
    elif method == "tasks/cancel":
        del TASKS[task_id]
        task = {"taskId": task_id, "status": "cancelled", "createdAt": NOW, "lastUpdatedAt": NOW, "ttl": None}
        send({"jsonrpc": "2.0", "id": rid, "result": task})
    elif TASKS[task_id] == "garbage-result":
        send({"jsonrpc": "2.0", "id": rid, "result": {"nothing": True}})
    else:
        result = {"content": [{"type": "text", "text": TASKS[task_id]}], "isError": False}
        send({"jsonrpc": "2.0", "id": rid, "result": result})


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
