"""The schedule of ``score --workers N`` (prefix_exec.scoring_pool._Schedule) on a scripted transport: when it
starts the workers it holds back (START_SECONDS), and that it ends when no worker is ever ready.
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
    """A transport whose workers are ready when ``ready`` says so and answer what they hold ``delay`` seconds
    after it was sent (replayed here, in this process)."""

    depth = 2

    def __init__(self, workers: int, *, ready: bool, delay: float) -> None:
        self.ready, self.delay = ready, delay
        self.sent: list[tuple[float, int, int, Scorable]] = []  # (when, worker, seq, unit)
        self.workers = workers

    def available(self, worker: int) -> bool:
        return self.ready

    def send_env(self, worker: int, token: int, data: bytes) -> None:
        pass

    def send_unit(self, worker: int, seq: int, unit: object, token: int) -> None:
        assert isinstance(unit, Scorable)
        self.sent.append((time.monotonic(), worker, seq, unit))

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
    assert transport.sent == []
