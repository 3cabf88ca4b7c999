"""The grid runner end to end against the loopback server: output, resume, faults, kill -9, Ray = local."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from fakes import ticketing_agent
from fakes.openai_server import ScriptedServer
from fakes.text_calls import content_server
from prefix_exec.agents.turn_loop import CONTENT_FALLBACK
from prefix_exec.cli import main
from prefix_exec.errors import InputError
from prefix_exec.records.codec import read_records, read_rollouts
from prefix_exec.replay import replay
from prefix_exec.runner import load_grid
from prefix_exec.runner.run_dir import plan_units, run_grid
from prefix_exec.runner.run_report import RunReport, call_prices

if TYPE_CHECKING:
    from runner.conftest import RaySession

REPO = Path(__file__).resolve().parents[2]
METHODS = ["react", "prompt-planning", "plan-conditioned", "dual-loop", "guarded-react"]


def write_grid(tmp: Path, base_url: str, *, trials: int = 1, methods: list[str] = METHODS, extra: str = "") -> Path:
    grid = tmp / "grid.toml"
    grid.write_text(f"""
seed = 3
trials = {trials}
methods = {json.dumps(methods)}
[agent]
k_val = 2
verifier_model = "judge"
[[datasets]]
name = "ticketing"
kind = "custom"
spec = "{REPO / "examples" / "ticketing" / "tools.yaml"}"
[[models]]
name = "m1"
model = "exec-model"
base_url = "{base_url}"
api_key_env = ""
max_retries = 1
backoff_base_s = 0.01
usd_per_mtok_prompt = 1.0
usd_per_mtok_completion = 2.0
{extra}
[[models]]
name = "judge"
condition = false
model = "judge-model"
base_url = "{base_url}"
api_key_env = ""
""")
    return grid


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


#: Metadata that says how the run was scheduled, not what the agent did: answers served from the cache, and which
#: unit of a (task, model, trial) asked the planner first for the initial plan the others share (its digest and
#: its cost, charged to every rollout that uses it, are the same either way).
SCHEDULING = ("cached_calls", "plan_source", "plan_generated_by", "plans_discarded")


def strip_latency(row: dict[str, Any]) -> dict[str, Any]:
    """The row without wall-clock times (latency, queue, backoff) and the metadata that depends on the order in
    which units ran (:data:`SCHEDULING`)."""
    row = dict(row)
    row["cost"] = [
        {k: v for k, v in c.items() if k not in ("latency_s", "queue_s", "backoff_s")} for c in row.get("cost", [])
    ]
    row["metadata"] = {k: v for k, v in row.get("metadata", {}).items() if k not in SCHEDULING}
    if "transcript" in row:  # a planner note's shared plan says the same: its source and maker
        row["transcript"] = [
            {**e, "plan": {"digest": e["plan"]["digest"]}} if isinstance(e.get("plan"), dict) else e
            for e in row["transcript"]
        ]
    return row


def unit_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["dataset"], row["task_id"], row["model"], row["method"], row["trial"])


def test_grid_runs_every_unit_once_and_records_are_replays(server: ScriptedServer, tmp_path: Path) -> None:
    grid = write_grid(tmp_path, server.base_url, trials=2)
    out = tmp_path / "run"
    assert main(["run", str(grid), "--out", str(out), "--max-concurrency", "3"]) == 0
    units = {u.key for u in plan_units(load_grid(grid))}
    assert len(units) == 6 * 1 * 5 * 2  # tasks x models (the judge is no condition) x methods x trials
    rollouts = list(read_rollouts(out / "rollouts.jsonl"))
    records = list(read_records(out / "records.jsonl"))
    assert sorted(r.key for r in rollouts) == sorted(units) == sorted(r.key for r in records)
    env = load_grid(grid)
    from prefix_exec.drivers.custom import CustomDriver

    environment = CustomDriver(REPO / "examples" / "ticketing" / "tools.yaml").environment()
    by_key = {r.key: r for r in records}
    for rollout in rollouts:
        assert rollout.transcript
        assert rollout.cost
        again = replay(rollout, environment)
        assert (again.T, again.fed, again.label) == (
            by_key[rollout.key].T,
            by_key[rollout.key].fed,
            by_key[rollout.key].label,
        )
    # Trials send different seeds; the verifier is the judge model.
    seeds = Counter(b.get("seed") for b in server.requests)
    assert set(seeds) == {3, 4}
    assert {c.model for r in rollouts if r.method == "dual-loop" for c in r.cost if c.role == "verifier"} == {
        "judge-model"
    }
    assert env.verifier_model == "judge"
    # The copy pins base_dir, so it plans the same units with the same settings from inside the run directory.
    copy = out / "grid.toml"
    assert copy.read_text().endswith(grid.read_text())
    assert copy.read_text().startswith("base_dir = ")
    assert load_grid(copy).unit_settings() == env.unit_settings()
    assert {u.key for u in plan_units(load_grid(copy))} == units


def test_resume_of_a_finished_run_sends_no_request(server: ScriptedServer, tmp_path: Path) -> None:
    grid = write_grid(tmp_path, server.base_url, methods=["react"])
    out = tmp_path / "run"
    first = run_grid(grid, out)
    sent = len(server.requests)
    again = run_grid(grid, out, resume=True)
    assert (first.written, again.written, again.resumed, len(server.requests)) == (6, 0, 6, sent)
    with pytest.raises(InputError, match="already has rollouts"):
        run_grid(grid, out)


def test_tokens_and_cost_add_up(server: ScriptedServer, tmp_path: Path) -> None:
    grid = write_grid(tmp_path, server.base_url, methods=["dual-loop"])
    grid.write_text(grid.read_text() + "usd_per_mtok_prompt = 10.0\nusd_per_mtok_completion = 30.0\n")
    report = run_grid(grid, tmp_path / "run")
    costs = [c for r in rows(tmp_path / "run" / "rollouts.jsonl") for c in r["cost"]]
    assert report.tokens == sum(c["prompt_tokens"] + c["completion_tokens"] for c in costs)
    m1 = [c for c in costs if c["model"] == "exec-model"]
    judge = [c for c in costs if c["model"] == "judge-model"]
    assert {c["role"] for c in judge} == {"verifier"}
    assert {c["role"] for c in m1} == {"planner", "executor"}
    assert m1
    assert judge
    assert len(m1) + len(judge) == len(costs)
    # The judge's calls are charged to the unit, each call at the price of the model that made it.
    expected = (
        sum(c["prompt_tokens"] * 1.0 + c["completion_tokens"] * 2.0 for c in m1)
        + sum(c["prompt_tokens"] * 10.0 + c["completion_tokens"] * 30.0 for c in judge)
    ) / 1e6
    assert report.usd == pytest.approx(expected)
    assert report.usd != pytest.approx(
        sum(c["prompt_tokens"] * 1.0 + c["completion_tokens"] * 2.0 for c in costs) / 1e6
    )


def test_a_call_is_priced_by_the_grid_model_that_made_it(tmp_path: Path) -> None:
    grid = write_grid(tmp_path, "http://127.0.0.1:9/v1", extra="")
    grid.write_text(grid.read_text() + "usd_per_mtok_prompt = 10.0\nusd_per_mtok_completion = 30.0\n")
    loaded = load_grid(grid)
    assert call_prices(loaded, "m1", "exec-model") == call_prices(loaded, "m1", "m1") == (1.0, 2.0)
    assert call_prices(loaded, "m1", "judge-model") == call_prices(loaded, "m1", "judge") == (10.0, 30.0)
    assert call_prices(loaded, "m1", "someone-else") == call_prices(loaded, "m1", None) == (1.0, 2.0)


def test_failed_units_are_reported_and_retried_on_resume(server: ScriptedServer, tmp_path: Path) -> None:
    grid = write_grid(tmp_path, server.base_url, methods=["react"])
    out = tmp_path / "run"
    server.faults.extend(["500"] * 4)  # max_retries = 1: two units fail, each after one retry
    code = main(["run", str(grid), "--out", str(out), "--max-concurrency", "1"])
    failures = rows(out / "failures.jsonl")
    assert code == 1
    assert len(failures) == 2
    assert all("gave up after 2 attempts" in f["error"] for f in failures)
    assert len(rows(out / "rollouts.jsonl")) == 4
    assert main(["run", str(grid), "--out", str(out), "--resume"]) == 0
    keys = [(r["task_id"], r["trial"]) for r in rows(out / "rollouts.jsonl")]
    assert len(keys) == len(set(keys)) == 6


def test_orphan_rollout_and_torn_line_are_repaired_on_resume(server: ScriptedServer, tmp_path: Path) -> None:
    grid = write_grid(tmp_path, server.base_url, methods=["react", "guarded-react"])
    out = tmp_path / "run"
    run_grid(grid, out)
    complete = {json.dumps(strip_latency(r), sort_keys=True) for r in rows(out / "records.jsonl")}
    records = (out / "records.jsonl").read_text().splitlines(keepends=True)
    rollouts = (out / "rollouts.jsonl").read_text().splitlines(keepends=True)
    # Lines are written in pairs (rollout, record). Unit -2: killed between its two lines (an orphan rollout);
    # unit -1: killed mid-way through its rollout line (a torn tail).
    (out / "records.jsonl").write_text("".join(records[:-2]))
    (out / "rollouts.jsonl").write_text("".join(rollouts[:-1]) + rollouts[-1][:50])
    report = run_grid(grid, out, resume=True)
    assert (report.rescored, report.written) == (1, 1)
    repaired = rows(out / "records.jsonl")
    keys = [(r["task_id"], r["method"]) for r in repaired]
    assert len(keys) == len(set(keys)) == 12
    assert len(rows(out / "rollouts.jsonl")) == 12
    assert {json.dumps(strip_latency(r), sort_keys=True) for r in repaired} == complete
    assert repaired[-1]["metadata"]["cached_calls"] >= 1  # the redone unit's answers came from the cache


@pytest.mark.slow
def test_kill_9_mid_grid_then_resume_is_complete_and_duplicate_free(tmp_path: Path) -> None:
    with ScriptedServer(ticketing_agent.respond, latency_s=0.03) as server:
        grid = write_grid(tmp_path, server.base_url, trials=2, methods=["react", "dual-loop", "guarded-react"])
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "prefix_exec", "run", str(grid), "--out", str(out), "--max-concurrency", "2"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            path = out / "rollouts.jsonl"
            if path.exists() and path.read_text().count("\n") >= 8:
                break
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        before = (out / "rollouts.jsonl").read_text().count("\n")
        assert 8 <= before < 36, "the kill must land mid-grid"  # 6 tasks x 3 methods x 2 trials
        done = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    units = {u.key for u in plan_units(load_grid(grid))}
    for name in ("rollouts.jsonl", "records.jsonl"):
        keys = [(r["dataset"], r["task_id"], r["model"], r["method"], r["trial"]) for r in rows(out / name)]
        assert len(keys) == len(set(keys))
        assert set(keys) == units


@pytest.mark.slow
def test_ray_and_local_launchers_write_identical_records(
    server: ScriptedServer, tmp_path: Path, ray_session: RaySession
) -> None:
    grid = write_grid(tmp_path, server.base_url, methods=METHODS)
    run_grid(grid, tmp_path / "local", max_concurrency=2)
    report = run_grid(grid, tmp_path / "ray", launcher="ray", max_concurrency=2)
    assert report.written == 30
    assert report.failed == 0
    for name in ("records.jsonl", "rollouts.jsonl"):
        local = {unit_key(r): strip_latency(r) for r in rows(tmp_path / "local" / name)}
        remote = {unit_key(r): strip_latency(r) for r in rows(tmp_path / "ray" / name)}
        assert len(local) == len(remote) == 30
        for key, row in local.items():
            assert remote[key] == row, key


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["local", "ray"])
def test_an_endpoint_cap_holds_across_all_workers(
    launcher: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # m1 and the judge share one server; the smaller cap (1) holds for every worker thread or Ray actor.
    if launcher == "ray":
        request.getfixturevalue("ray_session")
    with ScriptedServer(ticketing_agent.respond, latency_s=0.02) as server:
        grid = write_grid(tmp_path, server.base_url, methods=["react", "dual-loop"], extra="max_concurrency = 1")
        assert load_grid(grid).endpoint_caps() == {server.base_url: 1}
        report = run_grid(grid, tmp_path / "run", launcher=launcher, max_concurrency=3)
        assert (report.written, report.failed) == (12, 0)
        assert server.max_in_flight == 1


def test_the_old_executor_spellings_are_errors(
    server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--executor`` and ``run_grid(executor=)`` were the old spellings of the launcher (dropped at 0.x)."""
    grid = write_grid(tmp_path, server.base_url, methods=["react"])
    with pytest.raises(SystemExit) as stopped:
        main(["run", str(grid), "--out", str(tmp_path / "cli"), "--executor", "local"])
    assert stopped.value.code == 2
    assert "unrecognized arguments: --executor local" in capsys.readouterr().err
    assert not (tmp_path / "cli").exists()
    with pytest.raises(TypeError, match="unexpected keyword argument 'executor'"):
        run_grid(grid, tmp_path / "api", executor="local")  # type: ignore[call-arg]
    from prefix_exec.cli import build_parser

    assert build_parser().parse_args(["run", str(grid), "--out", "x"]).launcher == "local"
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = capsys.readouterr().out
    assert "--launcher" in help_text
    assert "--executor" not in help_text  # the old spelling works, unadvertised


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("methods = ['nope']", "unknown method"),
        ("colour = 1", "unknown key"),
        ("[[models]]\nmodel = 'x'\nseed = 4", "cannot set the seed"),
    ],
)
def test_bad_grids_are_input_errors(tmp_path: Path, text: str, message: str) -> None:
    grid = write_grid(tmp_path, "http://127.0.0.1:9/v1")
    body = grid.read_text()
    if "methods" in text:
        body = body.replace(f"methods = {json.dumps(METHODS)}", text)
    elif "models" in text:
        body += text
    else:
        body = text + "\n" + body
    grid.write_text(body)
    with pytest.raises(InputError, match=message):
        load_grid(grid)


def test_429_storm_hang_and_500_mid_grid_are_retried_and_counted(server: ScriptedServer, tmp_path: Path) -> None:
    extra = "timeout_s = 0.5\nmax_retries = 6\nbackoff_max_s = 0.02"
    grid = write_grid(tmp_path, server.base_url, methods=["react"], extra=extra)
    grid.write_text(grid.read_text().replace("max_retries = 1\n", ""))
    server.hang_s = 1.5
    server.faults.extend(["429"] * 4 + ["hang", "500"])
    report = run_grid(grid, tmp_path / "run", max_concurrency=1)
    rollouts = rows(tmp_path / "run" / "rollouts.jsonl")
    assert (report.written, report.failed) == (6, 0)
    assert report.retries == 6 == sum(r["metadata"].get("retries", 0) for r in rollouts)


def test_sample_draws_a_seeded_subset_and_tasks_must_exist(tmp_path: Path) -> None:
    grid = write_grid(tmp_path, "http://127.0.0.1:9/v1")
    grid.write_text(grid.read_text().replace('kind = "custom"\n', 'kind = "custom"\nsample = 3\n'))
    first = plan_units(load_grid(grid))
    again = plan_units(load_grid(grid))
    tasks = {u.task_id for u in first}
    assert len(tasks) == 3
    assert first == again
    assert tasks < {
        "open-vpn-followup",
        "new-laptop",
        "close-printer",
        "triage-vpn",
        "cleanup-duplicate",
        "what-can-you-do",
    }
    grid.write_text(grid.read_text().replace("sample = 3\n", 'tasks = ["no-such-task"]\n'))
    with pytest.raises(InputError, match="no task 'no-such-task'"):
        plan_units(load_grid(grid))


def test_the_reports_describe_and_have_no_old_summary_spelling() -> None:
    from prefix_exec.scoring.run import ScoreReport

    run, score = RunReport(planned=3, written=3, tokens=120, seconds=2.04), ScoreReport(written=2, executable=1)
    assert score.describe() == "scored 2 rollouts (1 fully executable)"
    assert not hasattr(run, "summary") and not hasattr(score, "summary")  # summary() was dropped at 0.x


@pytest.mark.slow
def test_ray_workers_read_calls_left_in_the_text_as_threads_do(tmp_path: Path, ray_session: RaySession) -> None:
    """Worker processes start with no learned state; the fallback needs none, so Ray writes what threads write."""
    with ScriptedServer(content_server(ticketing_agent.respond, "pythonic")) as server:
        grid = write_grid(tmp_path, server.base_url, methods=["react", "guarded-react"], extra='tool_mode = "auto"')
        run_grid(grid, tmp_path / "local", max_concurrency=2)
        report = run_grid(grid, tmp_path / "ray", launcher="ray", max_concurrency=2)
    assert (report.written, report.failed) == (12, 0)
    for name in ("records.jsonl", "rollouts.jsonl"):
        local = {unit_key(r): strip_latency(r) for r in rows(tmp_path / "local" / name)}
        remote = {unit_key(r): strip_latency(r) for r in rows(tmp_path / "ray" / name)}
        assert local == remote
    fallbacks = [r["metadata"].get("text_fallback") for r in rows(tmp_path / "ray" / "rollouts.jsonl")]
    assert fallbacks.count(CONTENT_FALLBACK) == 10  # 5 tasks with calls x 2 methods
