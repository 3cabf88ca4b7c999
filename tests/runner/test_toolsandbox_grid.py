"""ToolSandbox datasets in a grid: options reach the driver, bad ones and a missing ToolSandbox are exit-2 errors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.envs.toolsandbox import live
from prefix_exec.errors import InputError
from prefix_exec.runner.datasets import make_driver
from prefix_exec.runner.grid import parse_grid

MODELS = [
    {"name": "agent", "model": "exec", "api_key_env": ""},
    {"name": "user", "model": "user-sim", "api_key_env": "", "condition": False},
]


def grid_of(**options: Any) -> Any:
    dataset = {"name": "ts", "kind": "toolsandbox", "user_model": "user", **options}
    return parse_grid({"methods": ["react"], "datasets": [dataset], "models": MODELS}, base_dir=Path("."))


def test_options_reach_the_driver(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAPID_API_KEY", raising=False)
    grid = grid_of(subset="stratified-200", similarity_threshold=0.5)
    driver: Any = make_driver(grid.datasets[0], grid)
    assert (driver.subset, driver.similarity_threshold, driver.user.model, driver.files) == (
        "stratified-200",
        0.5,
        "user-sim",
        None,
    )
    assert len(driver.task_ids()) == 200
    assert "ts: RapidAPI scenarios excluded: RAPID_API_KEY is not set" in capsys.readouterr().err


def test_paper_the_old_name_of_stratified_200_is_an_unknown_subset() -> None:
    grid = grid_of(subset="paper")
    with pytest.raises(InputError, match="unknown subset 'paper'") as info:
        make_driver(grid.datasets[0], grid)
    assert info.value.field == "datasets.ts.subset"


@pytest.mark.parametrize(
    ("options", "field", "message"),
    [
        ({"subset": "all"}, "subset", "unknown subset"),
        ({"similarity_threshold": 2}, "similarity_threshold", r"\[0, 1\]"),
        ({"similarity_threshold": True}, "similarity_threshold", r"\[0, 1\]"),
        ({"user_model": "nobody"}, "user_model", "not a model of the grid"),
        ({"max_steps": 3}, "max_steps", "unknown ToolSandbox option"),
    ],
)
def test_bad_options_are_input_errors_naming_the_field(options: dict[str, Any], field: str, message: str) -> None:
    grid = grid_of(**options)
    with pytest.raises(InputError, match=message) as info:
        make_driver(grid.datasets[0], grid)
    assert info.value.field == f"datasets.ts.{field}"


def test_without_toolsandbox_a_toolsandbox_dataset_is_exit_2_saying_how_to_install(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "tool_sandbox.scenarios", None)  # import now raises ImportError
    monkeypatch.setattr(live, "_SCENARIOS", None)
    grid = tmp_path / "grid.toml"
    grid.write_text(
        'methods = ["react"]\n[[datasets]]\nname = "ts"\nkind = "toolsandbox"\nuser_model = "user"\n'
        '[[models]]\nname = "agent"\nmodel = "exec"\napi_key_env = ""\n'
        '[[models]]\nname = "user"\nmodel = "u"\napi_key_env = ""\ncondition = false\n'
    )
    assert main(["run", str(grid), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "ToolSandbox is not installed" in err
    assert "make setup" in err
    assert "Traceback" not in err
