"""``prompt-planning``: the executor model first writes a plan in the conversation; nothing enforces it.

The plan request rides in the user's message, with the tools listed in text, because the request itself
carries no tool schemas (again only when the tools changed since the last listing in this conversation). The
plan is a planner call (role ``planner``, no tools) on the executor's backend and conversation; a short user
message (:data:`PROMPT_PLAN_PROCEED`) follows it, so roles keep alternating.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from prefix_exec.agents.episode import Episode
from prefix_exec.agents.planning import PlanRequest, tools_listing
from prefix_exec.llm.types import ToolSchema

if TYPE_CHECKING:
    from prefix_exec.agents.variants import Agent

PROMPT_PLAN_REQUEST = (
    "Before acting, write a short numbered plan of the tool calls you will make. Do not call any tool in this message."
)
PROMPT_PLAN_PROCEED = "Now carry out your plan."


def prepare(agent: Agent, episode: Episode, request: PlanRequest) -> None:
    """Ask for the plan in the conversation, then hand the turn to the executor."""
    listed = None if episode.tools_listed == episode.tools else episode.tools
    episode.tools_listed = list(episode.tools)
    episode.say({"role": "user", "content": prompt_plan_request(request.goal, listed)}, given_text=request.goal)
    done = agent.executor.complete(episode.messages, (), role="planner")
    episode.charge(done)
    episode.say({"role": "assistant", "content": done.content or ""})
    episode.say({"role": "user", "content": PROMPT_PLAN_PROCEED}, given_text="")


def prompt_plan_request(content: str, tools: Sequence[ToolSchema] | None) -> str:
    """prompt-planning's user message: the request, the plan request and the tool listing (``None``: the tools
    are unchanged since they were last listed in this conversation, so they are not listed again)."""
    listing = (
        "The tools are the ones listed earlier in this conversation."
        if tools is None
        else (f"Tools:\n{tools_listing(tools)}")
    )
    return f"{content}\n\n{PROMPT_PLAN_REQUEST}\n\n{listing}"
