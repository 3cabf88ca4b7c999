"""Agent variants sharing one turn loop: react, prompt-planning, plan-conditioned, dual-loop, its accept-all control,
guarded-react."""

from prefix_exec.agents.episode import Episode
from prefix_exec.agents.turn_loop import TurnLoop, TurnResult
from prefix_exec.agents.variants import Agent, AgentSettings
from prefix_exec.methods import METHODS, Method

__all__ = ["METHODS", "Agent", "AgentSettings", "Episode", "Method", "TurnLoop", "TurnResult"]
