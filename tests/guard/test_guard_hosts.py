"""``guard --listen`` against DNS rebinding (prefix_exec/guard/hosts.py): a request whose Host does not name the
guard gets 421, one with an Origin not given by ``--allowed-origin`` gets 403, and neither reaches the upstream.
The policy's rules first, then the guard in front of the notes server, driven with raw HTTP as a rebinding page
would drive a browser."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from guard_client import NOTES_SERVER
from test_guard_http import _line

from prefix_exec.cli import main
from prefix_exec.guard.hosts import parse_allowed_host, parse_allowed_origin, policy_for

LOCAL = policy_for("127.0.0.1", [], [])


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:8765", "localhost:1", "LOCALHOST", "[::1]:8765", "127.0.0.1"],
)
def test_a_loopback_listener_answers_loopback_hosts(host: str) -> None:
    assert LOCAL.refusal(host, None) is None


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:8765",
        "localhost.",  # another name
        "127.0.0.1.nip.io:8765",
        "localhost:8765@evil.example",
        "localhost:99999",
        "localhost:8765:1",
        "[::1",
        "",
        None,
        "local host",
        "0.0.0.0:8765",
    ],
)
def test_other_hosts_get_421(host: str | None) -> None:
    refused = LOCAL.refusal(host, None)
    assert refused is not None and refused[0] == 421


def test_origins_pass_only_when_given() -> None:
    assert LOCAL.refusal("localhost:1", "http://localhost:6274")[0] == 403  # type: ignore[index]
    assert LOCAL.refusal("localhost:1", "null")[0] == 403  # type: ignore[index]
    widened = policy_for(
        "127.0.0.1",
        [parse_allowed_host("mcp.test")],  # type: ignore[list-item]
        [parse_allowed_origin("http://localhost:6274"), parse_allowed_origin("https://app.test:*")],  # type: ignore[list-item]
    )
    assert widened.refusal("mcp.test:9", "http://LOCALHOST:6274") is None
    assert widened.refusal("mcp.test", "https://app.test:1234") is None
    assert widened.refusal("mcp.test", "https://app.test") is None
    assert widened.refusal("mcp.test", "http://localhost:6275")[0] == 403  # type: ignore[index]
    assert widened.refusal("mcp.test", "http://app.test:1234")[0] == 403  # type: ignore[index]
    assert widened.refusal("evil.test", None)[0] == 421  # type: ignore[index]


def test_a_named_listener_answers_its_own_address_and_a_wildcard_none() -> None:
    assert policy_for("192.168.1.5", [], []).refusal("192.168.1.5:80", None) is None
    assert policy_for("0.0.0.0", [], []).refusal("0.0.0.0:80", None) is not None
    assert policy_for("[::]", [], []).refusal("[::]:80", None) is not None
    assert policy_for("::1", [], []).refusal("[::1]:80", None) is None


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--allowed-host", "a b"),
        ("--allowed-host", "x:port"),
        ("--allowed-host", "x:1:*"),
        ("--allowed-origin", "localhost"),
        ("--allowed-origin", "http://a/path"),
        ("--allowed-origin", "http://a:1:*"),
    ],
)
def test_a_malformed_allowance_is_an_input_error(option: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["guard", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9/mcp", option, value])
    assert code == 2 and option in capsys.readouterr().err


def test_allowances_need_listen(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["guard", "--allowed-host", "x", "--", "true"]) == 2
    assert "go with --listen" in capsys.readouterr().err


HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _body(response: httpx.Response) -> Any:
    """The JSON-RPC message of an answer, sent as JSON or as one server-sent event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return response.json()


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[str]:
    """The guard's URL, in front of the notes server, answering also ``mcp.test`` and the origin
    ``http://app.test:*``."""
    upstream = subprocess.Popen([*NOTES_SERVER, "--http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    guard = None
    try:
        port = _line(upstream.stdout, r"PORT (\d+)").group(1)
        args = [
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            f"http://127.0.0.1:{port}/mcp",
            "--record",
            str(tmp_path / "r"),
        ]
        args += ["--allowed-host", "mcp.test", "--allowed-origin", "http://app.test:*"]
        guard = subprocess.Popen(
            [sys.executable, "-m", "prefix_exec", "guard", *args],
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        yield _line(guard.stderr, r"listening on (http://\S+/)").group(1) + "mcp"
        guard.send_signal(signal.SIGTERM)
        guard.wait(timeout=30)
    finally:
        for process in (guard, upstream):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=30)


@pytest.mark.slow
def test_a_rebound_request_never_reaches_the_upstream(listening: str) -> None:
    url = listening
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    create = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "create_note", "arguments": {"text": "x"}},
    }
    listed = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_notes", "arguments": {}}}
    with httpx.Client(timeout=30) as client:
        assert client.post(url, json=initialize, headers={**HEADERS, "host": "evil.example"}).status_code == 421
        assert (
            client.post(url, json=initialize, headers={**HEADERS, "origin": "http://evil.example"}).status_code == 403
        )
        opened = client.post(url, json=initialize, headers=HEADERS)
        assert opened.status_code == 200, opened.text
        session = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        rebound = client.post(url, json=create, headers={**session, "host": "evil.example:80"})
        assert rebound.status_code == 421 and "Host" in rebound.json()["error"]["message"]
        foreign = client.post(url, json=create, headers={**session, "origin": "http://localhost:6274"})
        assert foreign.status_code == 403
        assert _body(client.post(url, json=listed, headers=session))["result"]["structuredContent"] == {"notes": {}}
        # the widened names pass, and reach the server
        allowed = client.post(
            url, json=create, headers={**session, "host": "mcp.test:1", "origin": "http://app.test:5"}
        )
        assert allowed.status_code == 200 and "error" not in _body(allowed)
        notes = _body(client.post(url, json=listed, headers=session))["result"]["structuredContent"]["notes"]
        assert len(notes) == 1
