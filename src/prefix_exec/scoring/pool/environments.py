"""The environments of one ``score --workers N`` run as its workers get them (:mod:`prefix_exec.scoring.pool.schedule`):
each pickled once (its :class:`~prefix_exec.envs.recipe.Recipe`, or the environment itself), known to the workers by
a number (its token), and sent to each worker once, before the first unit that needs it. An environment that does
not pickle has no token: its units are replayed in the reading process (said once on the log).
"""

from __future__ import annotations

import pickle
from typing import TextIO

from prefix_exec.scoring.pool.messages import Transport
from prefix_exec.scoring.units import Batch, Scorable, Undecoded


class Environments:
    """The tokens of a run's environments and which of ``workers`` workers was sent which, over ``transport``."""

    def __init__(self, transport: Transport, workers: int, log: TextIO) -> None:
        self.transport, self.log = transport, log
        self.envs: dict[int, tuple[int | None, object]] = {}  # id(env) -> (token or None: not sendable, env)
        self.payloads: list[bytes] = []  # by token
        self.known: list[set[int]] = [set() for _ in range(workers)]

    def token(self, unit: Scorable | Undecoded | Batch) -> int | None:
        """The number workers know ``unit``'s environment by; ``None`` when it cannot be sent to them."""
        key = id(unit.env)  # the env is kept in self.envs, so its id is not reused
        if key not in self.envs:
            token: int | None = None
            try:
                self.payloads.append(pickle.dumps(unit.recipe if unit.recipe is not None else unit.env))
                token = len(self.payloads) - 1
            except Exception as exc:  # pickle raises what the object's reduction raises
                print(
                    f"prefix-exec: note: the environment {getattr(unit.env, 'name', type(unit.env).__name__)} "
                    f"cannot be sent to worker processes ({type(exc).__name__}); its rollouts are replayed in "
                    "this process",
                    file=self.log,
                )
            self.envs[key] = (token, unit.env)
        return self.envs[key][0]

    def send(self, worker: int, token: int) -> None:
        """Send ``worker`` the environment of ``token`` unless it was sent it already (since it last started)."""
        if token not in self.known[worker]:
            self.transport.send_env(worker, token, self.payloads[token])
            self.known[worker].add(token)

    def forget(self, worker: int) -> None:
        """``worker`` started again: it holds none of the environments it was sent."""
        self.known[worker] = set()
