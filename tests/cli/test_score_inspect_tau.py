"""``prefix-exec score inspect`` on a real inspect log of inspect_evals' tau2 airline, made here by ``inspect eval``.

Three airline samples run offline against the loopback scripted server, which plays both the simulated customer
and the agent: a clean cancellation (task 19), a made-up reservation id then the right one (task 1), and a
wrongly typed user id then the right one (task 5). The same conversations as a tau2 results file go through
``score tau``: the records must be equal (but for ``metadata`` and the tool replies' text, which a file built by
hand cannot carry), and so must the consistency reports. (Samples a tau2 log cannot map, such as one without
the agent's conversation in its store, are tested without a log in tests/importers/test_inspect_tau.py.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.inspect_logs import TauScript, run_inspect
from fakes.openai_server import ScriptedServer
from prefix_exec.cli import main

pytestmark = pytest.mark.slow

USERS = {"19": "olivia_gonzalez_2305", "1": "raj_sanchez_7340", "5": "mei_brown_7075"}
SCRIPT = TauScript(
    greetings={
        "19": "Hi, I am olivia_gonzalez_2305 and I want to cancel my Texas trip.",
        "1": "Hello, I am raj_sanchez_7340 and my reservation is Q69X3R.",
        "5": "Hi, I am mei_brown_7075; my flight HAT045 was delayed.",
    },
    calls={
        "19": [
            ("get_user_details", {"user_id": "olivia_gonzalez_2305"}),
            ("get_reservation_details", {"reservation_id": "Z7GOZK"}),
            ("cancel_reservation", {"reservation_id": "Z7GOZK"}),
        ],
        "1": [
            ("get_user_details", {"user_id": "raj_sanchez_7340"}),
            ("get_reservation_details", {"reservation_id": "ZZZ999"}),
            ("get_reservation_details", {"reservation_id": "Q69X3R"}),
        ],
        "5": [("get_user_details", {"user_id": 7075}), ("get_user_details", {"user_id": "mei_brown_7075"})],
    },
    marker_of=USERS,
)
#: The error flag of each call's reply: inspect's tools fail on the made-up id, and inspect refuses the integer.
ERRORS = {"19": [False, False, False], "1": [False, True, False], "5": [True, False]}


@pytest.fixture(scope="module")
def tau_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inspect-tau")
    with ScriptedServer(SCRIPT.respond) as server:
        return run_inspect(
            "inspect_evals.tau2.tau2@tau2_airline",
            ["-T", "shuffle=false", "--sample-id", ",".join(SCRIPT.calls)],
            server,
            folder / "logs",
            {},
        )


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without its metadata and its replies' text (kept: each reply's error flag)."""
    kept = {k: v for k, v in record.items() if k != "metadata"}
    kept["actions"] = [
        {**a, "observation": {"error": (a.get("observation") or {}).get("error")}} for a in record["actions"]
    ]
    return kept


def inspect_tasks() -> list[dict[str, Any]]:
    """inspect_evals' airline task definitions (what its samples embed), from its package data."""
    import importlib.util

    spec = importlib.util.find_spec("inspect_evals.tau2")
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    tasks = json.loads((root / "data" / "domains" / "airline" / "tasks.json").read_text(encoding="utf-8"))
    return [t for t in tasks if t["id"] in SCRIPT.calls]


def test_records_equal_those_of_the_same_conversations_in_a_results_file(
    tau_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "inspect.jsonl"
    args = ["--model", "model", "--method", "llm_agent"]
    assert main(["score", "inspect", str(tau_log), "--out", str(out), *args]) == 0
    err = capsys.readouterr().err
    assert "regrade (tau2 DB check): 3/3 agree with the log's Y" in err
    native_file = SCRIPT.results_file(tmp_path / "airline.json", inspect_tasks(), ERRORS, {t: 1.0 for t in ERRORS})
    native = tmp_path / "native.jsonl"
    assert main(["score", "tau", str(native_file), "--out", str(native), *args]) == 0
    ours = sorted((comparable(r) for r in rows(out)), key=lambda r: r["task_id"])
    theirs = sorted((comparable(r) for r in rows(native)), key=lambda r: r["task_id"])
    assert [r["task_id"] for r in ours] == ["1", "19", "5"]
    assert ours == theirs
    by_task = {r["task_id"]: r for r in rows(out)}
    assert {t: r["success"] for t, r in by_task.items()} == {"1": 1, "19": 1, "5": 1}
    assert by_task["19"]["fed"] == 4 and by_task["19"]["T"] == 3
    assert (by_task["1"]["fed"], by_task["1"]["label"]) == (2, "dependency")
    assert "ZZZ999" in by_task["1"]["reason"]
    assert (by_task["5"]["fed"], by_task["5"]["label"]) == (1, "schema")
    assert by_task["1"]["actions"][1]["observation"]["content"] == "Reservation ZZZ999 not found"
    assert by_task["1"]["metadata"]["inspect"]["sample_id"] == "1"
    # the consistency reports agree: replay and inspect's run agree on every compared call's error flag
    assert json.loads(Path(f"{out}.consistency.json").read_text()) == json.loads(
        Path(f"{native}.consistency.json").read_text()
    )
