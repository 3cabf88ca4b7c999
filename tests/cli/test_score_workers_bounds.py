"""What crosses a process boundary is bounded where it is read (json_types.MAX_DEPTH): a record nested deeper
than pickle can carry (800 levels and more load as JSON) is that record's input error at ``--workers 1``,
``--workers 2`` and ``--launcher ray`` alike, and the records of the others are byte-identical. Before the bound,
``--workers 2`` died with ``RecursionError while pickling`` and wrote nothing."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.json_types import MAX_DEPTH, depth_problem, loads
from prefix_exec.scoring.pool import dispatch as pool_dispatch

TOOLS = [{"type": "function", "function": {"name": "login", "parameters": {"type": "object"}}}]
DEEP = 1400


def nested(depth: int) -> Any:
    return json.loads("[" * depth + "]" * depth)


def conversation(task: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "login", "arguments": '{"username": "sam"}'}}
    chat = [
        {"role": "user", "content": "log in"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    return {"task_id": task, "model": "m", "success": 1, "messages": chat, "tools": TOOLS}


def hostile_rows(count: int = 40) -> list[dict[str, Any]]:
    """``count`` conversations, four of them holding a value ``DEEP`` levels deep: in a tool's schema, a call's
    arguments, a tool's result and the user's message."""
    rows = [conversation(f"t{i}") for i in range(count)]
    rows[3]["tools"] = [{"type": "function", "function": {"name": "login", "parameters": {"default": nested(DEEP)}}}]
    rows[5]["messages"][1]["tool_calls"][0]["function"]["arguments"] = {"x": nested(DEEP)}
    rows[7]["messages"][2]["content"] = nested(DEEP)
    rows[9]["messages"][0]["content"] = nested(DEEP)
    return rows


def test_the_depth_bound_holds_at_the_bound_and_refuses_past_it() -> None:
    assert loads(json.dumps(nested(MAX_DEPTH))) == nested(MAX_DEPTH)
    with pytest.raises(ValueError, match="nested more than 256"):
        loads(json.dumps({"a": nested(MAX_DEPTH)}))
    assert depth_problem(nested(MAX_DEPTH + 1)) is not None and depth_problem(nested(10)) is None
    # many brackets side by side are no depth
    assert loads(json.dumps([[1]] * 5000)) == [[1]] * 5000
    assert loads("[" * 900 + "]" * 900, max_depth=None) == nested(900)


@pytest.fixture(autouse=True)
def every_rollout_through_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_dispatch, "REPLAY_HERE", False)


def _score(source: Path, out: Path, *pool: str) -> int:
    return main(["score", "transcripts", str(source), "--keep-going", "--out", str(out), *pool])


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_deep_records_are_their_own_errors_on_every_launcher(
    suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = hostile_rows()
    source = tmp_path / f"in{suffix}"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows) if suffix == ".jsonl" else json.dumps(rows))
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    # exit 2: records were skipped (under --keep-going the others are scored and written)
    assert _score(source, one, "--workers", "1") == _score(source, two, "--workers", "2") == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("nested more than 256") == 8
    assert one.read_bytes() == two.read_bytes()
    scored = [json.loads(line)["task_id"] for line in one.read_text().splitlines()]
    assert scored == [f"t{i}" for i in range(40) if i not in (3, 5, 7, 9)]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is the [ray] extra")
def test_deep_records_under_ray_match_one_worker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in hostile_rows(12)))
    one, ray = tmp_path / "one.jsonl", tmp_path / "ray.jsonl"
    assert _score(source, one, "--workers", "1") == _score(source, ray, "--launcher", "ray", "--workers", "2") == 2
    assert "Traceback" not in capsys.readouterr().err
    assert one.read_bytes() == ray.read_bytes() and one.read_text().count("\n") == 8
