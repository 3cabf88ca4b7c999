"""Every file of ``../shared/data/tau/leaderboard`` (17 real public tau2-bench runs) read by ``score tau``, with
what each yields as docs/tau.md's table states it (the numbers are written once, there)."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.importers.tau import read_results
from prefix_exec.records.codec import read_records
from shared_folder import REPO

BARE = "adaptive-agent-opus-4.6_airline_bare-list.json"  # a bare list: --domain airline --model claude-opus-4-6


def documented_yields() -> dict[str, tuple[int, int, int, int]]:
    """The table under "What each leaderboard file yields" in docs/tau.md, which states what each file yields
    under tau3 with the default rules: file -> (records, fully executable, Y = 1, simulations skipped), where
    a dash is 0 and the skipped are the simulations without a record."""
    section = (REPO / "docs" / "tau.md").read_text(encoding="utf-8").split("### What each leaderboard file yields")[1]
    lines = itertools.dropwhile(lambda line: not line.startswith("|"), section.splitlines())
    table = list(itertools.takewhile(lambda line: line.startswith("|"), lines))
    assert table[0].split("|")[1:6] == [" file ", " simulations ", " records ", " fully executable ", " Y = 1 "]
    yields = {}
    for row in table[2:]:
        name, *counts = (cell.strip() for cell in row.split("|")[1:6])
        simulations, records, executable, success = (0 if count == "\u2014" else int(count) for count in counts)
        yields[name.strip("`")] = (records, executable, success, simulations - records)
    return yields


YIELDS = documented_yields()


@pytest.fixture(scope="module")
def scored(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = shared_data / "tau" / "leaderboard"
    assert sorted(p.name for p in folder.glob("*.json")) == sorted(YIELDS)  # every file is covered
    out = tmp_path_factory.mktemp("leaderboard")
    records: list[Any] = []
    consistency: list[dict[str, Any]] = []
    for name, files, extra in (
        ("files", [str(folder / f) for f in YIELDS if f != BARE], []),
        ("bare", [str(folder / BARE)], ["--domain", "airline", "--model", "claude-opus-4-6"]),
    ):
        path = out / f"{name}.jsonl"
        code = main(["score", "tau", *files, *extra, "--out", str(path), "--keep-going"])
        assert code == (2 if name == "files" else 0)  # the toolorchestra simulations are reported input errors
        records += list(read_records(path))
        consistency += json.loads(Path(f"{path}.consistency.json").read_text(encoding="utf-8"))
    return {"records": records, "consistency": consistency}


def test_every_leaderboard_file_yields_its_records(scored: dict[str, Any]) -> None:
    by_file: dict[str, list[Any]] = {}
    for record in scored["records"]:
        by_file.setdefault(record.metadata["source"], []).append(record)
    for name, (count, executable, success, _) in YIELDS.items():
        records = by_file.get(name, [])
        assert (len(records), sum(r.executable for r in records), sum(r.success for r in records)) == (
            count,
            executable,
            success,
        ), name
    assert {r.metadata["tau2"]["task_set"] for r in scored["records"]} == {"tau3"}


def test_every_leaderboard_file_reports_the_simulations_it_cannot_score(shared_data: Path) -> None:
    for name, (_, _, _, skipped) in YIELDS.items():
        extra = {"domain": "airline", "model": "claude-opus-4-6"} if name == BARE else {}
        results = read_results(shared_data / "tau" / "leaderboard" / name, **extra)
        assert len(results.skipped) == skipped, name
        assert all("field 'task_id' is missing" in s.error for s in results.skipped)


def test_leaderboard_consistency_has_no_task_mismatch(scored: dict[str, Any]) -> None:
    kinds = Counter(entry["kind"] for entry in scored["consistency"])
    # none is a task_mismatch (the task ids fit), nor env-skew: each of whissle's replies is paired with its own call
    assert kinds == {"extra-check": 1}


def test_task_ids_assigned_by_position_are_task_mismatches(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """toolorchestra's airline file has no task ids; numbering its simulations by position (as a user might)
    files most of them under the wrong task, which the regrade only hints at. Its first 10 simulations (each
    regrade replays tau2's DB: the whole file's 50 take seconds): all 10 are task mismatches, and 6/10 DB
    checks still reproduce (25/50 in the whole file)."""
    data = json.loads(
        (shared_data / "tau" / "leaderboard" / "toolorchestra-gpt-5_airline_no-task-ids.json").read_text(
            encoding="utf-8"
        )
    )
    data["simulations"] = data["simulations"][:10]
    for index, simulation in enumerate(data["simulations"]):
        simulation["task_id"] = data["tasks"][index]["id"]
    path = tmp_path / "positional.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    assert main(["score", "tau", str(path), "--out", str(out), "--regrade"]) == 0
    assert "regrade: 6/10 recorded DB checks reproduced" in capsys.readouterr().err
    entries = json.loads(Path(f"{out}.consistency.json").read_text(encoding="utf-8"))
    assert sum(e["kind"] == "task_mismatch" for e in entries) == 10
