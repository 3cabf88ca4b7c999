"""State effects and preconditions of the example ticketing API (see tools.yaml).

Each hook takes ``(state, args)``: ``state`` is the session's JSON-like state, ``args`` the schema-valid
arguments. Preconditions return ``None`` when they hold, or a reason string (a ``precondition`` failure).
Effects change ``state`` and return the tool's result, or a ``Reject`` when the transition is not accepted.
"""

from __future__ import annotations

from typing import Any

from prefix_exec import Reject

State = dict[str, Any]
Args = dict[str, Any]


def require_login(state: State, args: Args) -> str | None:
    return None if state["user"] else "no agent is logged in; call login first"


def login(state: State, args: Args) -> Any:
    if state["user"] == args["username"]:
        return Reject("state_consistency", f"{args['username']} is already logged in")
    state["user"] = args["username"]
    return {"user": args["username"]}


def search_tickets(state: State, args: Args) -> Any:
    wanted = args.get("status", "any")
    words = args["query"].lower().split()
    hits = [
        {"ticket_id": tid, "title": t["title"], "status": t["status"]}
        for tid, t in sorted(state["tickets"].items())
        if all(w in t["title"].lower() for w in words) and wanted in ("any", t["status"])
    ]
    return {"results": hits}


def create_ticket(state: State, args: Args) -> Any:
    assignee = args.get("assignee")
    if assignee is not None and assignee not in state["agents"]:
        return Reject("information", f"no agent named {assignee!r}")
    tid = f"T-{state['next_id']}"
    state["next_id"] += 1
    state["tickets"][tid] = {
        "title": args["title"], "status": "open", "priority": args["priority"], "assignee": assignee,
        "comments": [],
    }
    return {"ticket_id": tid}


def get_ticket(state: State, args: Args) -> Any:
    return {"ticket_id": args["ticket_id"], **state["tickets"][args["ticket_id"]]}


def _open_ticket(state: State, tid: str) -> dict[str, Any] | Reject:
    ticket: dict[str, Any] = state["tickets"][tid]
    if ticket["status"] != "open":
        return Reject("state_consistency", f"ticket {tid} is {ticket['status']}")
    return ticket


def add_comment(state: State, args: Args) -> Any:
    ticket = _open_ticket(state, args["ticket_id"])
    if isinstance(ticket, Reject):
        return ticket
    ticket["comments"].append({"by": state["user"], "body": args["body"]})
    return {"comments": len(ticket["comments"])}


def update_ticket(state: State, args: Args) -> Any:
    ticket = _open_ticket(state, args["ticket_id"])
    if isinstance(ticket, Reject):
        return ticket
    if "assignee" in args and args["assignee"] not in state["agents"]:
        return Reject("information", f"no agent named {args['assignee']!r}")
    ticket.update({k: v for k, v in args.items() if k in ("priority", "assignee")})
    return {"ticket_id": args["ticket_id"], "priority": ticket["priority"], "assignee": ticket["assignee"]}


def close_ticket(state: State, args: Args) -> Any:
    ticket = _open_ticket(state, args["ticket_id"])
    if isinstance(ticket, Reject):
        return ticket
    ticket["status"] = "closed"
    return {"ticket_id": args["ticket_id"], "status": "closed"}


def delete_ticket(state: State, args: Args) -> Any:
    del state["tickets"][args["ticket_id"]]
    return {"deleted": args["ticket_id"]}
