"""Grid parsing: duplicates, types and ranges are input errors naming the field, never tracebacks."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.errors import InputError
from prefix_exec.runner.grid import expand, parse_grid

BASE: dict[str, Any] = {
    "seed": 3,
    "trials": 1,
    "methods": ["react", "dual-loop"],
    "agent": {"max_steps": 5, "k_val": 2, "verifier_model": "judge"},
    "run": {"cache": True},
    "datasets": [{"name": "d", "kind": "custom", "spec": "tools.yaml", "tasks": ["a", "b"]}],
    "models": [
        {"name": "m1", "model": "exec", "usd_per_mtok_prompt": 1.0, "usd_per_mtok_completion": 2},
        {"name": "judge", "model": "judge-model", "condition": False},
    ],
}


def grid_with(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node: Any = data
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value
    return data


def test_the_base_grid_is_valid() -> None:
    grid = parse_grid(BASE, base_dir=Path("."))
    assert (grid.seed, grid.agent.max_steps, grid.agent.k_val, grid.model("m1").usd_per_mtok_completion) == (
        3,
        5,
        2,
        2.0,
    )
    units = expand(grid, {"d": list(grid.datasets[0].tasks or ())})
    assert len(units) == len({u.key for u in units}) == 4


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (grid_with(methods=["react", "react"]), "methods[1]", "duplicate entry 'react'"),
        (grid_with(datasets__0__tasks=["a", "a"]), "datasets[0].tasks[1]", "duplicate task 'a'"),
        ({**BASE, "datasets": [BASE["datasets"][0], BASE["datasets"][0]]}, "datasets[1]", "duplicate dataset name 'd'"),
        ({**BASE, "models": [BASE["models"][0], BASE["models"][0]]}, "models[1]", "duplicate model name 'm1'"),
    ],
)
def test_duplicates_are_rejected(data: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_grid(data, base_dir=Path("."))
    assert info.value.field == field


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (grid_with(agent=5), "agent", "must be a table"),
        (grid_with(run=5), "run", "must be a table"),
        (grid_with(run={"cache": "no"}), "run.cache", "true or false"),
        (grid_with(run={"cahce": False}), "run.cahce", "unknown key"),
        (grid_with(agent={"colour": 1}), "agent.colour", "unknown key"),
        (grid_with(models__0__usd_per_mtok_prompt="abc"), "models[0].usd_per_mtok_prompt", "must be a number"),
        (grid_with(models__0__usd_per_mtok_completion=-1.0), "models[0].usd_per_mtok_completion", "must be a number"),
        (grid_with(seed="x"), "seed", "must be an integer"),
        (grid_with(seed=-1), "seed", "must be an integer >= 0"),
        (grid_with(trials=True), "trials", "must be an integer >= 1"),
        (grid_with(agent__k_val=0), "agent.k_val", "must be an integer >= 1"),
        (grid_with(agent__k_val="x"), "agent.k_val", "must be an integer >= 1"),
        (grid_with(agent__max_steps=0), "agent.max_steps", "must be an integer >= 1"),
        (grid_with(agent__max_steps=2.5), "agent.max_steps", "must be an integer >= 1"),
        (grid_with(datasets__0__tasks="abc"), "datasets[0].tasks", "non-empty list of task ids"),
        (grid_with(datasets__0__tasks=[]), "datasets[0].tasks", "non-empty list of task ids"),
        (grid_with(datasets__0__sample=0), "datasets[0].sample", "must be an integer >= 1"),
        (grid_with(models__0__condition=False), "models", "selects no unit"),
    ],
)
def test_bad_types_and_ranges_are_input_errors(data: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_grid(data, base_dir=Path("."))
    assert info.value.field == field


def test_the_cli_reports_a_bad_grid_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(
        'methods = ["react"]\nagent = 5\n[[datasets]]\nname = "d"\nkind = "custom"\n[[models]]\nmodel = "m"\n'
    )
    assert main(["run", str(grid), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"{grid}: field 'agent': must be a table" in err
    assert "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_tau_dataset_options_reach_the_driver_and_bad_ones_are_input_errors() -> None:
    from prefix_exec.runner.datasets import make_driver

    tau = {"name": "air", "kind": "tau", "domain": "airline", "user_model": "judge", "max_steps": 50, "max_errors": 3}
    models = [BASE["models"][0], {**BASE["models"][1], "api_key_env": ""}]
    grid = parse_grid({**BASE, "models": models, "datasets": [tau]}, base_dir=Path("."))
    driver: Any = make_driver(grid.datasets[0], grid)
    assert (driver.max_steps, driver.max_errors, driver.max_turns) == (50, 3, None)
    for key, value in [("max_errors", 0), ("max_steps", "many"), ("max_turns", True)]:
        bad = parse_grid({**BASE, "models": models, "datasets": [{**tau, key: value}]}, base_dir=Path("."))
        with pytest.raises(InputError, match="integer >= 1") as info:
            make_driver(bad.datasets[0], bad)
        assert info.value.field == f"datasets.air.{key}"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"trials": 1_000_000_000}, "trials"),
        ({"agent__max_steps": 10**12}, "agent.max_steps"),
        ({"seed": 2**70}, "seed"),
    ],
)
def test_grid_sizes_have_upper_bounds(change: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError, match="at most") as caught:
        parse_grid(grid_with(**change), base_dir=Path("/tmp"))
    assert caught.value.field == field


def test_expanding_past_the_unit_bound_is_refused_before_building_units() -> None:
    grid = parse_grid(grid_with(trials=1000), base_dir=Path("/tmp"))
    with pytest.raises(InputError, match="units, above the bound"):
        expand(grid, {"d": [f"t{i}" for i in range(1001)]})  # 1001 tasks x 1 model x 2 methods x 1000 trials
    assert len(expand(grid, {"d": ["a", "b"]})) == 2 * 2 * 1000


def test_deeply_nested_or_huge_toml_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    fifo = tmp_path / "fifo.toml"
    import os

    os.mkfifo(fifo)
    for path, message in ((deep, "nested too deeply"), (fifo, "not a regular file")):
        assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 2
        err = capsys.readouterr().err
        assert message in err
        assert "Traceback" not in err
    assert not (tmp_path / "run").exists()
