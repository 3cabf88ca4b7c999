"""A run folder whose totals an older version wrote out of range (issue 45, item 2): a server's usage of 10^4000 or a
negative count (written as the server sent them before counts were checked), ``Infinity`` (another tool's), a
retry count of 10^4000. ``run --resume``, ``metrics`` and ``report`` read each as 0 and say which file, line and
field; nothing crashes and nothing is silent."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from fakes import ticketing_agent
from fakes.openai_server import ScriptedServer
from prefix_exec.cli import main
from prefix_exec.records.values import noting_zeroed
from prefix_exec.runner.plan_store import PlanStore
from runner.test_run import rows, write_grid

HUGE = 10**4000


def spoil(path: Path, changes: dict[int, dict[str, Any]], metadata: dict[int, dict[str, Any]] | None = None) -> None:
    """Set ``cost[0]``'s fields ``changes[line]`` (and ``metadata[line]``'s keys) in the 1-based lines of ``path``,
    as an older version would have written them."""
    lines = path.read_text().splitlines()
    for number, fields in changes.items():
        row = json.loads(lines[number - 1])
        row["cost"][0].update(fields)
        row["metadata"].update((metadata or {}).get(number, {}))
        lines[number - 1] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")


def tokens_of(rows_: list[dict[str, Any]]) -> int:
    """The run's token total as counted from good values (bad ones are 0)."""
    total = 0
    for row in rows_:
        for cost in row.get("cost", []):
            for name in ("prompt_tokens", "completion_tokens"):
                value = cost.get(name, 0)
                total += value if isinstance(value, int) and 0 <= value < 2**31 else 0
    return total


@pytest.fixture()
def old_run(tmp_path: Path) -> tuple[Path, Path]:
    """A finished run of 3 units (react on 3 tasks) whose first three rollout and record lines hold bad totals."""
    with ScriptedServer(ticketing_agent.respond) as server:
        grid = write_grid(tmp_path, server.base_url, methods=["react"])
        text = grid.read_text().replace(
            'name = "ticketing"', 'name = "ticketing"\ntasks = ["new-laptop", "close-printer", "triage-vpn"]'
        )
        grid.write_text(text)
        out = tmp_path / "run"
        assert main(["run", str(grid), "--out", str(out)]) == 0
    changes = {
        1: {"prompt_tokens": HUGE},
        2: {"completion_tokens": -7},
        3: {"reasoning_tokens": float("nan"), "latency_s": float("inf")},
    }
    for name in ("rollouts.jsonl", "records.jsonl"):
        spoil(out / name, changes, {1: {"retries": HUGE}})
    return grid, out


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "counted as 0" in line]


def test_resume_reads_bad_totals_as_zero_and_names_each(
    old_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    grid, out = old_run
    capsys.readouterr()
    assert main(["run", str(grid), "--out", str(out), "--resume"]) == 0
    err = capsys.readouterr().err
    rollouts = out / "rollouts.jsonl"
    assert warnings(err) == [
        f"prefix-exec run: warning: {rollouts}:1: field 'cost[0].prompt_tokens' is an integer of 4,001 digits, "
        "which no token count can be; counted as 0",
        f"prefix-exec run: warning: {rollouts}:1: field 'metadata.retries' is an integer of 4,001 digits, which "
        "no retry count can be; counted as 0",
        f"prefix-exec run: warning: {rollouts}:2: field 'cost[0].completion_tokens' is -7, which no token count "
        "can be; counted as 0",
        f"prefix-exec run: warning: {rollouts}:3: field 'cost[0].reasoning_tokens' is nan, which no token count "
        "can be; counted as 0",
        f"prefix-exec run: warning: {rollouts}:3: field 'cost[0].latency_s' is inf, which no time (seconds) can "
        "be; counted as 0",
    ]
    total = re.search(r"the run holds (\d+) agent tokens", err)
    assert total is not None and int(total.group(1)) == tokens_of(rows(rollouts))
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["metrics", "report"])
def test_metrics_and_report_read_bad_totals_as_zero_and_name_each(
    command: str, old_run: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = old_run
    records = out / "records.jsonl"
    capsys.readouterr()
    argv = ["metrics", str(records)] if command == "metrics" else ["report", str(out), "--out", str(tmp_path / "r")]
    assert main([*argv, "--no-plots"] if command == "report" else argv) == 0
    err = capsys.readouterr().err
    assert warnings(err) == [
        f"prefix-exec: warning: {records}:1: field 'cost[0].prompt_tokens' is an integer of 4,001 digits, which "
        "no token count can be; counted as 0",
        f"prefix-exec: warning: {records}:2: field 'cost[0].completion_tokens' is -7, which no token count can be; "
        "counted as 0",
        f"prefix-exec: warning: {records}:3: field 'cost[0].reasoning_tokens' is nan, which no token count can "
        "be; counted as 0",
        f"prefix-exec: warning: {records}:3: field 'cost[0].latency_s' is inf, which no time (seconds) can be; "
        "counted as 0",
    ]


def test_a_plan_stored_with_bad_counts_is_read_with_zero_and_noted(tmp_path: Path) -> None:
    store = PlanStore(tmp_path / "plans.sqlite")
    cost = '{"role": "planner", "prompt_tokens": ' + str(HUGE) + ', "completion_tokens": 5, "latency_s": 1e400}'
    with sqlite3.connect(tmp_path / "plans.sqlite") as db:
        db.execute("INSERT INTO plans VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", ("d", "t", "m", 0, 0, "x", '"p"', cost, "a"))
    with noting_zeroed() as zeroed:
        store.check()
    assert [(z.path, z.field, z.what) for z in zeroed] == [
        (str(tmp_path / "plans.sqlite"), "plans(d, t, m, 0, 0).cost.prompt_tokens", "token count"),
        (str(tmp_path / "plans.sqlite"), "plans(d, t, m, 0, 0).cost.latency_s", "time (seconds)"),
    ]
    plan = store.get(("d", "t", "m", 0, 0, "x"))
    assert plan is not None
    assert (plan.cost.prompt_tokens, plan.cost.completion_tokens, plan.cost.latency_s) == (0, 5, 0.0)
