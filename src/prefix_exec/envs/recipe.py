"""How a worker process builds an environment it cannot be sent: the function and arguments that built it.

Most environments hold things that do not pickle (compiled JSON Schema validators, a user's hooks module,
tau2's tool objects) or are large (a tau2 domain's DB). ``score --workers N`` sends each worker a
:class:`Recipe` instead, once per environment, and the worker builds the environment once from it: from the same
spec file, tools list or tau2 tasks the command read (:mod:`prefix_exec.scoring.pool.dispatch`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prefix_exec.json_types import JsonObject


@dataclass(frozen=True)
class Recipe:
    """``build(*args, **kwargs)`` gives an environment (or an ``EnvFor``, :data:`prefix_exec.scoring.units.EnvFor`).

    ``build`` must be a module-level function (pickled by name) and the arguments plain data: paths, parsed JSON,
    an :class:`envs.custom.evidence.EvidencePolicy`. Building must be deterministic: the worker's environment
    must score every rollout as the one in the reading process does.
    """

    build: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: JsonObject = field(default_factory=dict)

    def make(self) -> Any:
        """The environment, built now."""
        return self.build(*self.args, **self.kwargs)
