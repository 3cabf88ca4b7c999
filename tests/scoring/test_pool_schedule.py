"""The schedule of ``score --workers N`` (prefix_exec.scoring.pool.schedule.Schedule) on a scripted transport: when it
starts the workers it holds back (START_SECONDS), that it ends when no worker is ever ready, that a worker is
given rollouts only once it has built their environment; batches (a file a worker reads whole): their records,
notes and errors in input order, a worker's death on one, an answer that does not load, the window's bound.
Oracle: what a worker would answer, known in advance (the rollouts replayed here, in this process)."""

from __future__ import annotations

import io
import time
from dataclasses import replace
from functools import partial

import pytest

from prefix_exec.errors import InputError
from prefix_exec.scoring.admission import Admission
from prefix_exec.scoring.pool import messages
from prefix_exec.scoring.pool import schedule as pool_schedule
from prefix_exec.scoring.pool.messages import Batched, Died, Event
from prefix_exec.scoring.pool.settlement import caught
from prefix_exec.scoring.pool.worker import batch_on, decode_on
from prefix_exec.scoring.replayer import Replayer, Sync
from prefix_exec.scoring.units import Batch, Reading, Scorable, Undecoded, unbatched
from prefix_exec.trajectory import Rollout, Skipped
from test_replay import CounterEnv, rollout

REPLAYER = Replayer(None, None, 0)


class Scripted:
    """A transport whose workers are ready when ``ready`` says so, build an environment ``build`` seconds after
    it was sent, and answer what they hold ``delay`` seconds after it was sent (replayed here, in this process)."""

    depth = 2
    queues = True

    def __init__(self, workers: int, *, ready: bool, delay: float, build: float = 0.0) -> None:
        self.ready, self.delay, self.build = ready, delay, build
        self.sent: list[tuple[float, int, int, Scorable]] = []  # in flight: (when, worker, seq, unit)
        self.given = 0  # rollouts sent in all
        self.envs: dict[tuple[int, int], float] = {}  # (worker, token) -> when it was sent
        self.workers = workers

    def launched(self, worker: int) -> bool:
        return True

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
        """The answer for the oldest unit sent, once it is due (within ``timeout``)."""
        if not self.sent:
            return []
        due = self.sent[0][0] + self.delay
        if timeout is not None and time.monotonic() + timeout < due:
            time.sleep(timeout)
            return []
        time.sleep(max(0.0, due - time.monotonic()))
        _, worker, seq, unit = self.sent.pop(0)
        return self.answer(worker, seq, unit)

    def answer(self, worker: int, seq: int, unit: object) -> list[Event]:
        assert isinstance(unit, Scorable)
        return [(worker, seq, REPLAYER(unit.rollout, unit.env))]

    def restart(self, worker: int) -> None:
        raise AssertionError("no worker dies here")

    def stop(self, worker: int) -> None:
        raise AssertionError("no worker dies here")

    def close(self, *, settle: bool = True) -> None:
        pass


def scorables(count: int) -> list[Scorable]:
    return [Scorable(replace(rollout(("inc", {})), trial=trial), CounterEnv()) for trial in range(count)]


def outcomes(transport: Scripted, units: list[Scorable], started: list[int]) -> list[object]:
    schedule = pool_schedule.Schedule(
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
    monkeypatch.setattr(pool_schedule, "START_SECONDS", 0.05)
    transport = Scripted(1, ready=True, delay=0.3)
    started: list[int] = []
    units = scorables(2)
    assert outcomes(transport, units, started) == [REPLAYER(u.rollout, u.env) for u in units]
    assert started == []


def test_no_worker_ever_ready_ends_with_every_rollout_replayed_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_schedule, "START_SECONDS", 0.0)
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


class Lossy(Scripted):
    """Ray's shape of transport: units go to started workers only (``queues`` false), one at a time; of two
    workers only the first ever starts (the second waits for a CPU for good), and it dies ``deaths`` times on the
    rollout of trial ``deadly``, each death one an actor's (sent again up to ``attempts`` times)."""

    depth = 1
    queues = False

    def __init__(self, *, deadly: int, deaths: float, attempts: int = 3) -> None:
        super().__init__(2, ready=True, delay=0.0)
        self.deadly, self.deaths, self.attempts = deadly, deaths, attempts
        self.restarts = 0

    def available(self, worker: int) -> bool:
        return worker == 0

    def answer(self, worker: int, seq: int, unit: object) -> list[Event]:
        assert worker == 0 and isinstance(unit, Scorable)
        if unit.rollout.trial == self.deadly and self.deaths > 0:
            self.deaths -= 1
            self.sent.clear()  # what it held dies with it
            return [(worker, None, Died("the actor died", self.attempts, infrastructure=True))]
        return super().answer(worker, seq, unit)

    def restart(self, worker: int) -> None:
        self.restarts += 1
        self.envs = {key: when for key, when in self.envs.items() if key[0] != worker}  # a new worker has none


def ray_shaped(transport: Lossy, units: list[Scorable]) -> list[object]:
    schedule = pool_schedule.Schedule(iter(units), transport, REPLAYER, Admission(set()), 2, io.StringIO())
    return [outcome for outcome in schedule.run() if not isinstance(outcome, Sync)]


def test_a_unit_whose_actor_died_is_sent_again_and_scored_as_one_worker_scores_it() -> None:
    """The rollout a worker died on goes again, to the one worker that started; nothing goes to the worker that
    never starts (its units would wait for it for good)."""
    units = scorables(8)
    transport = Lossy(deadly=4, deaths=1)
    assert ray_shaped(transport, units) == [REPLAYER(u.rollout, u.env) for u in units]
    assert transport.restarts == 1 and transport.given == 9


def test_a_unit_lost_at_every_attempt_is_the_systems_failure_and_the_others_are_scored() -> None:
    units = scorables(8)
    transport = Lossy(deadly=4, deaths=float("inf"))
    out = ray_shaped(transport, units)
    assert transport.restarts == 3 and transport.given == 10  # the 7 others, and the lost one 3 times
    lost = out.pop(4)
    assert isinstance(lost, Skipped) and lost.infrastructure and "trial 4" in lost.where
    assert lost.error.startswith("the Ray actor replaying it was lost 3 times (the last: the actor died)")
    assert out == [REPLAYER(u.rollout, u.env) for i, u in enumerate(units) if i != 4]


def test_a_started_worker_is_sent_each_environment_before_it_is_ready() -> None:
    """It builds the environment as soon as it has read its settings, while this process replays: a worker
    never ready is sent each environment once all the same, and no rollout."""
    transport = Scripted(2, ready=False, delay=0.0)
    env = CounterEnv()
    units = [replace(unit, env=env) for unit in scorables(6)]
    assert outcomes(transport, units, []) == [REPLAYER(u.rollout, u.env) for u in units]
    assert sorted(transport.envs) == [(0, 0), (1, 0)]
    assert transport.given == 0


def given(unit: Rollout) -> Rollout:
    return unit


def read_units(units: tuple[Rollout, ...], name: str, stop: bool = False) -> Reading:
    """A batch's reading: ``units``, then an error (``stop``) or a note."""
    error = InputError("the reading stopped here", path=name, line=len(units) + 1) if stop else None
    return [partial(given, unit) for unit in units], error, None if stop else f"note: {name} read"


def batches(count: int, size: int, env: CounterEnv, stop_at: int | None = None) -> list[Batch]:
    """``count`` batches of ``size`` rollouts (trials numbered through), the one at ``stop_at`` stopped by an
    error after its units."""
    units = [replace(unit, env=env) for unit in scorables(count * size)]
    return [
        Batch(
            partial(read_units, tuple(u.rollout for u in units[at : at + size]), f"b{at}", at // size == stop_at), env
        )
        for at in range(0, count * size, size)
    ]


class Batches(Scripted):
    """A scripted transport that takes batches (answered as a worker answers them, :func:`batch_on`), and whose
    worker dies on any unit (a batch, or one unit) holding a rollout of trial ``deadly``."""

    def __init__(self, *, deadly: int | None = None, delay: float = 0.0) -> None:
        super().__init__(1, ready=True, delay=delay)
        self.deadly = deadly
        self.units: list[object] = []  # every unit sent, in order
        self.holding: list[int] = []  # how many units the worker held as each was sent
        self.restarts = 0

    def send_unit(self, worker: int, seq: int, unit: object, token: int) -> None:
        self.holding.append(len(self.sent))
        self.sent.append((time.monotonic(), worker, seq, unit))  # type: ignore[arg-type]
        self.units.append(unit)

    def answer(self, worker: int, seq: int, unit: object) -> list[Event]:
        assert isinstance(unit, Batch | Undecoded)
        replay = partial(caught, REPLAYER, env=unit.env)
        if isinstance(unit, Batch):
            trials = [decode().trial for decode in unit.read()[0] if not isinstance(decode, Skipped)]
            answer: object = batch_on(replay, unit.read, frozenset())
        else:
            trials = [unit.decode().trial]  # type: ignore[union-attr]
            answer = decode_on(replay, unit.decode, frozenset())
        if self.deadly in trials:
            self.sent.clear()  # what it held dies with it
            return [(worker, None, Died("killed by SIGKILL"))]
        return [(worker, seq, answer)]  # type: ignore[list-item]

    def restart(self, worker: int) -> None:
        self.restarts += 1
        self.envs = {key: when for key, when in self.envs.items() if key[0] != worker}  # a new worker has none


def one_worker(units: list[Batch], log: io.StringIO) -> list[object]:
    """The outcomes one worker gives (the oracle), its notes on ``log``."""
    admission = Admission(set())
    out: list[object] = []
    for ticket in admission.tickets(unbatched(units, log)):
        out.append(REPLAYER(ticket.rollout, ticket.env) if isinstance(ticket, Scorable) else ticket)
    return out


def scheduled(transport: Scripted, units: list[Batch], log: io.StringIO, out: list[object]) -> None:
    """The schedule's outcomes, appended to ``out`` as they come (so that those before an error are kept)."""
    schedule = pool_schedule.Schedule(iter(units), transport, REPLAYER, Admission(set()), 1, log, here=True)
    for outcome in schedule.run():
        if not isinstance(outcome, Sync):
            out.append(outcome)


def test_batches_give_the_records_and_notes_of_one_worker() -> None:
    """Batches go whole to the worker when it holds nothing, the others are read here; outcomes and notes come
    in input order; once every batch is read, the worker takes units of the last one read here (share)."""
    env = CounterEnv()
    units = batches(8, 5, env)
    expected_log, log = io.StringIO(), io.StringIO()
    expected = one_worker(units, expected_log)
    transport, out = Batches(delay=0.01), []
    scheduled(transport, units, log, out)
    assert out == expected and len(out) == 40
    assert log.getvalue() == expected_log.getvalue() and log.getvalue().count("read") == 8
    assert any(isinstance(unit, Batch) for unit in transport.units)
    assert len([unit for unit in transport.units if isinstance(unit, Batch)]) < 8  # some were read here


def test_a_worker_that_dies_on_a_batch_costs_one_rollout() -> None:
    """The batch's units are read here and sent to the new worker one by one: the one that kills it again is
    reported, every other unit is scored as one worker scores it."""
    env = CounterEnv()
    units = batches(3, 4, env)
    expected = one_worker(units, io.StringIO())
    transport, out = Batches(deadly=5), []
    scheduled(transport, units, io.StringIO(), out)
    assert transport.restarts == 2  # on the batch, then on the unit
    [skipped] = [outcome for outcome in out if isinstance(outcome, Skipped)]
    assert "trial 5" in skipped.where and "the worker process died replaying it" in skipped.error
    assert [o for o in out if not isinstance(o, Skipped)] == [o for i, o in enumerate(expected) if i != 5]


def test_a_reading_error_is_raised_in_its_turn() -> None:
    """A batch whose reading stops on an error: the outcomes of every unit before it are given, then the error
    is raised, as one worker raises it; later batches give nothing."""
    env = CounterEnv()
    units = batches(4, 3, env, stop_at=1)
    expected: list[object] = []
    with pytest.raises(InputError, match="the reading stopped here"):
        for outcome in Admission(set()).tickets(unbatched(units, io.StringIO())):
            expected.append(REPLAYER(outcome.rollout, outcome.env) if isinstance(outcome, Scorable) else outcome)
    for delay in (0.0, 0.05):  # the batch in the worker, or read here
        out: list[object] = []
        with pytest.raises(InputError, match="the reading stopped here"):
            scheduled(Batches(delay=delay), units, io.StringIO(), out)
        assert out == expected and len(out) == 6


def test_batches_wait_for_a_slow_worker_at_most_four_deep(monkeypatch: pytest.MonkeyPatch) -> None:
    """While the worker's batch takes long, this process reads at most MOST_EXPANDED batches of its own: their
    records wait in the window for the worker's, so the window stays bounded."""
    deepest: list[int] = []
    real = pool_schedule.Schedule.read_here

    def read_here(self: pool_schedule.Schedule, batch: Batch) -> list[list[object]]:
        entries = real(self, batch)
        deepest.append(self.window.batches)
        return entries

    monkeypatch.setattr(pool_schedule.Schedule, "read_here", read_here)
    env = CounterEnv()
    units = batches(12, 2, env)
    out: list[object] = []
    scheduled(Batches(delay=0.3), units, io.StringIO(), out)
    assert out == one_worker(units, io.StringIO())
    assert max(deepest) == pool_schedule.MOST_EXPANDED + 1  # and the worker's


class Unloadable(Batches):
    """A worker whose answer for the first batch it is sent does not load here."""

    def collect(self, timeout: float | None = None) -> list[Event]:
        events: list[Event] = []
        for worker, seq, answer in super().collect(timeout):
            if isinstance(answer, Batched) and not self.restarts:
                answer, self.restarts = messages.Unloadable("no"), -1  # once
            events.append((worker, seq, answer))
        return events


def test_a_batch_whose_answer_does_not_load_is_replayed_here_in_its_turn() -> None:
    env = CounterEnv()
    units = batches(6, 3, env)
    log, out = io.StringIO(), []
    scheduled(Unloadable(delay=0.05), units, log, out)
    assert out == one_worker(units, io.StringIO())
    assert "its units are replayed in this process" in log.getvalue()


def test_the_last_batch_is_read_here_and_shared_unit_by_unit() -> None:
    """Whole, the last batch would end the run in one worker while this process waits: it is read here, and a
    worker with room takes its units from the end, one by one, while this process replays from the front; it
    holds two at most (the transport's depth, not the schedule's: where the two meet, this process waits for
    what the worker holds)."""
    env = CounterEnv()
    units = batches(2, 30, env)
    transport, out = Batches(), []
    scheduled(transport, units, io.StringIO(), out)
    assert out == one_worker(units, io.StringIO())
    assert transport.units and all(isinstance(unit, Undecoded) for unit in transport.units)
    assert max(transport.holding) < Batches.depth
    trials = [unit.decode().trial for unit in transport.units]  # type: ignore[attr-defined]
    assert trials == sorted(trials, reverse=True) and trials[0] == 59  # from the end of the last batch


class Affine(Scripted):
    """A scripted transport that notes each rollout its worker was sent, and how many it held then."""

    def __init__(self, *, delay: float) -> None:
        super().__init__(1, ready=True, delay=delay)
        self.units: list[tuple[Scorable, int]] = []

    def send_unit(self, worker: int, seq: int, unit: object, token: int) -> None:
        assert isinstance(unit, Scorable)
        self.units.append((unit, len(self.sent)))
        super().send_unit(worker, seq, unit, token)


def placed(units: list[Scorable], delay: float, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[int]]:
    """Where each unit went, in input order: ``worker``, ``here`` (this process replayed it in its turn) or
    ``stolen`` (this process took it from those waiting for a worker, having nothing else to do); and what the
    worker held as each unit was sent to it. The outcomes are checked against one worker's."""
    stolen: list[object] = []
    real = pool_schedule.Schedule.steal

    def steal(self: pool_schedule.Schedule) -> bool:
        waiting = self.affinities.longest()
        assert not self.busy_here()  # only when this process has nothing of its own to do
        if waiting is not None:
            stolen.append(waiting[-1][1])
        return real(self)

    monkeypatch.setattr(pool_schedule.Schedule, "steal", steal)
    transport = Affine(delay=delay)
    assert outcomes(transport, units, []) == [REPLAYER(unit.rollout, unit.env) for unit in units]
    sent = [unit for unit, _ in transport.units]
    where = ["worker" if unit in sent else "stolen" if unit in stolen else "here" for unit in units]
    return where, [held for _, held in transport.units]


def test_the_rollouts_of_one_affinity_are_replayed_where_the_first_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rollouts named by an affinity (BFCL's task: its ground truth is cached where it was first replayed): those
    of a name whose first rollout a worker replayed go to it, up to its depth, and the others wait for room in
    it, but for those this process takes when it has nothing else to do (from the end of the queue); those of a
    name this process replayed first stay here, but for a worker about to run dry (holding less than the
    transport's depth). The outcomes are one worker's, in input order. Without affinities, names are split."""
    monkeypatch.setattr(pool_schedule, "MOST_HELD", Scripted.depth)  # instant replays here: the depth stays 2
    env = CounterEnv()
    names = [f"task-{index % 7}" for index in range(42)]  # 7 names, each 6 times, interleaved
    plain = [replace(unit, env=env) for unit in scorables(42)]
    named = [replace(unit, affinity=name) for unit, name in zip(plain, names, strict=True)]
    first = {name: names.index(name) for name in set(names)}
    where, _ = placed(plain, 0.002, monkeypatch)
    assert any(where[first[name]] == "worker" and where[at] == "here" for at, name in enumerate(names))
    where, held = placed(named, 0.002, monkeypatch)
    by_worker = {name for name in first if where[first[name]] == "worker"}
    assert by_worker and by_worker != set(first)
    assert all(where[at] != "here" for at, name in enumerate(names) if name in by_worker)
    assert "stolen" in where  # this process took some at the end rather than wait for the worker's queue
    assert all(name in by_worker for at, name in enumerate(names) if where[at] == "stolen")
    sends = [at for at in range(len(names)) if where[at] == "worker"]
    assert all(held[sends.index(at)] < Scripted.depth for at in sends if names[at] not in by_worker)
    assert max(held) < pool_schedule.MOST_HELD  # a worker is sent no more than its depth


class Orphaning(Scripted):
    """Ray's shape of transport (units go to started workers only, one at a time), 3 workers: worker 0 dies on
    the first rollout it is sent, and its place never starts again (Ray gave it up, or no CPU is ever free for
    it). A wait with nothing in flight, over and over, is the run hanging."""

    depth = 1
    queues = False

    def __init__(self) -> None:
        super().__init__(3, ready=True, delay=0.0)
        self.up = [True, True, True]
        self.died = False
        self.idle_waits = 0

    def launched(self, worker: int) -> bool:
        return self.up[worker]

    def available(self, worker: int) -> bool:
        return self.up[worker]

    def collect(self, timeout: float | None = None) -> list[Event]:
        if not self.sent:
            self.idle_waits += 1
            assert self.idle_waits < 100, "the run waits for workers with nothing in flight"
        return super().collect(timeout)

    def answer(self, worker: int, seq: int, unit: object) -> list[Event]:
        if worker == 0 and not self.died:
            self.died = True
            self.sent = [sent for sent in self.sent if sent[1] != worker]  # what it held dies with it
            return [(worker, None, Died("the actor died", 3, infrastructure=True))]
        return super().answer(worker, seq, unit)

    def restart(self, worker: int) -> None:
        self.up[worker] = False


def test_the_rollouts_waiting_for_a_dead_worker_go_to_the_others() -> None:
    """Tasks A and B alternate: A's first rollout goes to worker 0, so A's next ones wait for it (a task's rollouts
    replayed in one process); worker 0 dies and never comes back. Those waiting go to the others, and the run
    ends with every rollout scored as one worker scores it (it waited for worker 0 for good before)."""
    env = CounterEnv()
    units = [replace(unit, env=env, affinity=name) for unit, name in zip(scorables(6), "ABABAB", strict=True)]
    transport = Orphaning()
    schedule = pool_schedule.Schedule(iter(units), transport, REPLAYER, Admission(set()), 3, io.StringIO())
    out = [outcome for outcome in schedule.run() if not isinstance(outcome, Sync)]
    assert out == [REPLAYER(u.rollout, u.env) for u in units]
    assert transport.died and not any(schedule.affinities.waiting)
