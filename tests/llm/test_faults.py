"""Bad answers, server-directed waits and timing, through the official client against the loopback server."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest
from loopback import MESSAGES, TOOLS, endpoint, login

from fakes.openai_server import ScriptedServer, text_message
from prefix_exec.llm import BackendError, ChatBackend, EndpointConfig, ResponseCache
from prefix_exec.llm.tool_support import rejects_tools

_models = itertools.count()


def config(server: ScriptedServer, **kw: Any) -> EndpointConfig:
    # A fresh model id per backend: ``auto`` mode's learning is shared per (URL, model) in the process.
    return endpoint(server, **{"model": f"m{next(_models)}", **kw})


# ------------------------------------------------------------------------------------------- bad 200 answers


def test_an_empty_answer_is_retried_and_never_cached(tmp_path: Any) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with ScriptedServer(login) as server:
        server.faults.append("empty-choices")
        cfg = config(server)
        done = ChatBackend(cfg, cache=cache).complete(MESSAGES, TOOLS)
        again = ChatBackend(cfg, cache=ResponseCache(tmp_path / "cache.sqlite")).complete(MESSAGES, TOOLS)
        assert len(server.requests) == 2
    assert [(e.kind, e.status) for e in done.retries] == [("bad_response", None)]
    assert "no choices" in done.retries[0].message
    assert again.cached
    assert again.calls == done.calls
    assert again.calls[0].name == "login"


def test_a_poisoned_cache_entry_is_asked_again(tmp_path: Any) -> None:
    # An entry a version that cached before checking stored: the unit must not fail on every --resume.
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with ScriptedServer(login) as server:
        server.faults.append("empty-choices")
        backend = ChatBackend(config(server, max_retries=0), cache=cache)
        with pytest.raises(BackendError, match="no choices"):
            backend.complete(MESSAGES, TOOLS)
        assert len(cache) == 0
        request = backend._request(MESSAGES, TOOLS)
        key = {"base_url": server.base_url, "text_mode": False, "scope": "", **request}
        cache.put(key, {"choices": []}, 0.1)
        done = backend.complete(MESSAGES, TOOLS)
        assert len(server.requests) == 2
    assert not done.cached
    assert done.calls[0].name == "login"
    assert backend.complete(MESSAGES, TOOLS).cached


def test_truncated_json_is_retried_as_a_bad_response() -> None:
    with ScriptedServer(login) as server:
        server.faults.extend(["truncated", "truncated"])
        done = ChatBackend(config(server)).complete(MESSAGES, TOOLS)
    assert [e.kind for e in done.retries] == ["bad_response"] * 2
    assert "not valid JSON" in done.retries[0].message
    assert done.calls[0].name == "login"


def test_truncated_json_every_time_is_a_backend_error() -> None:
    with ScriptedServer(login) as server:
        server.faults.extend(["truncated"] * 3)
        with pytest.raises(BackendError, match=r"gave up after 3 attempts.*bad_response") as info:
            ChatBackend(config(server, max_retries=2), sleep=lambda _: None).complete(MESSAGES, TOOLS)
    assert [e.kind for e in info.value.retries] == ["bad_response"] * 2


@pytest.mark.parametrize(
    ("fault", "message"),
    [("no-tools", "bad request"), ("html", "not JSON: is base_url the API root")],
)
def test_a_client_error_or_a_web_page_is_a_backend_error_at_once(fault: str, message: str) -> None:
    # a 400 (here: tools refused) and an HTML page will not change on a retry
    with ScriptedServer(login) as server:
        server.faults.append(fault)
        with pytest.raises(BackendError, match=message):
            ChatBackend(config(server)).complete(MESSAGES, TOOLS)
        assert len(server.requests) == 1


def test_tool_arguments_sent_as_an_object_are_taken_as_they_are() -> None:
    with ScriptedServer(login) as server:
        server.faults.append("object-arguments")
        done = ChatBackend(config(server)).complete(MESSAGES, TOOLS)
    (call,) = done.calls
    assert (call.name, dict(call.arguments), call.parse_error) == ("login", {"username": "sam"}, None)
    # Sent back in the conversation as a string, the form every server accepts.
    assert done.message["tool_calls"][0]["function"] == {"name": "login", "arguments": '{"username": "sam"}'}


def test_a_tool_call_without_a_function_is_a_parse_error() -> None:
    no_function = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]}
    with ScriptedServer(lambda _: no_function) as server:
        (call,) = ChatBackend(config(server)).complete(MESSAGES, TOOLS).calls
    assert call.call_id == "c1"
    assert call.parse_error == "the tool call has no function object"


# ------------------------------------------------------------------------------------------- status codes


@pytest.mark.parametrize(("fault", "kind"), [("408", "timeout"), ("409", "conflict"), ("503", "server")])
def test_408_409_and_5xx_are_retried(fault: str, kind: str) -> None:
    with ScriptedServer(login) as server:
        server.faults.append(fault)
        done = ChatBackend(config(server)).complete(MESSAGES, TOOLS)
    assert [(e.kind, e.status) for e in done.retries] == [(kind, int(fault))]


def test_a_dropped_connection_is_retried_as_a_connection_error() -> None:
    """The server closes the connection without an answer ("drop"), as one that dies mid-request."""
    with ScriptedServer(login) as server:
        server.faults.append("drop")
        done = ChatBackend(config(server)).complete(MESSAGES, TOOLS)
        assert server.statuses == [0, 200]
    assert [(e.kind, e.status) for e in done.retries] == [("connection", None)]
    assert done.calls[0].name == "login"


def test_a_fault_chosen_by_the_request_fails_only_the_requests_it_names() -> None:
    """``fault_of`` picks a fault from the request's body (after the queued ones): here a 500 for every request
    whose last message is the user's second, so the first conversation is answered and the second retried."""

    def fault_of(body: dict[str, Any]) -> str | None:
        return "500" if body["messages"][-1]["content"] == "again" else None

    with ScriptedServer(login, fault_of=fault_of) as server:
        server.faults.append("503")
        first = ChatBackend(config(server)).complete(MESSAGES, TOOLS)
        again = [*MESSAGES, {"role": "user", "content": "again"}]
        with pytest.raises(BackendError, match="gave up after 2 attempts"):
            ChatBackend(config(server, max_retries=1), sleep=lambda _: None).complete(again, TOOLS)
        assert server.statuses == [503, 200, 500, 500]
    assert [(e.kind, e.status) for e in first.retries] == [("server", 503)]


@pytest.mark.parametrize(
    ("fault", "says"),
    [("quota", "no quota left"), ("401", "refused no key"), ("403", "may not use"), ("404", "API root")],
)
def test_fatal_answers_fail_at_once_with_what_to_check(fault: str, says: str) -> None:
    slept: list[float] = []
    with ScriptedServer(login) as server:
        server.faults.append(fault)
        with pytest.raises(BackendError, match=says) as info:
            ChatBackend(config(server), sleep=slept.append).complete(MESSAGES, TOOLS)
        assert len(server.requests) == 1
    assert info.value.retries == ()
    assert slept == []


@pytest.mark.parametrize(
    ("fault", "at_least"), [("retry-after:0.5", 0.5), ("retry-after-ms:700", 0.7), ("retry-after:90", 90.0)]
)
def test_server_directed_waits_are_honoured_above_the_backoff_cap(fault: str, at_least: float) -> None:
    slept: list[float] = []
    with ScriptedServer(login) as server:
        server.faults.append(fault)
        done = ChatBackend(config(server, backoff_max_s=0.05), sleep=slept.append).complete(MESSAGES, TOOLS)
    assert slept == [pytest.approx(at_least)]
    assert done.backoff_s == pytest.approx(at_least)


def test_a_wait_beyond_retry_after_max_s_fails_at_once() -> None:
    slept: list[float] = []
    with ScriptedServer(login) as server:
        server.faults.append("retry-after:121")
        with pytest.raises(BackendError, match=r"wait 121 s.*retry_after_max_s = 120"):
            ChatBackend(config(server), sleep=slept.append).complete(MESSAGES, TOOLS)
        server.faults.append("retry-after:121")
        ChatBackend(config(server, retry_after_max_s=200), sleep=slept.append).complete(MESSAGES, TOOLS)
    assert slept == [121.0]


# ------------------------------------------------------------------------------------------- timing


def test_latency_is_the_answering_attempt_only() -> None:
    # Cap 1, four callers released together against a server that sleeps 0.2 s per answer. Only relations
    # that hold however slow the machine is are asserted (timing figures belong in benchmarks/): each latency
    # covers the server's sleep; latencies held the one slot in turn, so they are disjoint and add up to at
    # most the whole span; a caller's latency and queue time fit in its own wall time; and someone waited.
    with ScriptedServer(login, latency_s=0.2) as server:
        backend = ChatBackend(config(server), slots=threading.BoundedSemaphore(1))
        done: list[tuple[Any, float]] = []
        barrier = threading.Barrier(4)

        def call() -> None:
            barrier.wait()
            started = time.perf_counter()
            result = backend.complete(MESSAGES, TOOLS)
            done.append((result, time.perf_counter() - started))

        threads = [threading.Thread(target=call) for _ in range(4)]
        span_start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        span = time.perf_counter() - span_start
    assert len(done) == 4
    eps = 1e-3
    for d, wall in done:
        assert d.cost.latency_s >= 0.2 - eps
        assert d.cost.latency_s + d.queue_s <= wall + eps
    assert sum(d.cost.latency_s for d, _ in done) <= span + eps
    assert max(d.queue_s for d, _ in done) >= 0.1
    # The rollout's cost record keeps the wait apart, in milliseconds.
    assert all(d.cost.queue_s == pytest.approx(d.queue_s, abs=1e-3) for d, _ in done)


def test_backoff_sleeps_are_not_latency() -> None:
    # The server asks for a 0.3 s wait, then fails once more, then answers: the sleep is backoff, and the
    # attempts, the sleeps and the answering latency are disjoint parts of the call's wall time.
    with ScriptedServer(login) as server:
        server.faults.extend(["retry-after:0.3", "500"])
        started = time.perf_counter()
        done = ChatBackend(config(server, backoff_base_s=0.0)).complete(MESSAGES, TOOLS)
        wall = time.perf_counter() - started
    assert done.backoff_s == pytest.approx(0.3)
    assert wall >= 0.3
    assert done.cost.latency_s + done.backoff_s + sum(e.elapsed_s for e in done.retries) <= wall + 1e-3
    assert done.cost.backoff_s == pytest.approx(done.backoff_s, abs=1e-3)
    assert [e.kind for e in done.retries] == ["rate_limit", "server"]


# ------------------------------------------------------------------------------------------- auto tool mode


def text_login(_: dict[str, Any]) -> dict[str, Any]:
    return text_message('<tool_call>{"name": "login", "arguments": {"username": "sam"}}</tool_call>')


def test_auto_mode_learns_once_for_every_view_and_backend_of_the_model() -> None:
    with ScriptedServer(text_login) as server:
        server.faults.extend(["no-tools"] * 5)
        cfg = config(server, tool_mode="auto")
        backend = ChatBackend(cfg)
        units = [backend.scoped(f"unit-{i}") for i in range(3)] + [ChatBackend(cfg.with_seed(2)).scoped("t2")]
        calls = [unit.complete(MESSAGES, TOOLS).calls for unit in units]
        statuses = list(server.statuses)
    assert statuses.count(400) == 1
    assert len(statuses) == 5
    assert all(c[0].name == "login" for c in calls)
    assert backend.text_mode
    assert units[-1].tools_rejected == "this server does not support tools"
    assert ChatBackend(config(server, tool_mode="native")).tools_rejected is None


def test_auto_mode_keeps_native_calls_on_a_400_that_is_not_about_tool_support() -> None:
    with ScriptedServer(login) as server:
        server.faults.append("400:Invalid 'messages[2]': messages with role 'tool' must follow tool_calls")
        backend = ChatBackend(config(server, tool_mode="auto"))
        with pytest.raises(BackendError, match="bad request"):
            backend.complete(MESSAGES, TOOLS)
        assert len(server.requests) == 1
        assert not backend.text_mode
        assert backend.tools_rejected is None
        assert "tools" in server.requests[0]


@pytest.mark.parametrize(
    ("message", "refuses"),
    [
        ("registry.ollama.ai/library/gemma:2b does not support tools", True),
        ('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set', True),
        ("tools param requires --jinja flag", True),
        ("Unrecognized request argument supplied: tools", True),
        ("tool calling is not supported for this model", True),
        ("Invalid 'tools[0].function.name': string does not match pattern", False),
        ("messages with role 'tool' must be a response to a preceding message with 'tool_calls'", False),
        ("This model's maximum context length is 8192 tokens", False),
    ],
)
def test_only_a_refusal_of_tools_switches_to_text(message: str, refuses: bool) -> None:
    assert rejects_tools(message) is refuses


@pytest.mark.parametrize(
    ("answer", "calls", "prose"),
    [
        (
            '<tool_call>\n```json\n{"name": "login", "arguments": {"username": "sam"}}\n```\n</tool_call>',
            [("login", {"username": "sam"}, None)],
            None,
        ),
        ("I will use the <tool_call> format. Done.", [], "I will use the <tool_call> format. Done."),
        (
            'Logging in. <tool_call>{"name": "login", "arguments": {"user',
            [("login", {}, "not valid JSON")],
            "Logging in.",
        ),
    ],
)
def test_text_mode_reads_fenced_blocks_and_ignores_the_tag_in_prose(
    answer: str, calls: list[Any], prose: str | None
) -> None:
    from prefix_exec.llm.textcalls import read_text_calls

    with ScriptedServer(lambda _: text_message(answer)) as server:
        done = ChatBackend(config(server, tool_mode="text")).complete(MESSAGES, TOOLS)
    assert [(c.name, dict(c.arguments)) for c in done.calls] == [(name, args) for name, args, _ in calls]
    for call, (_, _, error) in zip(done.calls, calls, strict=True):
        assert (call.parse_error is None) if error is None else (error in (call.parse_error or ""))
    assert read_text_calls(answer).prose == prose


# ------------------------------------------------------------------------------------------- the test server


def test_a_responder_that_raises_is_a_500_and_the_server_goes_on() -> None:
    answers = iter([KeyError("no script for this"), login({})])

    def respond(_: dict[str, Any]) -> dict[str, Any]:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    with ScriptedServer(respond) as server:
        done = ChatBackend(config(server)).complete(MESSAGES, TOOLS)
        assert server.statuses == [500, 200]
        assert server.in_flight == 0
        assert server.errors == ["KeyError('no script for this')"]
    assert [e.kind for e in done.retries] == ["server"]
    assert "responder raised" in done.retries[0].message
