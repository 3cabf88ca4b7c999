"""The shop of examples/transcripts as real tool functions, and the scripted model that replays each conversation's
assistant turns (scripts/traces/generate.py runs them under each framework)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONVERSATIONS = ROOT / "examples" / "transcripts" / "openai-chat.jsonl"

# --- the shop: real tool functions ------------------------------------------------------------------------------
ORDERS = {
    "O-1001": {"status": "processing", "items": ["kettle"]},
    "O-1002": {"status": "processing", "items": ["lamp"]},
    "O-1003": {"status": "shipped", "items": ["mug"]},
    "O-1004": {"status": "shipped", "items": ["desk"]},
}
EMAILS = {"sam@example.com": "O-1001", "kim@example.com": "O-1004", "lee@example.com": "O-1005"}
REASONS = ("no_longer_needed", "ordered_by_mistake", "other")


def find_order(email: str) -> str:
    """Find a customer's latest order by their email."""
    if email not in EMAILS:
        raise LookupError(f"no customer with the email {email}")
    return json.dumps({"order_id": EMAILS[email]})


def get_order(order_id: str) -> str:
    """Get an order's items and status."""
    if order_id not in ORDERS:
        raise LookupError(f"order {order_id} not found")
    return json.dumps({"order_id": order_id, **ORDERS[order_id]})


def cancel_order(order_id: str, reason: str) -> str:
    """Cancel an order that has not shipped."""
    if reason not in REASONS:
        raise ValueError(f"reason must be one of {', '.join(REASONS)}")
    if order_id not in ORDERS:
        raise LookupError(f"order {order_id} not found")
    return json.dumps({"order_id": order_id, "status": "cancelled"})


def send_email(to: str, body: str, subject: str = "") -> str:
    """Send an email to a customer."""
    return json.dumps({"sent": True})


FUNCTIONS: dict[str, Callable[..., str]] = {f.__name__: f for f in (find_order, get_order, cancel_order, send_email)}


def run_tool(name: str, arguments: str) -> tuple[str, Exception | None]:
    """A tool's reply text and the exception it raised, as a hand-written agent loop runs tools."""
    try:
        function = FUNCTIONS[name]
    except KeyError:
        exc: Exception = LookupError(f"unknown tool {name}")
        return f"Error: {exc}", exc
    try:
        return function(**json.loads(arguments)), None
    except Exception as exc:  # the tool refused: the loop tells the model, as agents do
        text = str(exc) if not isinstance(exc, TypeError) else "body is required"
        return f"Error: {text}", exc


# --- the scripted model ------------------------------------------------------------------------------------------
def conversations() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CONVERSATIONS.read_text().splitlines() if line.strip()]


def responder(convs: list[dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Answer each request with the next assistant message of the conversation its first user message names."""
    by_first = {next(m["content"] for m in c["messages"] if m["role"] == "user"): c for c in convs}

    def respond(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        first = next(m["content"] for m in messages if m["role"] == "user")
        first = first if isinstance(first, str) else first[0]["text"]
        scripted = [m for m in by_first[first]["messages"] if m["role"] == "assistant"]
        answer = dict(scripted[sum(1 for m in messages if m["role"] == "assistant")])
        answer.pop("name", None)
        return answer

    return respond


def segments(conv: dict[str, Any]) -> list[str]:
    """The user turns of one conversation."""
    return [m["content"] for m in conv["messages"] if m["role"] == "user"]


def system_of(conv: dict[str, Any]) -> str:
    return next((m["content"] for m in conv["messages"] if m["role"] == "system"), "You are a support agent.")
