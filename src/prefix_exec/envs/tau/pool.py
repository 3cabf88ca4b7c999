"""tau3's domains as one environment: the task id ``<domain>/<id>`` picks the domain (:mod:`envs.tau.pooled`).

tau3 is one dataset (airline + retail, 164 tasks). Each domain keeps its own :class:`TauEnvironment` (its
database, tools and tasks); a :class:`TauPool` sends each task to its domain's, so a driver or scorer that
serves the pooled dataset needs no knowledge of which domain a task came from.
"""

from __future__ import annotations

from collections.abc import Mapping

from prefix_exec.envs.tau.pooled import TAU3, domain_of
from prefix_exec.envs.tau.session import RolloutEnvironment, TauEnvironment, TauSession
from prefix_exec.trajectory import Rollout


class TauPool:
    """``envs`` maps a domain name to its environment (one or more). ``name`` is the pooled dataset's."""

    def __init__(self, envs: Mapping[str, TauEnvironment], name: str = TAU3) -> None:
        if not envs:
            raise ValueError("a tau pool needs at least one domain")
        self.envs = dict(envs)
        self.name = name

    def part(self, task_id: str) -> TauEnvironment:
        """The environment of ``task_id``'s domain. A bare id is allowed when the pool holds one domain.

        Raises ``KeyError`` for a domain the pool does not hold, or a bare id in a pool of several."""
        domain = domain_of(task_id)
        if domain is None:
            if len(self.envs) == 1:
                return next(iter(self.envs.values()))
            raise KeyError(f"{task_id!r} names no domain; tau3 task ids read <domain>/<id>, e.g. airline/{task_id}")
        if domain not in self.envs:
            raise KeyError(f"{task_id!r}: no {domain} domain here (domains: {', '.join(self.envs)})")
        return self.envs[domain]

    def start(self, task_id: str) -> TauSession:
        """A strict session of the task (see :meth:`TauEnvironment.start`)."""
        session = self.part(task_id).start(task_id)
        assert isinstance(session, TauSession)
        return session

    def bind(self, rollout: Rollout) -> RolloutEnvironment:
        """The rollout's domain environment bound to its transcript (:meth:`TauEnvironment.bind`)."""
        return self.part(rollout.task_id).bind(rollout)
