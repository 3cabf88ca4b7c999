"""The run directory's guards: lock, settings on resume, failures kept current, early stop, progress, dead workers."""

from __future__ import annotations

import io
import json
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fakes import ticketing_agent
from fakes.openai_server import ScriptedServer
from prefix_exec import cluster
from prefix_exec.cli import main
from prefix_exec.errors import InputError
from prefix_exec.runner import launchers
from prefix_exec.runner.grid import load_grid
from prefix_exec.runner.progress import Progress
from prefix_exec.runner.run_dir import check_settings, run_grid, run_lock
from prefix_exec.runner.run_report import RunReport
from runner.test_run import REPO, rows, write_grid

if TYPE_CHECKING:
    from runner.conftest import RaySession


def test_a_second_run_on_a_busy_directory_is_refused(server: ScriptedServer, tmp_path: Path) -> None:
    grid = write_grid(tmp_path, server.base_url, methods=["react"])
    out = tmp_path / "run"
    out.mkdir()
    with run_lock(out), pytest.raises(InputError, match="another prefix-exec run is using"):
        run_grid(grid, out, resume=True)
    assert not (out / "rollouts.jsonl").exists()
    assert run_grid(grid, out, resume=True).written == 6  # the lock is gone with its holder


def test_resume_refuses_changed_settings_but_accepts_a_new_model(server: ScriptedServer, tmp_path: Path) -> None:
    grid = write_grid(tmp_path, server.base_url, methods=["react"])
    listed = '"cleanup-duplicate", "close-printer", "new-laptop", "open-vpn-followup", "triage-vpn", "what-can-you-do"'
    grid.write_text(grid.read_text().replace('kind = "custom"\n', f'kind = "custom"\ntasks = [{listed}]\n'))
    out = tmp_path / "run"
    run_grid(grid, out)
    assert run_grid(grid, out, resume=True).resumed == 6  # the same grid resumes (listed tasks included)
    original = grid.read_text()
    for change, field in [("seed = 3", "seed"), ("k_val = 2", "agent")]:
        grid.write_text(original.replace(change, change[:-1] + "9"))
        with pytest.raises(InputError, match=f"settings differ .*{field}"):
            run_grid(grid, out, resume=True)
    grid.write_text(original.replace('model = "exec-model"', 'model = "exec-model"\ntemperature = 0.7'))
    with pytest.raises(InputError, match=r"models\.m1"):
        run_grid(grid, out, resume=True)
    # A new condition model extends the run; its rollouts say how they were decoded.
    extra = f'[[models]]\nname = "m2"\nmodel = "other"\nbase_url = "{server.base_url}"\napi_key_env = ""\n'
    grid.write_text(original + extra)
    report = run_grid(grid, out, resume=True)
    assert (report.written, report.resumed) == (6, 6)
    decoding = {r["model"]: r["metadata"]["decoding"] for r in rows(out / "rollouts.jsonl")}
    assert decoding["m2"]["model"] == "other"
    assert decoding["m1"]["temperature"] == 0.0
    assert decoding["m1"]["seed"] == 3
    # The run's own copy of the grid resumes it too.
    assert run_grid(out / "grid.toml", out, resume=True).resumed == 6


def test_user_mistakes_are_input_errors_before_anything_runs(
    server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = write_grid(tmp_path, server.base_url, methods=["react"])
    (tmp_path / "afile").write_text("x")
    assert main(["run", str(grid), "--out", str(tmp_path / "afile")]) == 2
    assert "must be a directory" in capsys.readouterr().err
    keyed = tmp_path / "keyed.toml"
    keyed.write_text(grid.read_text().replace('api_key_env = ""', 'api_key_env = "PREFIX_EXEC_TEST_NO_SUCH_KEY"', 1))
    assert main(["run", str(keyed), "--out", str(tmp_path / "k")]) == 2
    assert "PREFIX_EXEC_TEST_NO_SUCH_KEY" in capsys.readouterr().err
    assert not server.requests
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "cache.sqlite").write_bytes(b"this is not a database" * 100)
    assert main(["run", str(grid), "--out", str(broken)]) == 2
    assert "cache" in capsys.readouterr().err
    assert not server.requests


def test_failures_file_keeps_only_units_that_still_fail(server: ScriptedServer, tmp_path: Path) -> None:
    grid = write_grid(tmp_path, server.base_url, methods=["react"])
    out = tmp_path / "run"
    server.faults.extend(["500"] * 4)  # max_retries = 1: two units fail, each after one retry
    first = run_grid(grid, out, max_concurrency=1)
    assert (first.failed, first.retries) == (2, 2)  # a failed unit's retries are counted too
    assert [f["retries"] for f in rows(out / "failures.jsonl")] == [1, 1]
    second = run_grid(grid, out, resume=True)
    assert second.written == 2
    assert (out / "failures.jsonl").read_text() == ""
    # Totals of a resumed run include what the directory already held.
    assert second.tokens == sum(
        c["prompt_tokens"] + c["completion_tokens"] for r in rows(out / "rollouts.jsonl") for c in r["cost"]
    )


def test_a_run_stops_after_too_many_failures_in_a_row(tmp_path: Path) -> None:
    grid = write_grid(tmp_path, "http://127.0.0.1:9/v1", methods=["react", "guarded-react"], trials=2)
    grid.write_text(grid.read_text().replace("max_retries = 1", "max_retries = 0"))
    report = run_grid(grid, tmp_path / "run", max_concurrency=1, max_consecutive_failures=3)
    assert report.failed == 3
    assert report.written == 0
    assert "3 units failed in a row" in report.aborted
    assert len(rows(tmp_path / "run" / "failures.jsonl")) == 3


def test_progress_prints_status_lines_when_not_on_a_terminal() -> None:
    log = io.StringIO()
    report = RunReport(written=2, failed=1, tokens=500, usd=0.25, retries=3)
    progress = Progress(total=10, initial=4, log=log, tally=report, interval_s=0.05)
    deadline = time.monotonic() + 60
    while log.getvalue().count("\n") < 3:  # no unit finishes: the lines still come
        assert time.monotonic() < deadline, log.getvalue()
        time.sleep(0.02)
    progress.close()
    lines = log.getvalue().splitlines()
    assert lines[0] == "prefix-exec run: 10 units, 4 already done; starting"
    assert len(lines) >= 3
    assert lines[-1].startswith("prefix-exec run: 6/10 units done, 1 failed, 500 tokens, $0.25, 3 retries")
    assert "ETA" in lines[-1]
    assert "\r" not in log.getvalue()


DIE_ONCE = """
import os as _os


def _die_once() -> None:
    marker = _os.environ.get("PREFIX_EXEC_TEST_DIE_ONCE")
    if marker and not _os.path.exists(marker):
        open(marker, "w").close()
        _os._exit(1)


_login = login


def login(state, args):
    _die_once()
    return _login(state, args)
"""


@pytest.mark.slow
def test_a_ray_worker_that_dies_fails_only_its_unit(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_session: RaySession
) -> None:
    tools = tmp_path / "ticketing"
    shutil.copytree(REPO / "examples" / "ticketing", tools)
    with (tools / "hooks.py").open("a") as hooks:
        hooks.write(DIE_ONCE)
    grid = write_grid(tmp_path, server.base_url, methods=["react", "guarded-react"], extra="max_concurrency = 1")
    grid.write_text(grid.read_text().replace(str(REPO / "examples" / "ticketing"), str(tools)))
    # The hook dies once in whichever process runs it first: a Ray worker, told the marker by the session.
    died = ray_session.die_once
    assert not died.exists()
    monkeypatch.setenv("PREFIX_EXEC_TEST_DIE_ONCE", str(died))
    report = run_grid(grid, tmp_path / "run", launcher="ray", max_concurrency=2)
    assert died.exists()
    failures = rows(tmp_path / "run" / "failures.jsonl")
    assert (report.written, report.failed) == (11, 1)
    assert "Ray worker died" in failures[0]["error"]
    assert os.environ["PREFIX_EXEC_TEST_DIE_ONCE"]
    assert json.loads((tmp_path / "run" / "settings.json").read_text())["seed"] == 3


@pytest.mark.slow
def test_a_ray_run_whose_actors_never_start_fails_at_the_start_bound(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_session: RaySession
) -> None:
    """Actors asking for more CPUs than any node has are never placed: the run stops with an error naming the
    start bound, having written nothing (before the bound, it waited for them for good)."""
    monkeypatch.setattr(launchers, "ACTOR_CPUS", 1000.0)
    monkeypatch.setattr(cluster, "START_SECONDS", 2.0)
    grid = write_grid(tmp_path, server.base_url, methods=["react"])
    with pytest.raises(InputError, match=r"no Ray actor started within 2 s \(2 asked for, 1000 CPU each\)"):
        run_grid(grid, tmp_path / "run", launcher="ray", max_concurrency=2)
    records = tmp_path / "run" / "records.jsonl"
    assert not records.exists() or not records.read_text()


def test_metrics_and_report_warn_about_failed_units_and_unequal_blocks(
    server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = write_grid(tmp_path, server.base_url, methods=["react", "guarded-react"])
    out = tmp_path / "run"
    server.faults.extend(["500"] * 2)  # max_retries = 1: the first unit fails
    run_grid(grid, out, max_concurrency=1)
    capsys.readouterr()
    assert main(["metrics", str(out / "records.jsonl"), "--resamples", "50"]) == 0
    err = capsys.readouterr().err
    assert "1 units of" in err
    assert "failures.jsonl" in err
    assert "ticketing / m1: methods have different numbers of rollouts (guarded-react 6, react 5)" in err
    assert main(["report", str(out), "--out", str(tmp_path / "rep"), "--resamples", "50", "--no-plots"]) == 0
    assert "1 units of" in capsys.readouterr().err
    run_grid(grid, out, resume=True)
    capsys.readouterr()
    assert main(["metrics", str(out / "records.jsonl"), "--resamples", "50"]) == 0
    assert "warning" not in capsys.readouterr().err


def _sigint_default() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["local", "ray"])
def test_ctrl_c_exits_130_at_once_and_the_run_resumes(launcher: str, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    # The ray case starts its own Ray in the child, as 'prefix-exec run --launcher ray' does on a laptop: that
    # start-up and its processes are part of what a Ctrl-C must cut short. Once 3 units are done, the server
    # holds every request, so the signal always lands mid-grid with units in flight (hung on their model call)
    # however slow the machine, and exiting "at once" cannot mean waiting for them.
    script = ticketing_agent.HoldAfter(finished=3)
    with ScriptedServer(script) as server:
        grid = write_grid(tmp_path, server.base_url, trials=2, methods=["react", "dual-loop"])
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "prefix_exec", "run", str(grid), "--out", str(out), "--launcher", launcher]
        # Two workers: enough for units in flight beside the finished ones; each Ray actor is a process to start.
        cmd += ["--max-concurrency", "2"]
        # A job started with '&' inherits an ignored SIGINT, and so would this child: the test gives it the
        # default disposition a terminal's foreground job has, then sends the signal itself.
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=_sigint_default,
        )
        try:
            deadline = time.monotonic() + 300  # only a bound on a hang
            rollouts = out / "rollouts.jsonl"
            while not (rollouts.exists() and rollouts.read_text().count("\n") >= 3):
                assert time.monotonic() < deadline
                assert proc.poll() is None
                time.sleep(0.05)
            os.killpg(proc.pid, signal.SIGINT)
            sent = time.monotonic()
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
            script.release()
        assert proc.returncode == 130, err
        assert time.monotonic() - sent < 15, err  # the held calls never answer before the exit
        assert "Traceback" not in err
        assert "finished units are kept" in err
        assert f"to finish the run: prefix-exec run {grid} --out {out} --resume" in err
        written = rollouts.read_text().count("\n")
        assert 3 <= written < 24, "the signal must land mid-grid"  # 6 tasks x 2 methods x 2 trials
        report = run_grid(grid, out, resume=True)
    assert report.resumed + report.written == 24
    assert report.failed == 0


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,  # was a RecursionError traceback
        '{"seed": ' + "9" * 5000 + "}",  # was a ValueError traceback (int digits)
        '["seed", 3]',  # was an AttributeError traceback
        '{"seed": 3, "datasets": ["ticketing"]}',  # was a TypeError traceback
    ],
)
def test_a_settings_file_no_reader_takes_is_the_folders_input_error(tmp_path: Path, text: str) -> None:
    grid = load_grid(write_grid(tmp_path, "http://127.0.0.1:9/v1"))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "settings.json").write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as raised:
        check_settings(grid, tmp_path / "run")
    assert raised.value.path == str(tmp_path / "run" / "settings.json")


def test_a_settings_file_that_is_a_fifo_is_refused_unopened(tmp_path: Path) -> None:
    grid = load_grid(write_grid(tmp_path, "http://127.0.0.1:9/v1"))
    (tmp_path / "run").mkdir()
    os.mkfifo(tmp_path / "run" / "settings.json")
    with pytest.raises(InputError, match="not a regular file"):
        check_settings(grid, tmp_path / "run")
