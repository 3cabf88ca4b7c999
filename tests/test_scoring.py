"""score_to_file: the one loop every ``score`` command runs (replay, skip, resume, refuse to overwrite)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from prefix_exec.errors import InputError
from prefix_exec.io import read_records
from prefix_exec.scoring import score_to_file
from prefix_exec.trajectory import Rollout, Skipped, ToolCall
from test_replay import CounterEnv, rollout


def units() -> list[Rollout | Skipped]:
    return [
        rollout(("inc", {})),
        Rollout("toy", "missing", "m", "react", success=1),  # no such task: a replay error
        Skipped("in.jsonl:3", "not JSON"),
        Rollout("toy", "t2", "m", "react", actions=(ToolCall("inc"), ToolCall("need", {"n": 5})), success=0),
        rollout(("inc", {})),  # the first unit again
    ]


def test_keep_going_scores_the_rest_and_lists_every_unit_it_could_not_score(tmp_path: Path) -> None:
    out, log = tmp_path / "r.jsonl", io.StringIO()
    report = score_to_file(units(), lambda _r: CounterEnv(), out, keep_going=True, log=log)
    records = list(read_records(out))
    assert [(r.task_id, r.fed, r.T) for r in records] == [("t1", 2, 1), ("t2", 2, 2)]
    assert (report.written, report.executable, report.resumed) == (2, 1, 0)
    assert [s.where for s in report.skipped] == [
        "task missing (model m, method react, trial 0)",
        "in.jsonl:3",
        "task t1 (model m, method react, trial 0)",
    ]
    assert "no task" in report.skipped[0].error
    assert "twice" in report.skipped[2].error
    assert log.getvalue().count("prefix-exec: skipped") == 3


def test_without_keep_going_the_first_bad_unit_stops_and_the_records_before_it_stay(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    with pytest.raises(InputError, match=r"missing.*no task"):
        score_to_file(units(), lambda _r: CounterEnv(), out)
    assert [r.task_id for r in read_records(out)] == ["t1"]


def test_a_full_output_is_refused_then_resumed_without_rescoring(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    good = [u for u in units() if isinstance(u, Rollout) and u.task_id != "missing"][:2]
    score_to_file(good[:1], lambda _r: CounterEnv(), out)
    with pytest.raises(InputError, match="already holds records"):
        score_to_file(good, lambda _r: CounterEnv(), out)
    env = CounterEnv()
    report = score_to_file(good, lambda _r: env, out, resume=True)
    assert (report.written, report.resumed, env.starts) == (1, 1, 1)
    assert [r.task_id for r in read_records(out)] == ["t1", "t2"]
