"""The schedule of ``score --workers N`` (prefix_exec.scoring_pool._Schedule) on a scripted transport: when it
starts the workers it holds back (START_SECONDS), that it ends when no worker is ever ready, and that a worker is
given rollouts only once it has built their environment.
Oracle: what a worker would answer, known in advance (the rollouts replayed here, in this process)."""

from __future__ import annotations

import io
import time
from dataclasses import replace

import pytest

from prefix_exec import scoring_pool
from prefix_exec.scoring import Replayer, Scorable, Sync
from prefix_exec.scoring_processes import Event
from prefix_exec.scoring_tickets import Admission
from test_replay import CounterEnv, rollout

REPLAYER = Replayer(None, None, 0)


class Scripted:
    """A transport whose workers are ready when ``ready`` says so, build an environment ``build`` seconds after
    it was sent, and answer what they hold ``delay`` seconds after it was sent (replayed here, in this process)."""

    depth = 2

    def __init__(self, workers: int, *, ready: bool, delay: float, build: float = 0.0) -> None:
        self.ready, self.delay, self.build = ready, delay, build
        self.sent: list[tuple[float, int, int, Scorable]] = []  # in flight: (when, worker, seq, unit)
        self.given = 0  # rollouts sent in all
        self.envs: dict[tuple[int, int], float] = {}  # (worker, token) -> when it was sent
        self.workers = workers

    def available(self, worker: int) -> bool:
        return self.ready

    def holds(self, worker: int, token: int) -> bool:
        sent = self.envs.get((worker, token))
        return sent is not None and time.monotonic() >= sent + self.build

    def send_env(self, worker: int, token: int, data: bytes) -> None:
        assert (worker, token) not in self.envs, "an environment is sent to a worker once"
        self.envs[(worker, token)] = time.monotonic()

    def send_unit(self, worker: int, seq: int, unit: object, token: int) -> None:
        assert isinstance(unit, Scorable)
        self.sent.append((time.monotonic(), worker, seq, unit))
        self.given += 1

    def collect(self, timeout: float | None = None) -> list[Event]:
        if not self.sent:
            return []
        due = self.sent[0][0] + self.delay
        if timeout is not None and time.monotonic() + timeout < due:
            time.sleep(timeout)
            return []
        time.sleep(max(0.0, due - time.monotonic()))
        _, worker, seq, unit = self.sent.pop(0)
        return [(worker, seq, REPLAYER(unit.rollout, unit.env))]

    def restart(self, worker: int) -> None:
        raise AssertionError("no worker dies here")

    def stop(self, worker: int) -> None:
        raise AssertionError("no worker dies here")

    def close(self) -> None:
        pass


def scorables(count: int) -> list[Scorable]:
    return [Scorable(replace(rollout(("inc", {})), trial=trial), CounterEnv()) for trial in range(count)]


def outcomes(transport: Scripted, units: list[Scorable], started: list[int]) -> list[object]:
    schedule = scoring_pool._Schedule(
        iter(units),
        transport,
        REPLAYER,
        Admission(set()),
        transport.workers,
        io.StringIO(),
        here=True,
        start_later=lambda: started.append(1),
    )
    return [outcome for outcome in schedule.run() if not isinstance(outcome, Sync)]


def test_held_back_workers_do_not_start_once_every_rollout_is_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the input is all read, a worker started later would be given nothing: it would only take a core
    (and, for tau, seconds of imports) from the replays still running."""
    monkeypatch.setattr(scoring_pool, "START_SECONDS", 0.05)
    transport = Scripted(1, ready=True, delay=0.3)
    started: list[int] = []
    units = scorables(2)
    assert outcomes(transport, units, started) == [REPLAYER(u.rollout, u.env) for u in units]
    assert started == []


def test_no_worker_ever_ready_ends_with_every_rollout_replayed_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scoring_pool, "START_SECONDS", 0.0)
    transport = Scripted(2, ready=False, delay=0.0)
    started: list[int] = []
    units = scorables(30)
    assert outcomes(transport, units, started) == [REPLAYER(u.rollout, u.env) for u in units]
    assert transport.given == 0


def test_a_worker_is_given_rollouts_once_it_has_built_their_environment() -> None:
    """A ready worker is sent the environment with the first rollout that needs it, and no rollout until it
    says it built it (tau2's imports take seconds): meanwhile this process replays them, and the records come
    in input order; once built, the worker takes its share."""
    never = Scripted(1, ready=True, delay=0.0, build=3600.0)
    env = CounterEnv()
    units = [replace(unit, env=env) for unit in scorables(20)]  # one environment, sent once
    assert outcomes(never, units, []) == [REPLAYER(u.rollout, u.env) for u in units]
    assert never.given == 0 and list(never.envs) == [(0, 0)]
    soon = Scripted(1, ready=True, delay=0.0, build=0.0)
    assert outcomes(soon, units, []) == [REPLAYER(u.rollout, u.env) for u in units]
    assert 0 < soon.given < len(units)
