"""``score --launcher ray``: the replays on Ray actors, one CPU each, through the connection to Ray that ``run
--launcher ray`` uses too (:func:`prefix_exec.cluster.connect_ray`: the cluster in ``RAY_ADDRESS``, else a local
instance).

An actor is one worker of :mod:`prefix_exec.scoring.pool.dispatch`: it gets each environment once (its recipe, or the
environment pickled) and replays one rollout (or one batch) at a time. An actor that dies (killed, out of
memory, a crash in native code) costs only the rollout it was replaying (a batch's units are then sent to its
successor one by one); a new actor takes its place, as in ``run --launcher ray``.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable
from functools import partial
from typing import Any

from prefix_exec.cluster import connect_ray
from prefix_exec.scoring.pool.messages import Batched, Decoded, Died, Event, Raised
from prefix_exec.scoring.pool.worker import Shelf, batch_on, decode_on, replay_on
from prefix_exec.scoring.replayer import Outcome, Replayer
from prefix_exec.scoring.units import Batch, Reading, Scorable, Undecoded
from prefix_exec.trajectory import Rollout, Skipped, UnitKey


class ScoreActor:
    """One Ray worker: the replayer and the environments it was sent."""

    def __init__(self, settings: bytes) -> None:
        self.replayer: Replayer
        self.done: frozenset[UnitKey]
        self.replayer, self.done = pickle.loads(settings)
        self.shelf = Shelf()

    def add(self, token: int, payload: bytes) -> None:
        self.shelf.add(token, payload)

    def score(self, rollout: Rollout, token: int) -> Outcome | Raised:
        return replay_on(self.shelf, self.replayer, rollout, token)

    def decode_score(self, decode: Callable[[], Rollout | Skipped], token: int) -> Decoded | None:
        return decode_on(partial(replay_on, self.shelf, self.replayer, token=token), decode, self.done)

    def batch_score(self, read: Callable[[], Reading], token: int) -> Batched:
        return batch_on(partial(replay_on, self.shelf, self.replayer, token=token), read, self.done)


class RayActors:
    """``workers`` actors (a :class:`~prefix_exec.scoring.pool.messages.Transport`), given one rollout at a time
    (after a death, its successor is given the rollouts queued behind: the first of them that fails names the one
    it was replaying)."""

    depth = 1

    def __init__(self, replayer: Replayer, workers: int, done: frozenset[UnitKey] = frozenset()) -> None:
        self.ray = connect_ray()
        self.settings = pickle.dumps((replayer, done))
        # Replay is CPU-bound: one CPU per actor (more actors than the cluster's CPUs wait for one).
        self.actor = self.ray.remote(num_cpus=1)(ScoreActor)
        self.actors: list[Any] = [self.actor.remote(self.settings) for _ in range(workers)]
        self.running: dict[Any, tuple[int, int]] = {}  # object ref -> (worker, seq)

    def launched(self, worker: int) -> bool:
        """Always: every actor is created at once."""
        return True

    def available(self, worker: int) -> bool:
        """Always: an actor queues what it is sent until it has started."""
        return True

    def holds(self, worker: int, token: int) -> bool:
        """Always: an actor builds an environment when its first rollout needs it."""
        return True

    def send_env(self, worker: int, token: int, data: bytes) -> None:
        self.actors[worker].add.remote(token, data)  # an actor runs its calls in order: before the next score

    def send_unit(self, worker: int, seq: int, unit: Scorable | Undecoded | Batch, token: int) -> None:
        actor = self.actors[worker]
        if isinstance(unit, Undecoded):
            self.running[actor.decode_score.remote(unit.decode, token)] = (worker, seq)
        elif isinstance(unit, Batch):
            self.running[actor.batch_score.remote(unit.read, token)] = (worker, seq)
        else:
            self.running[actor.score.remote(unit.rollout, token)] = (worker, seq)

    def collect(self, timeout: float | None = None) -> list[Event]:
        from ray.exceptions import RayError

        ready, _ = self.ray.wait(list(self.running), num_returns=1, timeout=timeout)
        events: list[Event] = []
        for ref in ready:
            worker, seq = self.running.pop(ref)
            try:
                events.append((worker, seq, self.ray.get(ref)))
            except RayError as exc:
                lines = str(exc).strip().splitlines()
                events.append((worker, None, Died(lines[0] if lines else type(exc).__name__)))
        return events

    def restart(self, worker: int) -> None:
        """A new actor in ``worker``'s place; the dead one's calls still waiting are dropped (each would fail as
        its death, and name a rollout its successor holds)."""
        self.stop(worker)
        self.running = {ref: held for ref, held in self.running.items() if held[0] != worker}
        self.actors[worker] = self.actor.remote(self.settings)

    def stop(self, worker: int) -> None:
        with contextlib.suppress(Exception):
            self.ray.kill(self.actors[worker], no_restart=True)

    def close(self) -> None:
        for actor in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(actor, no_restart=True)
