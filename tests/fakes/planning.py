"""Scripted answers to the agents' planning requests, for the fakes whose interest is the executor's calls.

The agents' requests are told apart as the planning variants send them: the planner's and the verifier's by
their system prompts, prompt-planning's plan request by having no tools and asking "Before acting" last.
"""

from __future__ import annotations

import json
from typing import Any

from fakes.openai_server import text_message


def planning_answer(body: dict[str, Any], plan: str) -> dict[str, Any] | None:
    """An empty plan for the planner, an approval for the verifier, ``plan`` (text) for prompt-planning's
    plan request; ``None`` for any other request (the executor's, or a simulated user's)."""
    messages: list[dict[str, Any]] = body["messages"]
    system = str(messages[0].get("content") or "")
    if system.startswith("You are the PLANNER"):
        return text_message(json.dumps({"steps": []}))
    if system.startswith("You are the VERIFIER"):
        return text_message(json.dumps({"approved": True, "issues": []}))
    if not body.get("tools") and "Before acting" in str(messages[-1].get("content")):
        return text_message(plan)
    return None
