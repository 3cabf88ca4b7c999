"""Hostile tau results files (issue 14): no name from a file reaches tau2's ``eval`` or an arbitrary method, and
each malformed simulation is one reported input error, the others scored.

tau2's own ``calculate`` is replaced by a spy in every test here, so a regression shows as a recorded call, not
as a hang: the expressions used would run for hours in tau2's ``eval``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.envs.tau import TauEnvironment, load_domain
from prefix_exec.envs.tau.regrade import regrade_db
from prefix_exec.records.codec import read_records

HANG = "9**9**9**9"  # tau2's eval would compute this for hours


@pytest.fixture()
def tau2_calculate(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every call that reaches tau2's real ``calculate`` (airline or retail), recorded instead of run."""
    calls: list[Any] = []
    for domain in ("airline", "retail"):
        toolkit = load_domain(domain).make_toolkit
        monkeypatch.setattr(toolkit, "calculate", lambda self, expression, _c=calls: _c.append(expression) or "0")
    return calls


def _two(shared_data: Path, tmp_path: Path, change: Callable[[dict[str, Any], dict[str, Any]], None]) -> Path:
    """The first two airline simulations of the gpt-4.1 file, the second one changed by ``change``."""
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text(encoding="utf-8"))
    data["simulations"] = data["simulations"][:2]
    change(data, data["simulations"][1])
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _task(data: dict[str, Any], simulation: dict[str, Any]) -> dict[str, Any]:
    task: dict[str, Any] = next(t for t in data["tasks"] if t["id"] == simulation["task_id"])
    return task


def _add_call(simulation: dict[str, Any], name: str, arguments: dict[str, Any]) -> None:
    """One more assistant call (with its tool message) right after the first user message."""
    at = next(i for i, m in enumerate(simulation["messages"]) if m["role"] == "user") + 1
    simulation["messages"][at:at] = [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "evil", "name": name, "arguments": arguments}]},
        {"role": "tool", "id": "evil", "content": "Error: no", "error": True},
    ]


def test_regrade_never_resolves_use_tool_to_tau2s_calculate(
    shared_data: Path, tmp_path: Path, tau2_calculate: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    def change(data: dict[str, Any], simulation: dict[str, Any]) -> None:
        _add_call(simulation, "__init__", {})
        _add_call(simulation, "calculate", {"expression": HANG})
        _add_call(simulation, "use_tool", {"tool_name": "calculate", "expression": HANG})  # first: replayed

    path = _two(shared_data, tmp_path, change)
    out = tmp_path / "r.jsonl"
    assert main(["score", "tau", str(path), "--out", str(out), "--regrade"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "regrade: 2/2 recorded DB checks reproduced" in err
    assert tau2_calculate == []
    records = list(read_records(out))
    # replay: use_tool is not a tool (tau2's own "not found" answer), __init__ neither; calculate is ours
    evil = [v for r in records for v in r.verdicts if v.result == "Error: Tool 'use_tool' not found."]
    assert len(evil) == 1
    assert not evil[0].accepted


def test_regrade_runs_only_the_domains_tools(shared_data: Path, tau2_calculate: list[Any]) -> None:
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text(encoding="utf-8"))
    simulation = data["simulations"][0]
    env = TauEnvironment(load_domain("airline"), {str(t["id"]): t for t in data["tasks"]})
    before = regrade_db(env, simulation)
    for name, arguments in (
        ("use_tool", {"tool_name": "calculate", "expression": HANG}),
        ("calculate", {"expression": HANG}),
        ("__init__", {"db": None}),
        ("__class__", {}),
    ):
        _add_call(simulation, name, arguments)
    after = regrade_db(env, simulation)
    assert tau2_calculate == []
    assert after.recomputed == before.recomputed
    assert after.agrees


@pytest.mark.parametrize(
    "state",
    [
        {
            "initialization_actions": [
                {"env_type": "assistant", "func_name": "calculate", "arguments": {"expression": HANG}}
            ]
        },
        {
            "initialization_actions": [
                {
                    "env_type": "assistant",
                    "func_name": "use_tool",
                    "arguments": {"tool_name": "calculate", "expression": HANG},
                }
            ]
        },
        {"initialization_actions": [{"env_type": "assistant", "func_name": "__init__", "arguments": {}}]},
        {
            "initialization_actions": [
                {
                    "env_type": "assistant",
                    "func_name": "get_user_details",
                    "arguments": {"user_id": "replaced by 600 nested lists"},
                }
            ]
        },
    ],
    ids=["calculate", "use_tool", "__init__", "nested"],
)
def test_a_hostile_initialization_action_is_one_input_error(
    shared_data: Path,
    tmp_path: Path,
    tau2_calculate: list[Any],
    capsys: pytest.CaptureFixture[str],
    state: dict[str, Any],
) -> None:
    if state["initialization_actions"][0]["func_name"] == "get_user_details":  # nested past the depth limit
        deep: Any = "x"
        for _ in range(600):
            deep = [deep]
        state["initialization_actions"][0]["arguments"]["user_id"] = deep
    path = _two(shared_data, tmp_path, lambda data, sim: _task(data, sim).update(initial_state=state))
    out = tmp_path / "r.jsonl"
    assert main(["score", "tau", str(path), "--out", str(out), "--regrade"]) == 2
    err = capsys.readouterr().err
    assert "prefix-exec: error:" in err
    assert "Traceback" not in err
    assert "initial" in err
    assert main(["score", "tau", str(path), "--out", str(out), "--overwrite", "--regrade", "--keep-going"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "prefix-exec: skipped" in err
    assert len(list(read_records(out))) == 1  # the other simulation is scored
    assert tau2_calculate == []


def test_a_message_history_call_of_use_tool_never_reaches_tau2s_calculate(
    shared_data: Path, tmp_path: Path, tau2_calculate: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    history = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "h1",
                    "name": "use_tool",
                    "arguments": {"tool_name": "calculate", "expression": HANG},
                    "requestor": "assistant",
                },
                {"id": "h2", "name": "calculate", "arguments": {"expression": HANG}, "requestor": "assistant"},
            ],
        }
    ]
    path = _two(
        shared_data, tmp_path, lambda data, sim: _task(data, sim).update(initial_state={"message_history": history})
    )
    out = tmp_path / "r.jsonl"
    # tau2 answers both with an error and changes nothing, so the task's initial state is the base DB
    assert main(["score", "tau", str(path), "--out", str(out), "--regrade"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert len(list(read_records(out))) == 2
    assert tau2_calculate == []


def test_arguments_nested_600_deep_are_one_unreadable_simulation(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep: Any = "x"
    for _ in range(600):
        deep = {"a": deep}
    path = _two(shared_data, tmp_path, lambda data, sim: _add_call(sim, "get_user_details", {"user_id": deep}))
    out = tmp_path / "r.jsonl"
    assert main(["score", "tau", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "nested deeper than 64 levels" in err
    assert "simulations[1]" in err
    assert main(["score", "tau", str(path), "--out", str(out), "--overwrite", "--keep-going"]) == 2
    assert len(list(read_records(out))) == 1
