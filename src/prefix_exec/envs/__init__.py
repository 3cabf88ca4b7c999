"""Environments that check and apply tool actions. One module per benchmark; ``base`` holds the protocol."""

from prefix_exec.envs.base import Environment, Session

__all__ = ["Environment", "Session"]
