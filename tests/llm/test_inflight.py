"""The requests in flight: what the progress line shows while a request runs, and what Ctrl-C closes."""

from __future__ import annotations

import io
import threading
import time
from typing import Any

import pytest

from fakes.openai_server import ScriptedServer
from prefix_exec.llm.backend import ChatBackend
from prefix_exec.llm.config import EndpointConfig
from prefix_exec.llm.inflight import IN_FLIGHT, Cancelled, InFlight, describe
from prefix_exec.runner.progress import Progress
from prefix_exec.runner.run_dir import RunReport


def test_track_snapshot_and_describe() -> None:
    flight = InFlight()
    closed: list[str] = []
    with flight.track("executor", lambda: closed.append("e")), flight.track("planner", lambda: closed.append("p")):
        ages = flight.snapshot(now=time.monotonic() + 75)
        assert sorted(seen.role for seen in ages) == ["executor", "planner"]
        assert all(74 < seen.age < 80 and seen.tokens is None for seen in ages)
        assert describe(ages) == "executor 1 (1m15s), planner 1 (1m15s)"
        assert sorted(seen.role for seen in flight.cancel_all()) == ["executor", "planner"]
        assert sorted(closed) == ["e", "p"]
    assert flight.snapshot() == []
    assert describe([]) == "none"
    with pytest.raises(Cancelled), flight.track("executor", lambda: None):  # nothing is sent after Ctrl-C
        pass


def test_the_progress_line_names_the_requests_in_flight() -> None:
    log = io.StringIO()
    progress = Progress(total=2, initial=0, log=log, tally=RunReport(), interval_s=0.05)
    try:
        with IN_FLIGHT.track("executor", lambda: None):
            deadline = time.monotonic() + 30
            while "requests in flight: executor 1" not in log.getvalue():
                assert time.monotonic() < deadline, log.getvalue()
                time.sleep(0.02)
    finally:
        progress.close()
    assert "requests in flight: executor 1 (0m0" in log.getvalue()


def test_cancelling_closes_a_slow_request_and_it_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request the server answers after 20 s: cancel_all ends it well within a second, without a retry."""
    flight = InFlight()
    monkeypatch.setattr("prefix_exec.llm.backend.IN_FLIGHT", flight)

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": "late"}

    with ScriptedServer(answer, latency_s=20.0) as server:
        config = EndpointConfig(model="m", base_url=server.base_url, api_key_env=None, max_retries=3)
        backend = ChatBackend(config)
        outcome: list[BaseException | str] = []

        def ask() -> None:
            try:
                outcome.append(str(backend.complete([{"role": "user", "content": "hi"}]).content))
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=ask)
        thread.start()
        deadline = time.monotonic() + 10
        while not flight.snapshot():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        started = time.monotonic()
        flight.cancel_all()
        thread.join(5)
        took = time.monotonic() - started
        sent = len(server.requests)
    assert not thread.is_alive()
    assert took < 1.0, took
    assert len(outcome) == 1 and isinstance(outcome[0], Cancelled), outcome
    assert sent <= 1  # not retried
