"""The worker side of ``score --workers N`` (prefix_exec.scoring.pool.worker): a worker builds each environment it is
sent at once and says so (BUILT), and an environment that fails to build fails each rollout that needs it with
the same error. Oracle: the messages and errors written out by hand."""

from __future__ import annotations

import json
import multiprocessing
import pickle
from dataclasses import replace
from operator import attrgetter
from typing import Any

from prefix_exec.envs.recipe import Recipe
from prefix_exec.errors import InputError
from prefix_exec.scoring.pool.messages import BUILT, READY
from prefix_exec.scoring.pool.worker import Shelf, replay_on, serve
from prefix_exec.scoring.replayer import Replayer, Written, record_line
from prefix_exec.trajectory import PrefixRecord, Skipped
from test_replay import CounterEnv, rollout

REPLAYER = Replayer(None, None, 0)
BUILDS: list[str] = []


def broken_spec(path: str) -> Any:
    """A recipe's function that fails as a bad spec file does (module level: it pickles by name)."""
    BUILDS.append(path)
    raise InputError("not a tool spec", path=path)


def test_an_environment_that_fails_to_build_fails_every_rollout_that_needs_it() -> None:
    shelf = Shelf()
    shelf.add(0, pickle.dumps(Recipe(broken_spec, ("tools.yaml",))))
    BUILDS.clear()
    shelf.build(0)  # the error is kept, not raised
    answers = [replay_on(shelf, REPLAYER, rollout(("inc", {})), 0) for _ in range(2)]
    assert BUILDS == ["tools.yaml"]  # built once
    for answer in answers:
        assert isinstance(answer, Skipped)
        assert answer.error == "its environment could not be built in a worker: tools.yaml: not a tool spec"


def test_a_worker_says_ready_then_built_for_each_environment_it_is_sent() -> None:
    context = multiprocessing.get_context("spawn")
    inbox, to_worker = context.Pipe(duplex=False)
    from_worker, outbox = context.Pipe(duplex=False)
    to_worker.send(pickle.dumps((REPLAYER, frozenset())))  # its settings come first
    to_worker.send(("env", 3, pickle.dumps(CounterEnv())))
    to_worker.send(("env", 4, pickle.dumps(Recipe(broken_spec, ("bad.yaml",)))))
    to_worker.send(("unit", 7, rollout(("inc", {})), 3))
    to_worker.close()
    serve(inbox, outbox)  # returns when its inbox closes
    messages = []
    while from_worker.poll():
        messages.append(from_worker.recv())
    assert [m[0] for m in messages] == [READY, BUILT, BUILT, 7]
    assert [m[1] for m in messages[1:3]] == [3, 4]
    assert pickle.loads(messages[3][1]).executable  # an answer goes pickled, for the reading process to load


def test_the_kept_build_error_does_not_grow_with_each_rollout() -> None:
    """Each rollout of an environment that failed to build gets the error with a traceback of its own raise,
    not one that chains the frames of every earlier rollout (which would keep them, and their rollouts, alive)."""
    shelf = Shelf()
    shelf.add(0, pickle.dumps(Recipe(broken_spec, ("tools.yaml",))))
    shelf.build(0)
    lengths = []
    for _ in range(3):
        try:
            shelf.get(0)
        except InputError as exc:
            length, trace = 0, exc.__traceback__
            while trace is not None:
                length, trace = length + 1, trace.tb_next
            lengths.append(length)
    assert lengths == [2, 2, 2]  # this frame and get's


def test_a_worker_sends_a_record_as_its_line_unless_the_run_needs_the_record() -> None:
    """With ``lines`` (no on_record, or an Observer) the worker encodes the record (the line the file holds,
    credentials redacted) and runs the Observer's look on it; without, it sends the record itself."""
    shelf = Shelf()
    shelf.add(0, pickle.dumps(CounterEnv()))
    unit = replace(rollout(("inc", {}), ("need", {"n": 5})), metadata={"api_base": "https://user:key@example.com/v1"})
    record = replay_on(shelf, REPLAYER, unit, 0)
    assert isinstance(record, PrefixRecord)
    sent = replay_on(shelf, Replayer(None, None, 0, lines=True, look=attrgetter("fed")), unit, 0)
    assert isinstance(sent, Written)
    assert (sent.key, sent.executable, sent.seen) == (unit.key, False, 2)
    assert sent.line == record_line(record)
    assert "key@" not in sent.line and json.loads(sent.line)["fed"] == 2
