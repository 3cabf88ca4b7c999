"""A schema problem met only while applying a tool's schema to a call (a ``pattern`` past its time bound) is
the spec's fault, not the agent's: in scoring the rollout is that rollout's input error (``--keep-going``
scores the others), and in the guard the call gets a JSON-RPC error saying the spec could not be applied (the
session goes on). The time bound is lowered here so the catastrophic pattern ends in milliseconds."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCRequest

from prefix_exec.cli import main
from prefix_exec.envs.custom import schema_keywords
from prefix_exec.guard.messages import Streams
from prefix_exec.guard.options import GuardOptions
from prefix_exec.guard.pump import Pump
from prefix_exec.guard.shadow import Shadow

PATTERN = "^(a|aa)+$"  # exponential backtracking on "aaa...a!"
HOSTILE = "a" * 60 + "!"
SPEC = (
    "tools:\n  - name: login\n    parameters:\n      type: object\n      properties:\n"
    f"        username: {{type: string, pattern: '{PATTERN}'}}\n"
)


@pytest.fixture(autouse=True)
def _short_match_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_keywords, "MATCH_SECONDS", 0.01)


def _rollout(task: str, username: str) -> str:
    row = {"kind": "rollout", "schema_version": 1, "dataset": "d", "task_id": task, "model": "m", "method": "x"}
    return json.dumps(
        {**row, "trial": 0, "success": 1, "actions": [{"name": "login", "arguments": {"username": username}}]}
    )


def _score(tmp_path: Path, *extra: str) -> tuple[int, list[dict[str, Any]]]:
    (tmp_path / "spec.yaml").write_text(SPEC)
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(_rollout("bad", HOSTILE) + "\n" + _rollout("good", "aaaa") + "\n")
    out = tmp_path / "o.jsonl"
    code = main(["score", "custom", "--tools", str(tmp_path / "spec.yaml"), str(rollouts), "--out", str(out), *extra])
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return code, rows


def test_in_scoring_the_rollout_is_an_input_error_not_a_schema_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, rows = _score(tmp_path)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "task bad" in err and "schema could not be applied" in err and "catastrophic backtracking" in err
    assert [r["task_id"] for r in rows] == []  # not a record with a schema label against the agent
    code, rows = _score(tmp_path, "--keep-going", "--overwrite")
    err = capsys.readouterr().err
    assert code == 2 and "skipped task bad" in err
    assert [(r["task_id"], r["executable"]) for r in rows] == [("good", True)]


def _request(request_id: int, username: str) -> JSONRPCRequest:
    params = {"name": "login", "arguments": {"username": username}}
    return JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params=params)


def _inner(item: SessionMessage) -> Any:
    return getattr(item.message, "root", item.message)  # the SDK's message, or its RootModel wrapper


def test_in_the_guard_the_call_gets_an_error_naming_the_spec_and_the_session_goes_on(tmp_path: Path) -> None:
    shadow = Shadow(tmp_path / "tools.json")
    shadow.begin_listing()
    schema = {"type": "object", "properties": {"username": {"type": "string", "pattern": PATTERN}}}
    assert shadow.add_page({"tools": [{"name": "login", "inputSchema": schema}]})

    async def run() -> tuple[list[Any], list[Any]]:
        to_client, from_pump = anyio.create_memory_object_stream[Any](10)
        to_server, server_got = anyio.create_memory_object_stream[Any](10)
        _, nothing = anyio.create_memory_object_stream[Any](1)
        session = SimpleNamespace(shadow=shadow, log=SimpleNamespace(info={}))
        options = GuardOptions(mode="enforce")
        pump = Pump(Streams(nothing, to_client), Streams(nothing, to_server), session, options)  # type: ignore[arg-type]
        for request_id, username in ((1, HOSTILE), (2, "aaaa")):
            await pump._tools_call(_request(request_id, username), 0.0)
        return from_pump._state.buffer, server_got._state.buffer  # what reached each side

    answers, forwarded = anyio.run(run)
    (answer,) = [_inner(a) for a in answers]
    assert answer.id == 1
    assert "schema could not be applied" in answer.error.message and "login" in answer.error.message
    assert [_inner(m).id for m in forwarded] == [2]  # the refused call was not run; the next one was
