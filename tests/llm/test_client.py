"""The openai clients of a process share one TLS context, and each still talks to its own endpoint."""

from __future__ import annotations

import gc
import ssl
from collections.abc import Iterator
from typing import Any

import pytest

from fakes.openai_server import ScriptedServer, text_message
from prefix_exec.llm import ChatBackend, EndpointConfig
from prefix_exec.llm import client as client_module
from prefix_exec.llm.client import openai_client


@pytest.fixture
def contexts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ssl.SSLContext]]:
    """Every TLS context built from now on (the process's cached one is forgotten first)."""
    client_module.import_openai()  # importing it builds contexts of its own, once
    built: list[ssl.SSLContext] = []
    original = ssl.SSLContext.__new__

    def counting(cls: type[ssl.SSLContext], *args: Any, **kwargs: Any) -> ssl.SSLContext:
        context = original(cls, *args, **kwargs)
        built.append(context)
        return context

    monkeypatch.setattr(ssl.SSLContext, "__new__", counting)
    client_module._tls_context.cache_clear()
    yield built
    client_module._tls_context.cache_clear()


def test_many_backends_build_one_tls_context(contexts: list[ssl.SSLContext]) -> None:
    backends = [
        ChatBackend(EndpointConfig(model="m", base_url=f"http://127.0.0.1:{9 + i}/v1", api_key_env=""))
        for i in range(5)
    ]
    assert len(contexts) == 1
    assert len({id(b._client._client) for b in backends}) == 5  # each has its own HTTP client (pool, timeouts)


def test_each_client_reaches_its_own_server(contexts: list[ssl.SSLContext]) -> None:
    with ScriptedServer(lambda _: text_message("a")) as a, ScriptedServer(lambda _: text_message("b")) as b:
        answers = [
            ChatBackend(EndpointConfig(model="m", base_url=server.base_url, api_key_env="")).complete(
                [{"role": "user", "content": "hi"}]
            )
            for server in (a, b)
        ]
        assert [c.message["content"] for c in answers] == ["a", "b"]
        assert len(a.requests) == len(b.requests) == 1
    assert len(contexts) == 1


def test_the_http_client_is_closed_when_its_last_client_is_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    assert client_module._tls_context() is not None  # else clients get openai's own default, and this tests nothing
    client = openai_client(base_url="http://127.0.0.1:9/v1", api_key="k", timeout_s=1.0, max_retries=0)
    # The class is shared by every client of the process, so a client another test left in a reference cycle
    # may be collected (and closed) here too: count only this client's HTTP client, by its id while it lives.
    target = id(client._client)
    closed: list[int] = []
    monkeypatch.setattr(type(client._client), "close", lambda self: closed.append(id(self)))
    sibling = client.with_options(timeout=2.0)  # shares the HTTP client
    del client
    gc.collect()
    assert target not in closed
    assert not sibling._client.is_closed
    del sibling
    gc.collect()
    assert closed.count(target) == 1
