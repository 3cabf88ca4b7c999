"""Units decoded in a worker process (prefix_exec.scoring.pool.worker.decode_on), settled in their turn
(prefix_exec.scoring.pool.settlement, admitted by prefix_exec.scoring.admission) as one worker admits them. Oracle:
the same units decoded in this process (Admission.tickets)."""

from __future__ import annotations

import io
from dataclasses import replace
from functools import partial

from prefix_exec.scoring.admission import Admission
from prefix_exec.scoring.numbering import Numbering
from prefix_exec.scoring.pool.messages import Decoded, Died
from prefix_exec.scoring.pool.settlement import Settlement
from prefix_exec.scoring.pool.worker import Shelf, decode_on, replay_on
from prefix_exec.scoring.replayer import Replayer
from prefix_exec.scoring.units import Scorable, Undecoded
from prefix_exec.trajectory import Rollout, Skipped, UnitKey
from test_replay import CounterEnv, rollout

REPLAYER = Replayer(None, None, 0)


def given(unit: Rollout | Skipped) -> Rollout | Skipped:
    """A decode that gives ``unit`` (module level: it pickles)."""
    return unit


def failing() -> Rollout:
    raise ValueError("a bug in a reader")


def undecoded(unit: Rollout | Skipped, numbering: Numbering | None = None) -> Undecoded:
    return Undecoded(partial(given, unit), CounterEnv(), numbering=numbering)


def in_a_worker(unit: Undecoded, done: frozenset[UnitKey] = frozenset()) -> Decoded | None:
    shelf = Shelf()
    shelf.built[0] = unit.env
    return decode_on(partial(replay_on, shelf, REPLAYER, token=0), unit.decode, done)


def units(numbering: Numbering) -> list[Undecoded]:
    """A rollout, the same again, another of its identity (numbered as a further trial), one kept by resume."""
    first = rollout(("inc", {}), ("inc", {}))
    further = rollout(("inc", {}))
    return [undecoded(u, numbering) for u in (first, first, further, replace(first, task_id="kept"))]


def test_a_worker_answer_settles_a_unit_as_decoding_it_here_does() -> None:
    """The first rollout of its identity, kept as read by numbering: the worker's outcome; a rollout read twice,
    one numbered as a further trial: decoded again here, as one worker scores it; kept by resume: not replayed."""
    kept = {replace(rollout(("inc", {}), ("inc", {})), task_id="kept").key}
    here = Admission(kept)
    expected = [REPLAYER(t.rollout, t.env) if isinstance(t, Scorable) else t for t in here.tickets(units(Numbering()))]
    assert [type(e).__name__ for e in expected] == ["PrefixRecord", "Skipped", "PrefixRecord", "NoneType"]

    pool, pending = Admission(kept), units(Numbering())
    settlement = Settlement(pool, REPLAYER, io.StringIO())
    answers = [in_a_worker(u, frozenset(kept)) for u in pending]
    assert isinstance(answers[3], Decoded) and answers[3].outcome is None  # not replayed: kept by resume
    assert [settlement.settle(u, a) for u, a in zip(pending, answers, strict=True)] == expected
    assert pool.seen == here.seen


def test_what_a_worker_cannot_decode_or_died_on_is_settled_here() -> None:
    bad = Skipped("f.json:3", "unreadable")
    assert in_a_worker(undecoded(bad)) is None
    assert in_a_worker(Undecoded(failing, CounterEnv())) is None
    settlement = Settlement(Admission(set()), REPLAYER, io.StringIO())
    assert settlement.settle(undecoded(bad), None) == bad
    died = settlement.settle(undecoded(rollout(("inc", {}))), Died("killed by SIGKILL"))
    assert isinstance(died, Skipped) and died.error == "the worker process died replaying it (killed by SIGKILL)"
