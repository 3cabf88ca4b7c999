"""The backend through the official client against a real loopback server: decoding, faults, cap, cache."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from typing import Any

import pytest
from loopback import MESSAGES, TOOLS, endpoint, login

from fakes.openai_server import ScriptedServer, text_message, tool_message, usage_of
from prefix_exec.llm import BackendError, ChatBackend, EndpointConfig, ResponseCache


def test_native_tool_call_and_usage_are_decoded() -> None:
    with ScriptedServer(login) as server:
        done = ChatBackend(endpoint(server)).complete(MESSAGES, TOOLS, role="planner")
        request = server.requests[0]
    assert [(c.name, dict(c.arguments)) for c in done.calls] == [("login", {"username": "sam"})]
    assert request["tools"][0]["function"]["name"] == "login"
    assert request["temperature"] == 0.0
    expected = usage_of(request, login(request))
    assert done.cost.role == "planner"
    assert done.cost.model == "m"
    reasoning = expected["completion_tokens_details"]["reasoning_tokens"]
    assert (done.cost.prompt_tokens, done.cost.completion_tokens, done.cost.reasoning_tokens) == (
        expected["prompt_tokens"],
        expected["completion_tokens"],
        reasoning,
    )
    assert done.message["tool_calls"][0]["function"]["arguments"] == '{"username": "sam"}'


def test_seed_and_reasoning_effort_are_passed_through() -> None:
    with ScriptedServer(login) as server:
        ChatBackend(endpoint(server, seed=7, reasoning_effort="low", temperature=0.5)).complete(MESSAGES, TOOLS)
        request = server.requests[0]
    assert (request["seed"], request["reasoning_effort"], request["temperature"]) == (7, "low", 0.5)


def test_malformed_tool_call_json_becomes_a_parse_error() -> None:
    with ScriptedServer(lambda _: tool_message([("login", '{"username": "sam"')])) as server:
        done = ChatBackend(endpoint(server)).complete(MESSAGES, TOOLS)
    (call,) = done.calls
    assert call.name == "login"
    assert call.parse_error
    assert call.raw == '{"username": "sam"'
    assert not call.arguments


def test_429_storm_is_retried_with_bounded_jittered_backoff_and_reported() -> None:
    slept: list[float] = []
    seen: list[str] = []
    with ScriptedServer(login) as server:
        server.faults.extend(["429"] * 3 + ["500"])
        backend = ChatBackend(
            endpoint(server, backoff_max_s=0.02),
            sleep=slept.append,
            on_retry=lambda e: seen.append(e.kind),
            rng=random.Random(0),
        )
        done = backend.complete(MESSAGES, TOOLS)
        statuses = list(server.statuses)
    assert statuses == [429, 429, 429, 500, 200]
    assert [e.kind for e in done.retries] == seen == ["rate_limit"] * 3 + ["server"]
    assert [e.attempt for e in done.retries] == [1, 2, 3, 4]
    caps = [min(0.02, 0.01 * 2**i) for i in range(4)]
    assert all(0 <= d <= cap for d, cap in zip(slept, caps, strict=True))
    assert done.calls[0].name == "login"


def test_retries_are_bounded() -> None:
    with ScriptedServer(login) as server:
        server.faults.extend(["429"] * 10)
        with pytest.raises(BackendError, match="gave up after 3 attempts") as info:
            ChatBackend(endpoint(server, max_retries=2), sleep=lambda _: None).complete(MESSAGES, TOOLS)
        assert len(server.requests) == 3
    assert [e.kind for e in info.value.retries] == ["rate_limit", "rate_limit"]


def test_hang_past_the_timeout_is_retried() -> None:
    with ScriptedServer(login, hang_s=1.5) as server:
        server.faults.append("hang")
        done = ChatBackend(endpoint(server, timeout_s=0.3)).complete(MESSAGES, TOOLS)
    assert [e.kind for e in done.retries] == ["timeout"]
    assert done.calls[0].name == "login"


def test_connection_errors_are_retried_then_reported() -> None:
    with ScriptedServer(login) as server:
        url = server.base_url
    cfg = EndpointConfig(model="m", base_url=url, api_key_env="", max_retries=2, timeout_s=1.0)
    with pytest.raises(BackendError) as info:
        ChatBackend(cfg, sleep=lambda _: None).complete(MESSAGES, TOOLS)
    assert [e.kind for e in info.value.retries] == ["connection", "connection"]


def test_text_fallback_when_the_server_rejects_tools() -> None:
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        return text_message('Sure. <tool_call>{"name": "login", "arguments": {"username": "sam"}}</tool_call>')

    with ScriptedServer(respond) as server:
        server.faults.append("no-tools")
        backend = ChatBackend(endpoint(server, tool_mode="auto"))
        done = backend.complete(MESSAGES, TOOLS)
        second = server.requests[1]
    assert backend.text_mode
    assert "tools" not in second
    assert '"name": "login"' in second["messages"][0]["content"]
    assert "<tool_call>" in second["messages"][0]["content"]
    assert [(c.name, dict(c.arguments)) for c in done.calls] == [("login", {"username": "sam"})]
    assert backend.tool_result_message(done.calls[0], "ok")["role"] == "user"


def test_text_mode_parses_broken_blocks_as_parse_errors() -> None:
    with ScriptedServer(lambda _: text_message('<tool_call>{"name": "login", "arguments": {</tool_call>')) as server:
        done = ChatBackend(endpoint(server, tool_mode="text")).complete(MESSAGES, TOOLS)
    assert done.calls[0].name == "login"
    assert done.calls[0].parse_error


def test_cache_answers_repeated_requests_without_the_server(tmp_path: Any) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with ScriptedServer(login) as server:
        first = ChatBackend(endpoint(server, seed=1), cache=cache).complete(MESSAGES, TOOLS)
        again = ChatBackend(endpoint(server, seed=1), cache=ResponseCache(tmp_path / "cache.sqlite")).complete(
            MESSAGES, TOOLS
        )
        other_seed = ChatBackend(endpoint(server, seed=2), cache=cache).complete(MESSAGES, TOOLS)
        n = len(server.requests)
    assert n == 2
    assert len(cache) == 2
    assert again.cached
    assert not first.cached
    assert not other_seed.cached
    assert again.calls == first.calls
    assert again.cost == first.cost


def test_per_endpoint_concurrency_cap() -> None:
    with ScriptedServer(login, latency_s=0.15) as server:
        backends = [ChatBackend(endpoint(server, max_concurrency=2)) for _ in range(2)]
        threads = [threading.Thread(target=backends[i % 2].complete, args=(MESSAGES, TOOLS)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(server.requests) == 6
        assert server.max_in_flight == 2


def test_missing_api_key_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefix_exec.errors import InputError

    monkeypatch.delenv("PREFIX_EXEC_TEST_KEY", raising=False)
    with pytest.raises(InputError, match="PREFIX_EXEC_TEST_KEY"):
        EndpointConfig(model="m", api_key_env="PREFIX_EXEC_TEST_KEY").api_key()
    assert json.dumps(EndpointConfig(model="m").__dict__)  # plain data, picklable for Ray


def test_scoped_views_keep_their_cache_entries_apart(tmp_path: Any) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with ScriptedServer(login) as server:
        backend = ChatBackend(endpoint(server), cache=cache)
        backend.scoped("unit-a").complete(MESSAGES, TOOLS)
        hit = backend.scoped("unit-a").complete(MESSAGES, TOOLS)
        miss = backend.scoped("unit-b").complete(MESSAGES, TOOLS)
        assert len(server.requests) == 2
    assert hit.cached
    assert not miss.cached
    assert backend.scope == ""


# Run in a fresh, small interpreter: forking this test process (tau2, Ray, ToolSandbox's scenarios loaded) costs
# about 0.1 s per child and 120 children, where a bare parent forks them in well under a second.
CACHE_RACE = """
import multiprocessing, os, sys
from pathlib import Path
from prefix_exec.llm import ResponseCache

def open_and_write(path, barrier, results):
    barrier.wait()
    try:
        cache = ResponseCache(path)
        for i in range(20):
            cache.put({"pid": os.getpid(), "i": i}, {"ok": i}, 0.0)
        results.put("ok")
    except Exception as exc:
        results.put(repr(exc))

if __name__ == "__main__":
    context = multiprocessing.get_context("fork")
    for trial in range(10):
        path = Path(sys.argv[1]) / f"cache{trial}.sqlite"
        barrier, results = context.Barrier(12), context.Queue()
        workers = [context.Process(target=open_and_write, args=(path, barrier, results)) for _ in range(12)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        print(trial, sorted(results.get() for _ in workers), flush=True)
"""


@pytest.mark.slow
def test_many_processes_can_open_one_new_cache(tmp_path: Any) -> None:
    # Ray actors open the run's cache at the same moment; a fresh file's switch to WAL used to fail
    # ("database is locked") in about 1 of 15 such starts of 12 processes.
    done = subprocess.run(
        [sys.executable, "-c", CACHE_RACE, str(tmp_path)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{trial} {['ok'] * 12}" for trial in range(10)]
    for trial in range(10):
        assert len(ResponseCache(tmp_path / f"cache{trial}.sqlite")) == 12 * 20
