"""A run whose model writes long answers at every step (issue 45, item 3): each answer is kept to its bound, and
the rollout line that sums them is cut to the written-line bound, so ``--resume`` reads the run's own folder. The
bound is lowered here (``records.line_bound.MAX_WRITTEN_BYTES``) so that a few steps of the scripted server pass
it; tests/records/test_line_bound.py cuts a real-size line of 70 answers. The cache keeps no more of an answer
than the rollout (a 3 MB answer is cached as its kept 1,000,000 characters)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import ScriptedServer, text_message, tool_message
from prefix_exec.llm.cache import ResponseCache
from prefix_exec.llm.decode import decode_answer
from prefix_exec.llm.text_reading import MAX_ANSWER_CHARS
from prefix_exec.records import line_bound
from prefix_exec.records.codec import read_records, read_rollouts
from prefix_exec.runner.run_dir import run_grid
from runner.test_run import REPO

BOUND = 600_000
STEPS = 6
ANSWER = "Let me think about this. " * 8_000  # 200,000 characters a step


def respond(body: dict[str, Any]) -> dict[str, Any]:
    """``STEPS`` long answers with a login call each, then a final answer longer than the per-answer bound."""
    done = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if done < STEPS:
        return tool_message([("login", {"username": "sam"})], content=ANSWER)
    return text_message("z" * (3 * MAX_ANSWER_CHARS))


def write_grid(folder: Path, base_url: str) -> Path:
    grid = folder / "grid.toml"
    grid.write_text(
        f"""methods = ["react"]
[agent]
max_steps = {STEPS + 2}
[[datasets]]
name = "ticketing"
kind = "custom"
spec = "{REPO / "examples" / "ticketing" / "tools.yaml"}"
tasks = ["open-vpn-followup"]
[[models]]
name = "m"
model = "m"
base_url = "{base_url}"
api_key_env = ""
max_retries = 0
"""
    )
    return grid


def test_a_long_rollout_is_cut_to_the_line_bound_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(line_bound, "MAX_WRITTEN_BYTES", BOUND)
    out = tmp_path / "run"
    with ScriptedServer(respond) as server:
        grid = write_grid(tmp_path, server.base_url)
        report = run_grid(grid, out)
        assert (report.written, report.failed) == (1, 0)
        again = run_grid(grid, out, resume=True)  # the folder reads back: nothing refused, nothing redone
        sent = len(server.requests)
    assert (again.resumed, again.written, again.failed) == (1, 0, 0)
    assert sent == STEPS + 1
    for name in ("rollouts.jsonl", "records.jsonl"):
        assert len((out / name).read_bytes()) <= BOUND + 1
    [rollout] = read_rollouts(out / "rollouts.jsonl")
    note = rollout.metadata[line_bound.NOTE]
    assert note["bytes"] > BOUND and note["bound"] == BOUND and note["arguments_cut"] is False
    answers = [m["content"] for m in rollout.transcript or () if m["role"] == "assistant"]
    assert len(answers) == STEPS + 1 and note["texts_cut"] == STEPS + 1
    assert all(a.startswith("Let me think") and a.endswith("cut by prefix-exec: line_bound]") for a in answers[:-1])
    [record] = read_records(out / "records.jsonl")
    assert (record.T, record.fed) == (STEPS, 2)  # replay saw every call (a second login is refused)
    assert [a.arguments for a in rollout.actions] == [{"username": "sam"}] * STEPS


def test_the_cache_keeps_an_answer_as_the_rollout_keeps_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ScriptedServer(respond) as server:
        run_grid(write_grid(tmp_path, server.base_url), out)
    stored = [response for _, response, _ in ResponseCache(out / "cache.sqlite").entries()]
    longest = max(stored, key=lambda r: len(json.dumps(r)))
    content = longest["choices"][0]["message"]["content"]
    assert content == "z" * MAX_ANSWER_CHARS + f"... [{2 * MAX_ANSWER_CHARS:,} more characters cut by prefix-exec]"
    [rollout] = read_rollouts(out / "rollouts.jsonl")
    assert (rollout.transcript or ())[-1]["content"] == content
    again = decode_answer(longest, mode="native", text_format="auto", role="executor", model="m", latency_s=0.0)
    assert again.content == content  # read again from the cache: the same answer, not cut twice
