"""Agent variants sharing one executor: react, prompt-planning, plan-conditioned, dual-loop, its accept-all control,
guarded-react."""

from prefix_exec.agents.episode import Episode
from prefix_exec.agents.executor import Executor, TurnResult
from prefix_exec.agents.variants import Agent, AgentSettings
from prefix_exec.methods import METHODS, Method

__all__ = ["METHODS", "Agent", "AgentSettings", "Episode", "Executor", "Method", "TurnResult"]
