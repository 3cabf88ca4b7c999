"""``prefix-exec show``: each request of a run next to its answer, what was read and the verdict, on the real
model's recorded run replayed from its cache (tests/data/real-model), and on a run in progress."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.llm.backend import ChatBackend
from prefix_exec.llm.cache import ResponseCache
from prefix_exec.runner import run_grid
from prefix_exec.runner.exchanges import render, unit_views

FIXTURE = Path(__file__).parents[1] / "data" / "real-model"
REACT = "bfcl/multi_turn_base_100/qwen2.5-coder-0.5b/react/0"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The real-model grid run again with every answer from the fixture's cache (nothing reaches a server)."""
    folder = tmp_path_factory.mktemp("show") / "run"
    cache = ResponseCache(folder / "cache.sqlite")
    for line in (FIXTURE / "cache.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        cache.put_entry(row["key"], row["response"], row["latency_s"])

    def offline(self: ChatBackend, request: dict[str, Any], received: Any = None) -> dict[str, Any]:
        raise RuntimeError("not in the fixture's cache")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ChatBackend, "_post", offline)
        report = run_grid(FIXTURE / "grid.toml", folder, max_concurrency=1, max_consecutive_failures=0)
    assert report.failed == 0
    yield folder


def test_every_request_is_kept_and_shown_per_unit(run: Path) -> None:
    views = unit_views(run)
    assert len(views) == 6
    assert sum(len(requests) for requests in views.values()) == 28  # the fixture's 28 answers
    react = views[REACT]
    assert [view.role for view in react] == ["executor"] * 6
    first = react[0]
    assert first.format == "fenced"
    assert [(c.name, c.verdict) for c in first.calls] == [
        ("get_nvidia_stock_price", "rejected at depth 1: schema: unknown tool 'get_nvidia_stock_price'")
    ]
    run_on = react[1]  # 12 calls and a 13th cut by max_tokens, none replayed after the first rejection
    assert len(run_on.calls) == 13
    assert run_on.calls[-1].parse_error == "tool call is not valid JSON (Expecting value)"
    assert {c.verdict for c in run_on.calls} == {"not replayed (after the first rejection)"}
    assert run_on.exchange.response is not None
    assert run_on.exchange.response["choices"][0]["finish_reason"] == "length"


def test_dual_loop_plans_are_read_as_plans(run: Path) -> None:
    (requests,) = unit_views(run, "close-printer/qwen2.5-coder-0.5b/dual-loop").values()
    assert [view.role for view in requests] == ["planner", "planner", "executor"]
    assert requests[0].plan == "plan refused by the structure check: the plan must be an object with a 'steps' list"
    text = render({"u": requests})
    assert "read: plan refused by the structure check" in text
    assert "finish_reason length" in text


def test_the_command_shows_one_unit(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(run), "--unit", REACT]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"== {REACT}: 6 requests")
    assert "[user] I'm contemplating enhancing my investment portfolio" in out
    assert "verdict: rejected at depth 1: schema" in out
    assert main(["show", str(run), "--unit", "no-such-task"]) == 1


def test_a_request_in_flight_is_shown_as_such(tmp_path: Path) -> None:
    """A run in progress: the request kept before it was sent, no answer yet, no record yet."""
    cache = ResponseCache(tmp_path / "cache.sqlite")
    request = {
        "base_url": "http://user:secret@127.0.0.1:8080/v1",
        "scope": "bfcl\x1ft1\x1fm\x1freact\x1f0",
        "model": "m",
        "messages": [{"role": "user", "content": "x" * 20_000}],
        "tools": [{"type": "function", "function": {"name": "ls", "parameters": {}}}],
    }
    cache.asked(request, {"role": "executor", "mode": "native", "text_format": "auto", "tools": ["ls"]})
    (requests,) = unit_views(tmp_path).values()
    kept = requests[0].exchange.request
    assert "secret" not in json.dumps(kept)  # redacted
    assert kept["tools"] == ["ls"] and len(kept["tools_sha256"]) == 64  # tools by name and digest
    assert len(kept["messages"][0]["content"]) < 8_100  # bounded
    text = render(unit_views(tmp_path), now=requests[0].exchange.asked_at + 42)
    assert "no answer yet: asked 42 s ago (in flight, or the run stopped)" in text
    cache.put(request, {"choices": [{"finish_reason": "stop", "message": {"content": "done"}}]}, 1.5)
    (requests,) = unit_views(tmp_path).values()
    assert requests[0].calls == () and requests[0].exchange.latency_s == 1.5


def test_a_folder_without_a_cache_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path)]) == 2
    assert "no cache.sqlite" in capsys.readouterr().err


def test_a_unit_an_infrastructure_failure_ended_is_shown_as_the_systems(run: Path, tmp_path: Path) -> None:
    """Its first rejected call is shown with the label 'infrastructure' and the failure's text, never as one of the
    five labels (the same rule as the records and the report: prefix_exec.records.infrastructure)."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    lines = (copy / "records.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows:
        if "/".join(str(row[k]) for k in ("dataset", "task_id", "model", "method", "trial")) == REACT:
            row.setdefault("metadata", {})["infrastructure"] = "Error code: 500 - model server down"
    (copy / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    first = unit_views(copy, REACT)[REACT][0]
    assert [c.verdict for c in first.calls] == [
        "rejected at depth 1: infrastructure (the system's, not the agent's: Error code: 500 - model server down)"
    ]
    other = unit_views(copy, "close-printer/qwen2.5-coder-0.5b/react")
    assert all("infrastructure" not in c.verdict for views in other.values() for v in views for c in v.calls)
