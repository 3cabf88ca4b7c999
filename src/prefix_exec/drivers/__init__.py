"""Benchmark drivers: play an agent on a benchmark's tasks and produce canonical rollouts."""

from prefix_exec.drivers.base import Driver, Outcome, to_rollout

__all__ = ["Driver", "Outcome", "to_rollout"]
