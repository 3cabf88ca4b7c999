"""A grid dataset's options are checked the same way for every benchmark: the field, message and hint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prefix_exec.errors import InputError
from prefix_exec.runner.datasets import make_driver
from prefix_exec.runner.grid import parse_grid

MODELS = [
    {"name": "agent", "model": "exec", "api_key_env": ""},
    {"name": "user", "model": "user-sim", "api_key_env": "", "condition": False},
]
TAU = {"domain": "airline", "user_model": "user"}


def refusal(kind: str, **options: Any) -> InputError:
    grid = parse_grid(
        {"methods": ["react"], "datasets": [{"name": "d", "kind": kind, **options}], "models": MODELS},
        base_dir=Path("."),
    )
    with pytest.raises(InputError) as info:
        make_driver(grid.datasets[0], grid)
    return info.value


@pytest.mark.parametrize(
    ("kind", "options", "hint"),
    [
        ("bfcl", {}, 'BFCL options: categories (list), subset = "stratified-200"'),
        ("tau", TAU, "tau options: domain, judge_model, max_errors, max_steps, max_turns, tau2_data, user_model"),
        ("toolsandbox", {"user_model": "user"}, "ToolSandbox options: similarity_threshold, subset, user_model"),
    ],
)
def test_the_first_unknown_option_is_named_with_the_known_ones(kind: str, options: dict[str, Any], hint: str) -> None:
    error = refusal(kind, **options, zeta=1, alpha=2)
    benchmark = hint.split(" options")[0]
    assert (error.message, error.field, error.hint) == (f"unknown {benchmark} option 'alpha'", "datasets.d.alpha", hint)


@pytest.mark.parametrize(
    ("kind", "options", "key"),
    [
        ("tau", {**TAU, "user_model": "nobody"}, "user_model"),
        ("tau", {**TAU, "judge_model": "nobody"}, "judge_model"),
        ("toolsandbox", {"user_model": "nobody"}, "user_model"),
    ],
)
def test_a_model_option_must_name_a_model_of_the_grid(kind: str, options: dict[str, Any], key: str) -> None:
    error = refusal(kind, **options)
    assert (error.message, error.field) == ("'nobody' is not a model of the grid", f"datasets.d.{key}")
    assert error.hint == "declare it under [[models]] (with condition = false to keep it out of the units)"
