"""A ToolSandbox grid through `prefix-exec run`: spawned worker processes locally, Ray actors, identical records,
and the run folders each unit leaves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fakes.openai_server import ScriptedServer
from fakes.toolsandbox_agent import ToolSandboxScript
from grid_files import served_model, table
from prefix_exec.runner.launchers import run_local
from prefix_exec.runner.run_dir import run_grid

if TYPE_CHECKING:
    from runner.conftest import RaySession

TASKS = ["wifi_off", "cellular_off"]


class ByFirstMessage(ToolSandboxScript):
    """Units run in other processes, so the scenario is read from the agent's first user message (its text
    before any plan), never from shared state."""

    def __init__(self) -> None:
        super().__init__(
            {
                "Turn off wifi": [[("set_wifi_status", {"on": False})], "Wifi is turned off"],
                "Turn off cellular": [[("set_cellular_service_status", {"on": True})], "Cellular service is off"],
            }
        )

    def scenario_of(self, messages: list[dict[str, Any]]) -> str:
        first = next(str(m.get("content") or "") for m in messages if m["role"] == "user")
        return first.split("\n\n")[0]


def write_grid(tmp_path: Path, base_url: str) -> Path:
    grid = tmp_path / "grid.toml"
    grid.write_text(
        'methods = ["react", "plan-conditioned"]\n'
        + table("datasets", name="ts", kind="toolsandbox", user_model="user", tasks=TASKS)
        + served_model("agent", base_url, max_retries=0)
        + served_model("user", base_url, model="user-sim", condition=False)
    )
    return grid


def rows(path: Path) -> dict[tuple[Any, ...], dict[str, Any]]:
    out = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        row.get("metadata", {}).pop("scenario_dir", None)  # the run directory's own path
        for cost in row.get("cost") or ():
            for key in ("latency_s", "queue_s", "backoff_s"):
                cost.pop(key, None)
        out[(row["task_id"], row["method"])] = row
    return out


def test_local_runs_use_spawned_processes_and_ray_gives_identical_records(
    tmp_path: Path, ray_session: RaySession
) -> None:
    assert run_local.__doc__
    assert "spawned processes" in run_local.__doc__
    # The session's one Ray instance (runner/conftest.py): a second ray.init here fails whenever an earlier
    # test in the same session has started it.
    with ScriptedServer(ByFirstMessage()) as server:
        grid = write_grid(tmp_path, server.base_url)
        local = run_grid(grid, tmp_path / "local", max_concurrency=2)
        remote = run_grid(grid, tmp_path / "ray", launcher="ray", max_concurrency=1)
    assert (local.written, local.failed, remote.written, remote.failed) == (4, 0, 4, 0)
    for name in ("records.jsonl", "rollouts.jsonl"):
        here, there = rows(tmp_path / "local" / name), rows(tmp_path / "ray" / name)
        assert len(here) == 4
        assert here == there
    records = rows(tmp_path / "local" / "records.jsonl")
    assert {k: (r["fed"], r["label"], r["success"]) for k, r in records.items()} == {
        ("wifi_off", "react"): (2, None, 1),
        ("wifi_off", "plan-conditioned"): (2, None, 1),
        ("cellular_off", "react"): (1, "state_consistency", 0),
        ("cellular_off", "plan-conditioned"): (1, "state_consistency", 0),
    }
    for run in ("local", "ray"):
        folder = tmp_path / run / "toolsandbox" / "ts" / "agent" / "react" / "trial0" / "wifi_off"
        assert (folder / "result_summary.json").is_file()
        assert (folder / "trajectories" / "wifi_off" / "execution_context.json").is_file()
