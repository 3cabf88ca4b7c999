"""The worker side of ``score --workers N`` (:mod:`prefix_exec.scoring.pool.dispatch`): a worker process's loop, and
the environments a worker (process or Ray actor) was sent, built once each; what it answers is
:mod:`prefix_exec.scoring.pool.messages`'s."""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable
from functools import partial
from typing import Any

from prefix_exec.envs.recipe import Recipe
from prefix_exec.errors import InputError
from prefix_exec.scoring.numbering import rollout_digest
from prefix_exec.scoring.pool.messages import BUILT, READY, Batched, Decoded, Raised
from prefix_exec.scoring.replayer import Outcome, Replayer
from prefix_exec.scoring.units import Reading, unit_name
from prefix_exec.trajectory import Rollout, Skipped, UnitKey


class Shelf:
    """A worker's environments: each payload as it came, built (unpickled, or made from its recipe) on first use;
    one that fails to build fails every rollout that needs it, with the same error."""

    def __init__(self) -> None:
        self.payloads: dict[int, bytes] = {}
        self.built: dict[int, Any] = {}
        self.failed: dict[int, Exception] = {}

    def add(self, token: int, payload: bytes) -> None:
        self.payloads[token] = payload

    def get(self, token: int) -> Any:
        if token in self.failed:
            # Raised afresh: raising the kept one again would chain each raise's frames (every rollout's) onto it.
            raise self.failed[token].with_traceback(None)
        if token not in self.built:
            try:
                item = pickle.loads(self.payloads.pop(token))
                self.built[token] = item.make() if isinstance(item, Recipe) else item
            except Exception as exc:
                self.failed[token] = exc
                raise
        return self.built[token]

    def build(self, token: int) -> None:
        """Build ``token``'s environment now; an error is kept for the rollouts that need it (:meth:`get`)."""
        with contextlib.suppress(Exception):
            self.get(token)


def replay_on(shelf: Shelf, replayer: Replayer, rollout: Rollout, token: int) -> Outcome | Raised:
    """One rollout replayed in a worker. An environment that cannot be built there is that rollout's error; an
    exception the replay lets through (a bug: one worker would stop the run with it) is sent back to be raised."""
    try:
        env = shelf.get(token)
    except (InputError, OSError, ImportError) as exc:
        text = exc.describe() if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
        return Skipped(unit_name(rollout), f"its environment could not be built in a worker: {text}")
    try:
        return replayer.sent(replayer(rollout, env))  # a record as its line (Written), made here
    except Exception as exc:
        return Raised(exc)


def decode_on(
    replay: Callable[[Rollout], Outcome | Raised], decode: Callable[[], Rollout | Skipped], done: frozenset[UnitKey]
) -> Decoded | None:
    """One unit decoded and, unless its identity is ``done``, replayed with ``replay`` (:func:`replay_on` in a
    worker; the reading process replays with the unit's own environment); ``None`` when it does not decode to a
    rollout (an error, or a unit that cannot be read): the reading process decodes it again in its turn and
    reports it as one worker would."""
    try:
        rollout = decode()
    except Exception:  # InputError without --keep-going, or a bug: raised again where one worker raises it
        return None
    if isinstance(rollout, Skipped):
        return None
    outcome = None if rollout.key in done else replay(rollout)
    return Decoded(rollout.key, rollout_digest(rollout), unit_name(rollout), outcome)


def batch_on(
    replay: Callable[[Rollout], Outcome | Raised], read: Callable[[], Reading], done: frozenset[UnitKey]
) -> Batched:
    """A batch read, each of its units decoded and replayed with ``replay`` (:func:`decode_on`). A reading that
    raises (a bug: one worker would stop there) answers as stopped before its first unit."""
    try:
        units, error, note = read()
    except Exception:
        return Batched([], True, None)
    answers = [unit if isinstance(unit, Skipped) else decode_on(replay, unit, done) for unit in units]
    return Batched(answers, error is not None, note)


def serve(inbox: Any, outbox: Any) -> None:
    """A worker process: take its settings (the pickled replayer and the identities already in the output) as
    the first message ``inbox`` brings, say READY, then replay each rollout it brings (decode it first when it
    comes undecoded) and send ``(seq, pickled outcome)`` on ``outbox``, until ``inbox`` closes (also before the
    settings came: a worker started early that no run adopted, :mod:`prefix_exec.scoring.pool.spawn`). The outcome goes
    pickled inside the message, so that the reading process knows which unit an answer it cannot load is for (an
    exception class whose ``__init__`` takes other arguments than its ``args``, say)."""
    replayer: Replayer
    done: frozenset[UnitKey]
    try:
        settings = inbox.recv()
    except (EOFError, OSError):
        return
    replayer, done = pickle.loads(settings)
    shelf = Shelf()
    outbox.send((READY, None))
    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):  # the reading process ended or closed the pool
            return
        if message[0] == "env":  # built at once: the reading process replays its rollouts until BUILT comes
            shelf.add(message[1], message[2])
            shelf.build(message[1])
            outbox.send((BUILT, message[1]))
            continue
        kind, seq, item, token = message
        if kind == "raw":
            answer: object = decode_on(partial(replay_on, shelf, replayer, token=token), item, done)
        elif kind == "batch":
            answer = batch_on(partial(replay_on, shelf, replayer, token=token), item, done)
        else:
            answer = replay_on(shelf, replayer, item, token)
        outbox.send((seq, pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)))
