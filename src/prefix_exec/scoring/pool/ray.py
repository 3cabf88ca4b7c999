"""``score --launcher ray``: the replays on Ray actors, one CPU each, through the connection to Ray that ``run
--launcher ray`` uses too (:func:`prefix_exec.cluster.connect_ray`: the cluster in ``RAY_ADDRESS``, else a local
instance).

An actor is one worker of :mod:`prefix_exec.scoring.pool.dispatch`: it gets each environment once (its recipe, or the
environment pickled) and replays one rollout (or one batch) at a time. Every wait on the actors has a bound:

- an actor is asked for when a unit first needs one (a run that replays nothing starts none), and is sent units
  only once it has started; when none of the pool's actors has started within
  :data:`~prefix_exec.cluster.START_SECONDS` of being asked for (the cluster has no free CPU for them, or cannot
  start workers), the run fails with an :class:`~prefix_exec.errors.InputError` naming the bound (exit 2); an
  actor that starts later than the others joins them;
- a unit's answer is awaited at most its rollout's budget (``--rollout-budget``) plus :data:`GRACE_SECONDS`;
  past that its actor is killed;
- an actor that dies (killed, out of memory, a crash in native code), or is killed past that bound, loses the
  unit it was replaying: the unit is sent again, to any started actor, up to :data:`ATTEMPTS` times in all, then
  it is not scored, as the system's failure (:func:`~prefix_exec.scoring.pool.settlement.lost`: listed apart,
  exit 1, ``--resume`` scores it); a new actor takes the dead one's place;
- an actor that dies as it starts (its settings do not load there) :data:`MOST_FAILED_STARTS` times in a row is
  not asked for again; when no actor is left, the run fails with the last one's error;
- the pool's end lets the actors still starting start first (:func:`~prefix_exec.cluster.let_start`).
"""

from __future__ import annotations

import contextlib
import math
import pickle
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TextIO

from prefix_exec import cluster
from prefix_exec.cluster import MOST_FAILED_STARTS, connect_ray, let_start, ray_message
from prefix_exec.errors import InputError
from prefix_exec.scoring.pool.messages import Batched, Decoded, Died, Event, Raised
from prefix_exec.scoring.pool.worker import Shelf, batch_on, decode_on, replay_on
from prefix_exec.scoring.replayer import Outcome, Replayer
from prefix_exec.scoring.units import Batch, Reading, Scorable, Undecoded
from prefix_exec.trajectory import Rollout, Skipped, UnitKey

#: CPUs an actor asks for: replay is CPU-bound (more actors than the cluster's free CPUs wait for one).
ACTOR_CPUS = 1.0
#: Seconds a unit's answer may take beyond its rollout's budget: its environment's build (tau2's imports take 7-20
#: s) and its decoding, which the budget does not cover; as long as an actor may take to start.
GRACE_SECONDS = cluster.START_SECONDS
#: Times a unit is sent to an actor at most: when the actor replaying it dies (or is killed past the unit's
#: bound) that many times, the unit is not scored (the system's failure; ``--resume`` scores it).
ATTEMPTS = 3


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
    """``workers`` actors (a :class:`~prefix_exec.scoring.pool.messages.Transport`), each given one rollout at a
    time once it has started, with the bounds of the module docstring; notes go to ``log``."""

    depth = 1
    queues = False

    def __init__(self, replayer: Replayer, workers: int, done: frozenset[UnitKey], log: TextIO) -> None:
        self.ray = connect_ray()
        self.log = log
        self.settings = pickle.dumps((replayer, done))
        self.actor = self.ray.remote(num_cpus=ACTOR_CPUS)(ScoreActor)
        budget = replayer.rollout_seconds
        #: Seconds a unit's answer is awaited (none without a rollout budget: the user lifted the bound).
        self.answer_seconds = math.inf if budget is None or math.isinf(budget) else budget + GRACE_SECONDS
        self.actors: list[Any] = [None] * workers  # None: not asked for (again) yet
        self.asked = [0.0] * workers  # when each was asked for (time.monotonic)
        self.ready = [False] * workers
        self.failed_starts = [0] * workers
        self.given_up: dict[int, str] = {}  # worker -> why its last actor died as it started
        self.starting: dict[Any, int] = {}  # an actor's readiness ref -> its worker
        self.running: dict[Any, tuple[int, int, float]] = {}  # ref -> (worker, seq, deadline)
        self.late_said = False

    def launched(self, worker: int) -> bool:
        """Whether ``worker``'s actor has started (as :meth:`available` last saw, asking for none): an actor asked
        for may never start, and what it is sent meanwhile would wait in it for good."""
        return worker not in self.given_up and self.actors[worker] is not None and bool(self.ready[worker])

    def available(self, worker: int) -> bool:
        """Whether ``worker``'s actor has started; asking for one not asked for yet asks Ray for it now."""
        if worker in self.given_up:
            return False
        if self.actors[worker] is None:
            actor = self.actor.remote(self.settings)
            self.actors[worker], self.asked[worker], self.ready[worker] = actor, time.monotonic(), False
            self.starting[actor.__ray_ready__.remote()] = worker
        return bool(self.ready[worker])

    def holds(self, worker: int, token: int) -> bool:
        """Always: an actor builds an environment when its first rollout needs it."""
        return True

    def send_env(self, worker: int, token: int, data: bytes) -> None:
        self.actors[worker].add.remote(token, data)  # an actor runs its calls in order: before the next score

    def send_unit(self, worker: int, seq: int, unit: Scorable | Undecoded | Batch, token: int) -> None:
        actor = self.actors[worker]
        if isinstance(unit, Undecoded):
            ref = actor.decode_score.remote(unit.decode, token)
        elif isinstance(unit, Batch):
            ref = actor.batch_score.remote(unit.read, token)
        else:
            ref = actor.score.remote(unit.rollout, token)
        # A batch is held to one unit's bound too: none comes here (score transcripts hands whole files to local
        # worker processes only), and one that did would be lost past it, never waited on for good.
        self.running[ref] = (worker, seq, time.monotonic() + self.answer_seconds)

    def collect(self, timeout: float | None = None) -> list[Event]:
        """What the actors answered (or the loss of those that died or ran past a unit's bound) within
        ``timeout`` seconds (``None``: until the first comes, or a bound passes); returns early, with nothing,
        when an actor starts. Raises :class:`InputError` when no actor has started within the start bound."""
        from ray.exceptions import RayError

        now = time.monotonic()
        bounds = [deadline for _, _, deadline in self.running.values()]
        bounds += [self.asked[worker] + cluster.START_SECONDS for worker in self.starting.values()]
        wait = max(0.0, min([*bounds, now + (math.inf if timeout is None else timeout)]) - now)
        refs = [*self.running, *self.starting]
        if refs:
            ready, _ = self.ray.wait(refs, num_returns=1, timeout=None if math.isinf(wait) else wait)
        else:  # nothing to wait on: the wait lasts its timeout all the same, so that its caller does not spin
            ready = []
            time.sleep(0.0 if math.isinf(wait) else wait)
        events: list[Event] = []
        for ref in ready:
            if ref in self.starting:
                self._started(ref)
                continue
            worker, seq, _ = self.running.pop(ref)
            try:  # ready: its answer is here (or its actor's death), and the bound is only for form's sake
                events.append((worker, seq, self.ray.get(ref, timeout=cluster.START_SECONDS)))
            except RayError as exc:
                events.append((worker, None, Died(ray_message(exc), ATTEMPTS, infrastructure=True)))
        events += self._overdue()
        self._check_started()
        return events

    def _started(self, ref: Any) -> None:
        """An actor's readiness came: it started, or it died as it started (then it is asked for again when
        wanted, unless its place has seen :data:`MOST_FAILED_STARTS` such deaths in a row)."""
        from ray.exceptions import RayError

        worker = self.starting.pop(ref)
        try:
            self.ray.get(ref, timeout=cluster.START_SECONDS)
        except RayError as exc:
            self.stop(worker)
            self.failed_starts[worker] += 1
            if self.failed_starts[worker] >= MOST_FAILED_STARTS:
                self.given_up[worker] = ray_message(exc)
            return
        self.ready[worker], self.failed_starts[worker] = True, 0

    def _overdue(self) -> list[Event]:
        """The loss of each unit past its bound (:attr:`answer_seconds`): its actor is killed."""
        now = time.monotonic()
        events: list[Event] = []
        for ref, (worker, _, deadline) in list(self.running.items()):
            if now >= deadline:
                del self.running[ref]
                self.stop(worker)
                why = (
                    f"it did not answer within {self.answer_seconds:g} s, the rollout's budget and "
                    f"{GRACE_SECONDS:g} s more, and was killed"
                )
                events.append((worker, None, Died(why, ATTEMPTS, infrastructure=True)))
        return events

    def _check_started(self) -> None:
        """Raise :class:`InputError` when no actor is started and none can be: each place given up, or every
        actor asked for has waited :data:`~prefix_exec.cluster.START_SECONDS`; say once when some wait that long
        beside started ones."""
        now = time.monotonic()
        late = [worker for worker in self.starting.values() if now - self.asked[worker] >= cluster.START_SECONDS]
        if any(self.ready):
            if late and not self.late_said:
                self.late_said = True
                print(
                    f"prefix-exec: note: {len(late)} of the {len(self.actors)} Ray actors did not start within "
                    f"{cluster.START_SECONDS:g} s (no free CPU for them?); the others replay",
                    file=self.log,
                )
            return
        if len(self.given_up) == len(self.actors):
            why = next(reversed(self.given_up.values()))
            raise InputError(
                f"no Ray actor could start: each died as it started, {MOST_FAILED_STARTS} times in a row (the "
                f"last: {why})",
                hint="the run's settings must load on the cluster's workers (a function of a script's __main__ "
                "does not); records written so far are kept (--resume)",
            )
        if self.starting and len(late) == len(self.starting):
            raise InputError(
                f"no Ray actor started within {cluster.START_SECONDS:g} s ({len(self.starting)} asked for, "
                f"{ACTOR_CPUS:g} CPU each): the Ray cluster has no free CPU for them, or cannot start workers",
                hint="see 'ray status'; free CPUs, or pass a smaller --workers; records written so far are kept "
                "(--resume)",
            )

    def restart(self, worker: int) -> None:
        """Put a new actor in ``worker``'s place (asked for when next wanted); the dead one's calls still waiting
        are dropped (each would fail as its death, and name a rollout its successor holds)."""
        self.stop(worker)
        self.running = {ref: held for ref, held in self.running.items() if held[0] != worker}

    def stop(self, worker: int) -> None:
        actor, self.actors[worker], self.ready[worker] = self.actors[worker], None, False
        self.starting = {ref: held for ref, held in self.starting.items() if held != worker}
        if actor is not None:
            with contextlib.suppress(Exception):
                self.ray.kill(actor, no_restart=True)

    def close(self, *, settle: bool = True) -> None:
        """Kill every actor, those still starting first; with ``settle``, after letting the young ones start
        (:func:`~prefix_exec.cluster.let_start`)."""
        if settle:
            asked = {ref: self.asked[worker] for ref, worker in self.starting.items()}
            let_start(self.ray, asked, sum(self.ready) * ACTOR_CPUS, ACTOR_CPUS)
        waiting = set(self.starting.values())
        for worker in sorted(range(len(self.actors)), key=lambda w: w not in waiting):
            self.stop(worker)
