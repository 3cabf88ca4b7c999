"""``prefix-exec score inspect`` on a real inspect log of inspect_evals' tau2 airline, made here by ``inspect eval``.

One airline sample runs offline against the loopback scripted server, which plays both the simulated customer
and the agent (task 19): the agent asks for a made-up reservation id, which fails, then the right one, then
cancels it. One, not more: inspect_evals' tau2 copies the airline DB into the sample's store at every step, so
a sample costs seconds to run and to read.
The same conversations as a tau2 results file go through ``score tau``: the records must be equal (but for
``metadata`` and the tool replies' text, which a file built by hand cannot carry), and so must the consistency
reports. Samples a tau2 log cannot map (one without the agent's conversation in its store, say) are tested
without a log in tests/importers/test_inspect_import.py; a schema failure is in the BFCL log's test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.inspect_logs import TAU_ERRORS as ERRORS
from fakes.inspect_logs import TAU_PLAN as SCRIPT
from fakes.inspect_logs import BfclScript
from prefix_exec.cli import main

pytestmark = pytest.mark.slow


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
    assert spec is not None
    assert spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    tasks = json.loads((root / "data" / "domains" / "airline" / "tasks.json").read_text(encoding="utf-8"))
    return [t for t in tasks if t["id"] in SCRIPT.calls]


ARGS = ["--model", "model", "--method", "llm_agent"]


@pytest.fixture(scope="module")
def scored_alone(inspect_tau: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The log scored by itself (reading it costs seconds: its events hold the airline DB at every step), and
    what ``score inspect`` printed."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("inspect-tau-scored") / "inspect.jsonl"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["score", "inspect", str(inspect_tau), "--out", str(out), *ARGS]) == 0
    return out, err.getvalue()


def test_records_equal_those_of_the_same_conversations_in_a_results_file(
    scored_alone: tuple[Path, str], tmp_path: Path
) -> None:
    out, err = scored_alone
    assert "regrade (tau2 DB check): 1/1 agree with the log's Y" in err
    native_file = SCRIPT.results_file(tmp_path / "airline.json", inspect_tasks(), ERRORS, {t: 1.0 for t in ERRORS})
    native = tmp_path / "native.jsonl"
    assert main(["score", "tau", str(native_file), "--out", str(native), *ARGS]) == 0
    (ours,) = (comparable(r) for r in rows(out))
    (theirs,) = (comparable(r) for r in rows(native))
    assert ours == theirs
    (record,) = rows(out)
    assert (record["dataset"], record["task_id"], record["success"]) == ("tau3", "airline/19", 1)
    assert (record["fed"], record["T"], record["label"]) == (2, 4, "dependency")
    assert "ZZZ999" in record["reason"]
    assert record["actions"][1]["observation"]["content"] == "Reservation ZZZ999 not found"
    assert record["actions"][3]["observation"]["error"] is False  # the cancellation ran
    assert record["metadata"]["inspect"]["sample_id"] == "19"
    # the consistency reports agree: replay and inspect's run agree on every compared call's error flag
    assert json.loads(Path(f"{out}.consistency.json").read_text()) == json.loads(
        Path(f"{native}.consistency.json").read_text()
    )


def test_bfcl_and_tau2_logs_in_one_run(
    inspect_tau: Path,
    inspect_bfcl: tuple[Path, BfclScript],
    scored_alone: tuple[Path, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    alone, mixed = scored_alone[0], tmp_path / "mixed.jsonl"
    assert main(["score", "inspect", str(inspect_bfcl[0]), str(inspect_tau), "--out", str(mixed), *ARGS]) == 0
    err = capsys.readouterr().err
    assert "regrade (BFCL's multi-turn rule): 3/3 agree" in err
    assert "regrade (tau2 DB check): 1/1 agree" in err
    assert sorted((r["dataset"], r["task_id"]) for r in rows(mixed)) == [
        ("bfcl", "multi_turn_base_1"),
        ("bfcl", "multi_turn_base_2"),
        ("bfcl", "multi_turn_miss_func_0"),
        ("tau3", "airline/19"),
    ]
    # the consistency report is about the tau2 samples only, as when their log is scored alone
    assert json.loads(Path(f"{mixed}.consistency.json").read_text()) == json.loads(
        Path(f"{alone}.consistency.json").read_text()
    )


def test_a_policy_variants_log_is_read_as_its_domain(
    inspect_tau_variant: Path, scored_alone: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log of task ``tau2_airline_tighter_policy`` is scored on airline, as score tau reads a file whose domain is
    ``airline_tighter_policy`` (envs.tau.pooled holds the rule): the same record as the airline task's log, and a
    note saying so (before, it went to the generic path and was fully executable)."""
    out = tmp_path / "variant.jsonl"
    assert main(["score", "inspect", str(inspect_tau_variant), "--out", str(out), *ARGS]) == 0
    err = capsys.readouterr().err
    assert "note: domain 'airline_tighter_policy' read as airline, a policy variant of it" in err
    assert "regrade (tau2 DB check): 1/1 agree with the log's Y" in err
    (ours,) = rows(out)
    (theirs,) = rows(scored_alone[0])
    assert comparable(ours) == comparable(theirs)
    assert (ours["task_id"], ours["fed"], ours["label"], ours["metadata"]["domain"]) == (
        "airline/19",
        2,
        "dependency",
        "airline",
    )
    assert ours["metadata"]["inspect"]["task"] == "tau2_airline_tighter_policy"
