"""The whole pipeline on a real model's answers, offline: tests/data/real-model holds the response cache of one
small grid recorded against Qwen2.5-Coder-0.5B-Instruct on llama.cpp (README.md there says how). The grid runs
again here with every request answered from that cache: a request the cache does not hold fails the test (the
backend's network call is replaced by one that records the miss and raises), so nothing reaches any server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from prefix_exec.agents.turn_loop import CONTENT_FALLBACK
from prefix_exec.envs.bfcl.tasks import function_docs
from prefix_exec.llm.backend import ChatBackend
from prefix_exec.llm.cache import ResponseCache
from prefix_exec.records.codec import read_records, read_rollouts
from prefix_exec.runner import run_grid
from prefix_exec.trajectory import PrefixRecord, Rollout

#: The replay loads BFCL and runs 6 units: about 5 to 15 s on two busy cores.
pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "real-model"
REPO = Path(__file__).resolve().parents[2]
Key = tuple[str, str, str]


def offline(asked: list[str]) -> Any:
    """A stand-in for the backend's network call: it notes the request in ``asked`` and raises, failing its unit."""

    def post(self: ChatBackend, request: dict[str, Any], received: Any = None) -> dict[str, Any]:
        asked.append(f"{request['model']}: {str(request['messages'][-1].get('content'))[:200]!r}")
        raise RuntimeError("the real-model fixture's cache has no answer to this request")

    return post


@pytest.fixture()
def misses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The requests the replay asked the network for; each one also fails its unit."""
    asked: list[str] = []
    monkeypatch.setattr(ChatBackend, "_post", offline(asked))
    return asked


def cache_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURE / "cache.jsonl").read_text(encoding="utf-8").splitlines()]


def replay_fixture(run: Path, rows: list[dict[str, Any]]) -> Any:
    cache = ResponseCache(run / "cache.sqlite")
    for row in rows:
        cache.put_entry(row["key"], row["response"], row["latency_s"])
    return run_grid(FIXTURE / "grid.toml", run, max_concurrency=1, max_consecutive_failures=0)


#: What depends on the order units ran in, on the cache or on how a request went (a wait, a retry), not on what
#: the model answered.
SCHEDULING = ("cached_calls", "plan_source", "plan_generated_by", "plans_discarded", "retries")


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    row["metadata"] = {k: v for k, v in row.get("metadata", {}).items() if k not in SCHEDULING}
    row["cost"] = [{k: v for k, v in c.items() if k not in ("queue_s", "backoff_s")} for c in row.get("cost", [])]
    return row


def lines(path: Path) -> dict[Key, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {(r["dataset"], r["task_id"], r["method"]): comparable(r) for r in rows}


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any, list[str]]]:
    run = tmp_path_factory.mktemp("real-model") / "run"
    asked: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ChatBackend, "_post", offline(asked))
        report = replay_fixture(run, cache_rows())
    yield run, report, asked


def test_the_grid_replays_from_the_cache_alone(replayed: tuple[Path, Any, list[str]]) -> None:
    run, report, asked = replayed
    assert asked == [], f"requests the fixture's cache does not hold: {asked[:3]}"
    assert (report.planned, report.written, report.failed) == (6, 6, 0)
    assert len(cache_rows()) == sum(len(r.cost) for r in read_rollouts(run / "rollouts.jsonl"))


def test_replayed_records_and_rollouts_are_the_recorded_ones(replayed: tuple[Path, Any, list[str]]) -> None:
    run, _, _ = replayed
    for name in ("records.jsonl", "rollouts.jsonl"):
        assert lines(run / name) == lines(FIXTURE / name), name


def test_a_request_missing_from_the_cache_fails_its_unit_loudly(tmp_path: Path, misses: list[str]) -> None:
    rows = cache_rows()
    report = replay_fixture(tmp_path / "run", rows[1:])
    assert len(misses) == 1
    assert report.failed == 1 and report.written == report.planned - 1
    failure = json.loads((tmp_path / "run" / "failures.jsonl").read_text().splitlines()[0])
    assert "has no answer to this request" in failure["error"]


@pytest.fixture(scope="module")
def records(replayed: tuple[Path, Any, list[str]]) -> dict[Key, PrefixRecord]:
    return {(r.dataset, r.task_id, r.method): r for r in read_records(replayed[0] / "records.jsonl")}


@pytest.fixture(scope="module")
def rollouts(replayed: tuple[Path, Any, list[str]]) -> dict[Key, Rollout]:
    return {(r.dataset, r.task_id, r.method): r for r in read_rollouts(replayed[0] / "rollouts.jsonl")}


BFCL_REACT = ("bfcl", "multi_turn_base_100", "react")
BFCL_DUAL = ("bfcl", "multi_turn_base_100", "dual-loop")
PRINTER_REACT = ("ticketing", "close-printer", "react")
PRINTER_DUAL = ("ticketing", "close-printer", "dual-loop")
LAPTOP_REACT = ("ticketing", "new-laptop", "react")
LAPTOP_DUAL = ("ticketing", "new-laptop", "dual-loop")


def test_calls_left_in_content_were_read_per_format(rollouts: dict[Key, Rollout]) -> None:
    """Behind llama-server --jinja the model never got a tool_calls: auto read every call from the text, the first
    answer of a turn in a Markdown fence, the answers after a tool result as bare JSON."""
    assert not any(row["response"]["choices"][0]["message"].get("tool_calls") for row in cache_rows())
    for key, rollout in rollouts.items():
        assert all(c.call_id and c.call_id.startswith("t0.") for c in rollout.actions)
        formats = rollout.metadata.get("text_formats", {})
        steps = {c.call_id.rsplit(".", 1)[0] for c in rollout.actions if c.call_id}
        assert set(formats) == steps, key  # every step with a call was read from text
        if steps:
            assert rollout.metadata["text_fallback"] == CONTENT_FALLBACK
    for key in (BFCL_REACT, PRINTER_REACT, LAPTOP_REACT):
        formats = rollouts[key].metadata["text_formats"]
        assert formats["t0.s0"] == "fenced" and set(formats.values()) == {"fenced", "json"}, key
    assert set(rollouts[LAPTOP_DUAL].metadata["text_formats"].values()) == {"json"}


def test_an_invented_tool_is_a_schema_failure_at_depth_1(
    records: dict[Key, PrefixRecord], rollouts: dict[Key, Rollout]
) -> None:
    record = records[BFCL_REACT]
    offered = set(function_docs("TradingBot"))
    first = record.actions[0]
    assert first.name == "get_nvidia_stock_price" and first.name not in offered
    assert "get_stock_info" in offered  # what BFCL's ground truth calls
    assert (record.fed, record.success) == (1, 0)
    assert record.label is not None and record.label.value == "schema"
    assert record.reason == "unknown tool 'get_nvidia_stock_price'"


def test_a_run_on_answer_cut_by_max_tokens_is_many_calls_and_a_parse_failure(rollouts: dict[Key, Rollout]) -> None:
    """The model repeated its call line after line until max_tokens (256) cut it: 13 calls from one answer,
    the last one cut off mid-JSON (a schema failure, its text kept)."""
    rollout = rollouts[BFCL_REACT]
    step = [c for c in rollout.actions if c.call_id and c.call_id.startswith("t0.s1.")]
    assert len(step) == 13
    assert all(c.name == "get_nvidia_stock_price" and c.parse_error is None for c in step[:-1])
    assert step[-1].parse_error is not None and step[-1].parse_error.startswith("tool call is not valid JSON")
    assert rollout.cost[1].completion_tokens == 256  # the grid's max_tokens


def test_an_invented_argument_and_a_repeated_login_fail_where_the_spec_says(records: dict[Key, PrefixRecord]) -> None:
    spec = yaml.safe_load((REPO / "examples" / "ticketing" / "tools.yaml").read_text())
    login = next(t for t in spec["tools"] if t["name"] == "login")["parameters"]
    assert "password" not in login["properties"] and login["additionalProperties"] is False
    printer = records[PRINTER_REACT]
    assert printer.actions[0].arguments == {"username": "dana", "password": "your_password"}
    assert (printer.fed, printer.label and printer.label.value) == (1, "schema")
    assert "'password' was unexpected" in (printer.reason or "")
    laptop = records[LAPTOP_REACT]
    assert [c.name for c in laptop.actions] == ["login"] * 3 and laptop.actions[0].arguments == {"username": "lee"}
    assert (laptop.fed, laptop.label and laptop.label.value, laptop.reason) == (
        2,
        "state_consistency",
        "lee is already logged in",
    )
    first = records[LAPTOP_DUAL]
    assert [c.name for c in first.actions] == ["create_ticket", "login"]
    assert (first.fed, first.label and first.label.value) == (1, "precondition")
    assert re.search(r"no agent is logged in", first.reason or "")


def test_dual_loop_plans_never_passed_and_two_executors_made_no_call(
    records: dict[Key, PrefixRecord], rollouts: dict[Key, Rollout]
) -> None:
    """The planner's answers failed the structure check in every round (bindings with made-up keys, or the
    feedback echoed back), so the LLM verifier was never asked; the executor then copied the plan text."""
    for key in (BFCL_DUAL, PRINTER_DUAL, LAPTOP_DUAL):
        rollout = rollouts[key]
        assert not any(rollout.metadata["plan_approved"]), key
        assert rollout.metadata["plan_parse_errors"] >= 2, key
        assert {c.role for c in rollout.cost} == {"planner", "executor"}, key  # no verifier call
    for key in (BFCL_DUAL, PRINTER_DUAL):
        record = records[key]
        assert (record.T, record.fed, record.success, record.no_tool) == (1, 1, 0, True), key
        assert record.label is not None and record.label.value == "precondition", key
        answer = [m for m in rollouts[key].transcript or () if m.get("role") == "assistant"][-1]
        assert re.search(r'"(steps|approved)"', str(answer["content"])), key  # JSON, but not a call


def test_no_rollout_succeeded(records: dict[Key, PrefixRecord]) -> None:
    assert len(records) == 6
    assert all(r.success == 0 for r in records.values())
