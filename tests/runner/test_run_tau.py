"""``prefix-exec run`` on a small tau grid (scripted loopback models): its records name the tau3 task definitions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tau2", reason="tau2 is installed by 'make setup' (scripts/install_tau2.py)")

from fakes.openai_server import ScriptedServer
from fakes.tau_agent import TauScript
from prefix_exec.cli import main
from prefix_exec.envs.tau import TauEnvironment, load_domain

TASKS = ["34", "108"]  # tau3 retail: 34 is graded without NL assertions, 108 with them


def test_a_tau_grid_run_records_the_tau3_task_set_and_marks_judged_tasks(tmp_path: Path) -> None:
    script = TauScript(TauEnvironment(load_domain("retail")), TASKS)
    with ScriptedServer(script) as server:
        grid = tmp_path / "grid.toml"
        models = "".join(
            f'[[models]]\nname = "{name}"\nmodel = "{name}"\nbase_url = "{server.base_url}"\napi_key_env = ""\n'
            f"max_retries = 0\n{'condition = false' if name != 'agent' else ''}\n"
            for name in ("agent", "user-sim", "judge")
        )
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
    assert "judge" in records["108"]["metadata"]["nondeterministic"]
    assert script.judged == 1
    assert "nondeterministic" not in records["34"]["metadata"]
