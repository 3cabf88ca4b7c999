"""Tool calls run as tasks (MCP 2025-11-25): the call is checked when it is made and settled when its result comes.

A client asks for a task by putting ``task`` in a ``tools/call``'s params. A server that runs it so answers at once
with a :class:`~mcp.types.CreateTaskResult` (``{"task": {"taskId", "status", ...}}``) instead of the tool's result;
the client then polls ``tasks/get`` and fetches the result with ``tasks/result``, which the server answers, once
the task has ended, with the :class:`~mcp.types.CallToolResult` (or the JSON-RPC error) the call would have had.

The guard checks the call when it is made, as any call (a blocked call is answered with its block, a normal
tool result, which the specification lets a receiver give in place of a task). A forwarded call whose answer is a
task is kept here, by task id, and settled (recorded, its result stepping the live session, its postcondition
checked) when a ``tasks/result`` for that task is answered: :class:`Tasks` turns that request into one in flight
for the call. ``tasks/cancel`` settles it as a cancelled call, as ``notifications/cancelled`` does a plain one.
A task whose result was never fetched is settled when the connection ends, its outcome unknown. Such calls are
recorded without an observation (as replay reads a log that has none), their entry's ``outcome`` saying why.

Every message is read with the SDK's types; nothing here writes a message.
"""

from __future__ import annotations

from dataclasses import replace

from mcp.types import CancelTaskRequestParams, CreateTaskResult, GetTaskPayloadRequestParams
from pydantic import ValidationError

from prefix_exec.guard.messages import Pending
from prefix_exec.json_types import JsonMapping

#: Most tasks a connection may have open at once (a task never fetched is kept until the connection ends).
MAX_TASKS = 10_000
#: The ``outcome`` of a call run as a task whose result the client did not fetch before the connection ended.
UNFETCHED = "unfetched"
#: The ``outcome`` of a call the client cancelled before its result (``notifications/cancelled``, ``tasks/cancel``).
CANCELLED = "cancelled"
#: The ``outcome`` of a call answered with neither a tool result nor a task the SDK's types read (a server's fault).
UNREADABLE = "unreadable"


def task_of(result: JsonMapping) -> str | None:
    """The task id of a ``tools/call`` answer that is a :class:`~mcp.types.CreateTaskResult`, else None."""
    if "task" not in result or "content" in result:
        return None
    try:
        return CreateTaskResult.model_validate(result, by_name=False).task.task_id
    except ValidationError:
        return None


class Tasks:
    """The task-run calls of one connection not settled yet, by task id."""

    def __init__(self) -> None:
        self.open: dict[str, Pending] = {}

    def keep(self, pending: Pending, task_id: str) -> Pending | None:
        """Keep the call ``pending``, whose answer was task ``task_id``, until its result is fetched. Past
        :data:`MAX_TASKS` open tasks the oldest is let go and returned (to be settled as unfetched)."""
        self.open[task_id] = replace(pending, task_id=task_id)
        if len(self.open) <= MAX_TASKS:
            return None
        oldest = next(iter(self.open))
        return self.open.pop(oldest)

    def fetching(self, params: JsonMapping, received: float) -> Pending | None:
        """For a ``tasks/result`` request: the request in flight for the task's call (its times are the call's, so
        ``server_ms`` spans the whole task), or None when it names no task of this connection's."""
        task_id = _task_id(GetTaskPayloadRequestParams, params)
        task = self.open.get(task_id) if task_id is not None else None
        if task is None:
            return None
        return replace(task, method="tasks/result", alive=received)

    def claim(self, pending: Pending) -> bool:
        """Whether the answer to ``pending`` settles its task (the first answer does; a second ``tasks/result`` for
        a task already settled is passed on and not recorded again)."""
        return pending.task_id is not None and self.open.pop(pending.task_id, None) is not None

    def cancelled(self, params: JsonMapping) -> Pending | None:
        """For a ``tasks/cancel`` request: the task's call, no longer open, or None when it names no open task."""
        task_id = _task_id(CancelTaskRequestParams, params)
        return self.open.pop(task_id, None) if task_id is not None else None

    def left(self) -> list[Pending]:
        """The calls whose task results were never fetched, in the order they were made; none is open after."""
        left, self.open = list(self.open.values()), {}
        return left


def _task_id(
    params_type: type[GetTaskPayloadRequestParams] | type[CancelTaskRequestParams], params: JsonMapping
) -> str | None:
    try:
        return params_type.model_validate(params, by_name=False).task_id
    except ValidationError:
        return None
