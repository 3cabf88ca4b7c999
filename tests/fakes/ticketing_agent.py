"""A scripted model for the ticketing example: answers as executor, planner or verifier from the request.

Each task has a fixed script of executor steps (one list of calls per model call). The answer depends only
on the request body, so it is the same under any concurrency. ``close-printer`` starts with a call the
environment rejects (closing before logging in), so guard feedback and recovery are visible; its first plan
has the same mistake, which the verifier rejects once. ``broken-args`` (used by the malformed-JSON test)
is selected by the goal text "BROKEN".
"""

from __future__ import annotations

import json
import threading
from typing import Any

from fakes.openai_server import text_message, tool_message

Calls = list[tuple[str, Any]]

SCRIPTS: dict[str, list[Calls]] = {
    "find the VPN ticket": [
        [("login", {"username": "sam"})],
        [("search_tickets", {"query": "vpn"})],
        [("add_comment", {"ticket_id": "T-1001", "body": "A fix is rolling out."})],
    ],
    "Laptop fan noise": [
        [("login", {"username": "lee"})],
        [("create_ticket", {"title": "Laptop fan noise", "priority": "normal", "assignee": "dana"})],
    ],
    "T-1002 is fixed": [
        [("close_ticket", {"ticket_id": "T-1002", "resolution": "fixed"})],
        [("login", {"username": "dana"})],
        [("close_ticket", {"ticket_id": "T-1002", "resolution": "fixed"})],
    ],
    "raise the VPN ticket": [
        [("login", {"username": "dana"}), ("update_ticket", {"ticket_id": "T-1001", "priority": "high"})],
        [("update_ticket", {"ticket_id": "T-1001", "assignee": "lee"})],
    ],
    "Duplicate: VPN drops": [
        [("login", {"username": "sam"})],
        [("create_ticket", {"title": "Duplicate: VPN drops", "priority": "low"})],
        [("delete_ticket", {"ticket_id": "T-1003"})],
    ],
    "what the help desk can do": [],
    "BROKEN": [[("login", '{"username": "sam"')]],
}


def _goal(messages: list[dict[str, Any]]) -> str:
    return next(str(m.get("content")) for m in messages if m.get("role") == "user")


def _script(goal: str) -> list[Calls]:
    for marker, script in SCRIPTS.items():
        if marker in goal:
            return script
    raise KeyError(f"no script for goal {goal!r}")


def _plan(goal: str, revised: bool) -> dict[str, Any]:
    steps = [
        {"tool": name, "arguments": args if isinstance(args, dict) else {}, "bindings": {}}
        for calls in _script(goal)
        for name, args in calls
    ]
    if revised and steps and steps[0]["tool"] == "close_ticket":
        steps = steps[1:]
    return {"steps": steps}


def respond(body: dict[str, Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = body["messages"]
    system = str(messages[0].get("content") or "")
    if system.startswith("You are the PLANNER"):
        goal = _goal(messages).split("Goal:\n", 1)[1].split("\n\nTools:", 1)[0]
        revised = any("verifier found problems" in str(m.get("content")) for m in messages)
        return text_message("```json\n" + json.dumps(_plan(goal, revised)) + "\n```")
    if system.startswith("You are the VERIFIER"):
        plan = json.loads(_goal(messages).split("Plan:\n", 1)[1])
        if plan["steps"] and plan["steps"][0]["tool"] == "close_ticket":
            issue = {"step": 1, "check": "precondition", "message": "close_ticket needs a logged-in agent"}
            return text_message(json.dumps({"approved": False, "issues": [issue]}))
        return text_message(json.dumps({"approved": True, "issues": []}))
    if not body.get("tools") and "Before acting, write a short numbered plan" in str(messages[-1].get("content")):
        return text_message("1. log in\n2. do the task\n3. confirm")
    goal = _goal(messages)
    script = _script(goal)
    step = sum(
        1
        for m in messages
        if m.get("role") == "assistant" and (m.get("tool_calls") or "<tool_call>" in str(m.get("content") or ""))
    )
    if step >= len(script):
        return text_message("Done.")
    if body.get("tools"):
        return tool_message(script[step])
    blocks = "".join(
        "<tool_call>" + json.dumps({"name": n, "arguments": a if isinstance(a, dict) else {}}) + "</tool_call>"
        for n, a in script[step]
    )
    return text_message(blocks)


class HoldAfter:
    """:func:`respond`, except that once ``finished`` units have had their final answer ("Done."), every later
    request waits until :meth:`release`: a run can then never finish before the test acts on it (a signal, a
    kill), however slow or fast the machine, and the requests it has in flight hang as a slow model's do.
    Released, it answers everything at once from then on."""

    def __init__(self, finished: int) -> None:
        self.left = finished
        self._released = threading.Event()
        self._lock = threading.Lock()

    def release(self) -> None:
        self._released.set()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            held = self.left <= 0
        if held:
            self._released.wait(timeout=600)  # only a bound on a hang: the test releases it
        message = respond(body)
        if message.get("content") == "Done.":
            with self._lock:
                self.left -= 1
        return message
