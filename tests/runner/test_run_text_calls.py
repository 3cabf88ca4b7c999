"""A grid on a server that leaves the model's calls in the text (no tool parser): every unit of the model reads
them alike and the rollouts say so (Ray workers too: tests/runner/test_run.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes import ticketing_agent
from fakes.openai_server import ScriptedServer
from fakes.text_calls import content_server
from prefix_exec.agents.turn_loop import CONTENT_FALLBACK
from prefix_exec.runner.run_dir import run_grid
from runner.test_run import rows, unit_key, write_grid

METHODS = ["react", "guarded-react", "dual-loop"]
AUTO = 'tool_mode = "auto"\ntext_format = "json"'


def test_every_unit_reads_the_calls_left_in_the_text_and_notes_it(tmp_path: Path) -> None:
    with ScriptedServer(content_server(ticketing_agent.respond, "json")) as server:
        grid = write_grid(tmp_path, server.base_url, methods=METHODS, extra=AUTO)
        report = run_grid(grid, tmp_path / "run", max_concurrency=3)
        requests = list(server.requests)
    assert (report.written, report.failed) == (18, 0)
    rollouts = rows(tmp_path / "run" / "rollouts.jsonl")
    records = {unit_key(r): r for r in rows(tmp_path / "run" / "records.jsonl")}
    for rollout in rollouts:
        calls = rollout["actions"]
        if rollout["task_id"] == "what-can-you-do":  # the one task that needs no call
            assert not calls
            assert "text_fallback" not in rollout["metadata"]
            continue
        assert calls, rollout["task_id"]
        assert rollout["metadata"]["text_fallback"] == CONTENT_FALLBACK
        assert set(rollout["metadata"]["text_formats"].values()) == {"json"}
        assert rollout["metadata"]["decoding"]["text_format"] == "json"
        record = records[unit_key(rollout)]
        assert record["fed"] >= 1
    # No unit switched to text mode: the tools only ever went natively.
    assert any("tools" in b for b in requests)
    assert not any("You can call these tools" in json.dumps(b["messages"]) for b in requests)
    settings = json.loads((tmp_path / "run" / "settings.json").read_text())
    assert settings["models"]["m1"]["tool_mode"] == "auto"
    assert settings["models"]["m1"]["text_format"] == "json"


def test_a_rollout_notes_calls_read_from_the_content_and_a_refusal_of_tools_apart(tmp_path: Path) -> None:
    """Both fallbacks of ``auto`` in one rollout: the first answer leaves its call in the content, then the
    server refuses ``tools`` and the model switches to text. Each has its own key; neither overwrites the other."""
    script = content_server(ticketing_agent.respond, "json")
    natives: list[int] = []

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        if "tools" in body:
            natives.append(1)
            if len(natives) == 1:
                server.faults.append("no-tools")  # the next request is refused
        return script(body)

    with ScriptedServer(respond) as server:
        grid = write_grid(tmp_path, server.base_url, methods=["react"], extra=AUTO)
        report = run_grid(grid, tmp_path / "run", max_concurrency=1)
    assert report.failed == 0
    noted = [r["metadata"] for r in rows(tmp_path / "run" / "rollouts.jsonl") if r["actions"]]
    first = [m for m in noted if "text_fallback" in m]
    assert len(first) == 1 and first[0]["text_fallback"] == CONTENT_FALLBACK
    assert all(m["tools_refused"] == "this server does not support tools" for m in noted)
