"""``prefix-exec run`` on a small tau grid (scripted loopback models): its records name the tau3 task definitions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import ScriptedServer
from fakes.tau_agent import TauScript
from grid_files import served_model
from prefix_exec.cli import main
from prefix_exec.envs.tau import TauEnvironment, load_domain

TASKS = ["retail/34", "retail/108"]  # tau3 retail: 34 is graded without NL assertions, 108 with them


def models_toml(base_url: str) -> str:
    """The grid's ``[[models]]``: ``agent`` (the one condition), ``user-sim`` and ``judge``, all served at
    ``base_url``, no retries."""
    return served_model("agent", base_url, max_retries=0) + "".join(
        served_model(name, base_url, max_retries=0, condition=False) for name in ("user-sim", "judge")
    )


def test_a_tau_grid_run_records_the_tau3_task_set_and_marks_judged_tasks(tmp_path: Path) -> None:
    script = TauScript(TauEnvironment(load_domain("retail")), [t.split("/")[1] for t in TASKS])
    with ScriptedServer(script) as server:
        grid = tmp_path / "grid.toml"
        models = models_toml(server.base_url)
        grid.write_text(
            f'seed = 0\ntrials = 1\nmethods = ["react"]\n[[datasets]]\nname = "tau3-retail"\nkind = "tau"\n'
            f'domain = "retail"\nuser_model = "user-sim"\njudge_model = "judge"\ntasks = {json.dumps(TASKS)}\n'
            f"{models}",
            encoding="utf-8",
        )
        assert main(["run", str(grid), "--out", str(tmp_path / "run")]) == 0
    records = {
        r["task_id"]: r
        for r in map(json.loads, (tmp_path / "run" / "records.jsonl").read_text(encoding="utf-8").splitlines())
    }
    assert sorted(records) == sorted(TASKS)
    for record in records.values():
        assert record["metadata"]["tau2"] == {**load_domain("retail").provenance.to_json(), "task_set": "tau3"}
        assert record["metadata"]["tau2"]["provider"] == "tau2-bench"
        assert record["success"] == 1
    assert "judge" in records["retail/108"]["metadata"]["nondeterministic"]
    assert script.judged == 1
    assert "nondeterministic" not in records["retail/34"]["metadata"]


class PooledScript:
    """One scripted server for both domains: each request goes to the script of the task it is about (the
    user simulator's scenario, or the agent's ``[case <domain>/<id>]``)."""

    def __init__(self, *scripts: TauScript) -> None:
        self.scripts = scripts

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        text = " ".join(str(m.get("content") or "") for m in body["messages"])
        for script in self.scripts:
            if any(s in text for s in script.scenarios.values()) or any(f"[case {t}]" in text for t in script.gold):
                return script(body)
        return self.scripts[0](body)


def test_the_pooled_tau3_dataset_runs_both_domains_under_qualified_ids(tmp_path: Path) -> None:
    """``domain = ["airline", "retail"]``: one dataset ``tau3`` whose colliding ids ("18" of both domains) are two
    tasks, each run on its own domain's environment; metrics pool them and show the per-domain rows apart."""
    tasks = ["airline/18", "retail/18"]
    scripts = [TauScript(TauEnvironment(load_domain(t.split("/")[0])), [t]) for t in tasks]
    with ScriptedServer(PooledScript(*scripts)) as server:
        grid = tmp_path / "grid.toml"
        models = models_toml(server.base_url)
        grid.write_text(
            'seed = 0\ntrials = 1\nmethods = ["react"]\n[[datasets]]\nname = "tau3"\nkind = "tau"\n'
            'domain = ["airline", "retail"]\nuser_model = "user-sim"\njudge_model = "judge"\n'
            f"tasks = {json.dumps(tasks)}\n{models}",
            encoding="utf-8",
        )
        assert main(["run", str(grid), "--out", str(tmp_path / "run")]) == 0
    lines = (tmp_path / "run" / "records.jsonl").read_text(encoding="utf-8").splitlines()
    records = {r["task_id"]: r for r in map(json.loads, lines)}
    assert sorted(records) == sorted(tasks)
    for task_id, record in records.items():
        domain = task_id.split("/")[0]
        assert (record["dataset"], record["metadata"]["domain"]) == ("tau3", domain)
        assert record["metadata"]["tau2"] == {**load_domain(domain).provenance.to_json(), "task_set": "tau3"}
        assert record["success"] == 1  # the gold actions of its own domain's task 18 were accepted
    summary = tmp_path / "summary.json"
    records_file = str(tmp_path / "run" / "records.jsonl")
    assert main(["metrics", records_file, "--format", "json", "--resamples", "100", "--out", str(summary)]) == 0
    doc = json.loads(summary.read_text(encoding="utf-8"))
    assert [(c["dataset"], c["N"], c["n_tasks"]) for c in doc["conditions"]] == [("tau3", 2, 2)]
    assert [(c["dataset"], c["N"]) for c in doc["per_domain"]] == [("tau3-airline", 1), ("tau3-retail", 1)]


def test_resuming_a_run_made_before_the_pooling_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Old tau units (tau3-airline, task 18) would not match the grid's airline/18 and would run again."""
    from prefix_exec.records.codec import rollout_to_json
    from prefix_exec.trajectory import Rollout

    out = tmp_path / "run"
    out.mkdir()
    old = Rollout("tau3-airline", "18", "agent", "react", success=1)
    (out / "rollouts.jsonl").write_text(json.dumps(rollout_to_json(old)) + "\n", encoding="utf-8")
    grid = tmp_path / "grid.toml"
    grid.write_text(
        'seed = 0\ntrials = 1\nmethods = ["react"]\n[[datasets]]\nname = "tau3-airline"\nkind = "tau"\n'
        'domain = "airline"\nuser_model = "user-sim"\n'
        + served_model("agent", "http://127.0.0.1:9/v1")
        + served_model("user-sim", "http://127.0.0.1:9/v1", condition=False),
        encoding="utf-8",
    )
    assert main(["run", str(grid), "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "before tau3 was pooled (dataset tau3-airline, task 18)" in err
    assert "fresh --out" in err
    assert "Traceback" not in err
    assert not (out / "records.jsonl").exists() or not (out / "records.jsonl").read_text()
