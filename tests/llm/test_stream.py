"""Streamed answers (``stream = true``; issue 46, item 2): the chunks put back together are the answer the same
request gets unstreamed (same rollout, same cache entry), and while a request streams the progress line counts its
tokens."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from fakes import ticketing_agent
from fakes.openai_server import ScriptedServer, chunks_of, text_message, tool_message
from prefix_exec.llm.backend import ChatBackend
from prefix_exec.llm.cache import ResponseCache
from prefix_exec.llm.config import EndpointConfig
from prefix_exec.llm.decode import kept_body
from prefix_exec.llm.inflight import IN_FLIGHT, Cancelled, InFlight, Seen, describe
from prefix_exec.llm.stream import assemble
from prefix_exec.runner.progress import Progress
from prefix_exec.runner.run_dir import RunReport, run_grid
from runner.test_run import rows, strip_latency, unit_key, write_grid

#: A hang guard only (the tests wait for events, never for a time).
DEADLINE_S = 60


def payload(message: dict[str, Any], finish: str) -> dict[str, Any]:
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    choices = [{"index": 0, "message": message, "finish_reason": finish}]
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "m", "choices": choices, "usage": usage}


@pytest.mark.parametrize(
    "message",
    [
        text_message('Héllo, a longer answer with "quotes" and\nnew lines that spans many chunks.'),
        tool_message([("login", {"username": "sam"}), ("search_tickets", {"query": "vpn", "status": "open"})]),
        tool_message([("login", '{"username": ')], content="I will log in first."),  # arguments left broken
    ],
)
def test_the_chunks_put_together_are_the_unstreamed_body(message: dict[str, Any]) -> None:
    whole = payload(message, "tool_calls" if message.get("tool_calls") else "stop")
    counted: list[int] = []
    body = assemble([*chunks_of(whole, usage=True), "not an object", {"choices": "junk"}], lambda: counted.append(1))
    assert body == whole
    text = (message.get("content") or "") + "".join(c["function"]["arguments"] for c in message.get("tool_calls", []))
    assert len(counted) == sum(1 for chunk in chunks_of(whole, usage=False) if _text_of(chunk)) > 0
    assert len(counted) >= len(text) // 4


def _text_of(chunk: dict[str, Any]) -> str:
    delta = chunk["choices"][0]["delta"]
    calls = delta.get("tool_calls") or []
    return (delta.get("content") or "") + "".join(c["function"].get("arguments", "") for c in calls)


def test_an_empty_stream_has_no_choices() -> None:
    assert assemble([])["choices"] == []


def test_a_grid_run_streamed_writes_the_rollouts_and_cache_of_one_unstreamed(tmp_path: Path) -> None:
    methods = ["react", "dual-loop", "prompt-planning"]
    for side in ("plain", "streamed"):
        (tmp_path / side).mkdir()
    with ScriptedServer(ticketing_agent.respond) as server:
        plain = write_grid(tmp_path / "plain", server.base_url, methods=methods)
        streamed = write_grid(tmp_path / "streamed", server.base_url, methods=methods, extra="stream = true")
        run_grid(plain, tmp_path / "plain" / "run", max_concurrency=2)
        first = len(server.requests)
        run_grid(streamed, tmp_path / "streamed" / "run", max_concurrency=2)
        executor = [r for r in server.requests[first:] if r["model"] == "exec-model"]  # the judge does not stream
        assert server.streamed == len(executor) > 0 and all(r["stream"] for r in executor)
    for name in ("rollouts.jsonl", "records.jsonl"):
        one = {unit_key(r): strip_latency(r) for r in rows(tmp_path / "plain" / "run" / name)}
        two = {unit_key(r): strip_latency(r) for r in rows(tmp_path / "streamed" / "run" / name)}
        assert one == two and len(one) == 18
    caches = [ResponseCache(tmp_path / side / "run" / "cache.sqlite") for side in ("plain", "streamed")]
    entries = [{key: {**body, "id": None} for key, body, _ in cache.entries()} for cache in caches]
    assert entries[0] == entries[1]  # the same keys and the same answers (ids differ by arrival order)


def config(server: ScriptedServer, **settings: Any) -> EndpointConfig:
    return EndpointConfig(model="m", base_url=server.base_url, api_key_env=None, max_retries=0, **settings)


def test_a_server_that_does_not_stream_is_read_as_one_body() -> None:
    with ScriptedServer(lambda body: text_message("plain"), streams=False) as server:
        done = ChatBackend(config(server, stream=True)).complete([{"role": "user", "content": "hi"}])
        assert server.requests[0]["stream"] is True and server.streamed == 0
    assert done.content == "plain" and done.cost.completion_tokens > 0


class Held:
    """A stream held before chunk ``at`` until :meth:`release`; :attr:`reached` is set when it gets there."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.reached = threading.Event()
        self._released = threading.Event()

    def __call__(self, number: int) -> None:
        if number == self.at:
            self.reached.set()
            self._released.wait(DEADLINE_S)

    def release(self) -> None:
        self._released.set()


def test_the_progress_line_counts_a_streamed_answers_tokens_while_it_arrives() -> None:
    held = Held(at=11)  # chunk 0 holds the role, 1-10 text: 10 tokens so far
    log = io.StringIO()
    with ScriptedServer(lambda body: text_message("word" * 40), chunk_wait=held) as server:
        backend = ChatBackend(config(server, stream=True))
        progress = Progress(total=1, initial=0, log=log, tally=RunReport(), interval_s=0.05)
        answers: list[str | None] = []
        ask = [{"role": "user", "content": "x"}]
        thread = threading.Thread(target=lambda: answers.append(backend.complete(ask).content))
        thread.start()
        try:
            assert held.reached.wait(DEADLINE_S)
            seen = _wait_for(lambda: [s for s in IN_FLIGHT.snapshot() if s.tokens == 10])
            assert describe(seen).startswith("executor 1 (0m") and describe(seen).endswith(", 10 tokens so far)")
            _wait_for(
                lambda: "requests in flight: executor 1 (0m0" in log.getvalue() and "10 tokens so far" in log.getvalue()
            )
        finally:
            held.release()
            thread.join(DEADLINE_S)
            progress.close()
    assert answers == ["word" * 40]
    assert IN_FLIGHT.snapshot() == []


def _wait_for(found: Any) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while not (value := found()):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return value


def test_describe_sums_tokens_per_role_and_leaves_unstreamed_ones_by_age() -> None:
    seen = [Seen("executor", 75.0, 12), Seen("executor", 3.0, 30), Seen("planner", 130.0)]
    assert describe(seen) == "executor 2 (1m15s, 42 tokens so far), planner 1 (2m10s)"


def test_ctrl_c_ends_a_streamed_request_without_a_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    flight = InFlight()
    monkeypatch.setattr("prefix_exec.llm.backend.IN_FLIGHT", flight)
    held = Held(at=5)
    with ScriptedServer(lambda body: text_message("late " * 50), chunk_wait=held) as server:
        backend = ChatBackend(EndpointConfig(model="m", base_url=server.base_url, api_key_env=None, stream=True))
        outcome: list[BaseException | str | None] = []

        def ask() -> None:
            try:
                outcome.append(backend.complete([{"role": "user", "content": "hi"}]).content)
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=ask)
        thread.start()
        assert held.reached.wait(DEADLINE_S)
        flight.cancel_all()
        thread.join(DEADLINE_S)
        held.release()
        sent = len(server.requests)
    assert len(outcome) == 1 and isinstance(outcome[0], Cancelled), outcome
    assert sent == 1


def test_stream_must_be_a_boolean() -> None:
    with pytest.raises(Exception, match="must be true or false"):
        EndpointConfig.from_mapping({"model": "m", "stream": "yes"})
    assert json.dumps(EndpointConfig(model="m", stream=True).decoding()).find("stream") == -1  # not a decoding setting


def test_a_runaway_streamed_answer_is_cut_as_it_arrives_as_the_unstreamed_one_is_cut() -> None:
    pieces = [f"{i:06d}" + "x" * 99_994 for i in range(30)]  # 3,000,000 characters in 30 chunks
    chunks = [{"id": "c1", "choices": [{"index": 0, "delta": {"content": piece}}]} for piece in pieces]
    streamed = assemble(chunks)
    whole = kept_body({"choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(pieces)}}]})
    assert streamed["choices"][0]["message"]["content"] == whole["choices"][0]["message"]["content"]
    assert streamed["choices"][0]["message"]["content"].endswith("[2,000,000 more characters cut by prefix-exec]")
