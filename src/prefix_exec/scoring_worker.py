"""The worker side of ``score --workers N`` (:mod:`prefix_exec.scoring_pool`): a worker process's loop, and the
environments a worker (process or Ray actor) was sent, built once each."""

from __future__ import annotations

import pickle
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.recipe import Recipe
from prefix_exec.scoring import Outcome, Replayer, unit_name
from prefix_exec.trajectory import Rollout, Skipped

#: The sequence number of a worker process's first message, ``(READY, None)``: its imports and settings are done.
READY = -1


class Raised:
    """An exception met reading the input or replaying a unit: raised when every unit before it is written, as
    one worker would have raised it there."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Shelf:
    """A worker's environments: each payload as it came, built (unpickled, or made from its recipe) on first use."""

    def __init__(self) -> None:
        self.payloads: dict[int, bytes] = {}
        self.built: dict[int, Any] = {}

    def add(self, token: int, payload: bytes) -> None:
        self.payloads[token] = payload

    def get(self, token: int) -> Any:
        if token not in self.built:
            item = pickle.loads(self.payloads.pop(token))
            self.built[token] = item.make() if isinstance(item, Recipe) else item
        return self.built[token]


def replay_on(shelf: Shelf, replayer: Replayer, rollout: Rollout, token: int) -> Outcome | Raised:
    """One rollout replayed in a worker. An environment that cannot be built there is that rollout's error; an
    exception the replay lets through (a bug: one worker would stop the run with it) is sent back to be raised."""
    try:
        env = shelf.get(token)
    except (InputError, OSError, ImportError) as exc:
        text = exc.describe() if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
        return Skipped(unit_name(rollout), f"its environment could not be built in a worker: {text}")
    try:
        return replayer(rollout, env)
    except Exception as exc:
        return Raised(exc)


def serve(inbox: Any, outbox: Any, settings: bytes) -> None:
    """A worker process: replay each rollout ``inbox`` brings and send ``(seq, outcome)`` on ``outbox``, until
    ``inbox`` closes."""
    replayer: Replayer = pickle.loads(settings)
    shelf = Shelf()
    outbox.send((READY, None))
    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):  # the reading process ended or closed the pool
            return
        if message[0] == "env":
            shelf.add(message[1], message[2])
            continue
        _, seq, rollout, token = message
        outbox.send((seq, replay_on(shelf, replayer, rollout, token)))
