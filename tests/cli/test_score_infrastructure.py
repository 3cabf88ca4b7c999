"""Infrastructure failures (issue 43): BFCL's inference crashes and tau2's infrastructure_error are the system's,
so they are left out of the records by default (counted and listed), or kept on request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.importers.infrastructure import Exclusion, failure_of, mark, system_failure
from prefix_exec.trajectory import Rollout, Skipped

#: What BFCL writes for an entry whose inference crashed (the text of a vLLM 500, as BFCL v4 logs it).
CRASH = "Error during inference: Error code: 500 - {'object': 'error', 'message': 'Internal Server Error'}"


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("text", "system"),
    [
        (CRASH, True),
        ("Error during inference: Request timed out.", True),
        ("openai.APIConnectionError: Connection error.", True),
        ("Error code: 429 - rate limited", True),
        ("Error code: 400 - the prompt is too long", False),  # the request's fault: not the system's
        ("the model answered nothing", False),
    ],
)
def test_what_says_the_system_failed(text: str, system: bool) -> None:
    assert system_failure(text) is system


def test_exclusion_counts_and_lists() -> None:
    plain = Rollout(dataset="d", task_id="t1", model="m", method="x", actions=(), success=0)
    crashed = mark(Rollout(dataset="d", task_id="t2", model="m", method="x", actions=(), success=0), CRASH)
    skipped = Skipped("f:3", "not JSON")
    exclusion = Exclusion()
    assert list(exclusion.filter([plain, crashed, skipped])) == [plain, skipped]
    assert exclusion.excluded == ["t2 (trial 0)"]
    said = exclusion.describe(scored=1)
    assert said is not None
    assert "1 rollout ended by an infrastructure failure" in said
    assert "N = 1 without them, 2 with them" in said
    keeping = Exclusion(keep=True)
    assert list(keeping.filter([plain, crashed])) == [plain, crashed]
    assert failure_of(crashed) == CRASH
    assert Exclusion().describe(scored=3) is None


@pytest.fixture
def crashed_file(shared_data: Path, tmp_path: Path) -> Path:
    """glyphh's miss_func results with three entries' results replaced by inference crashes."""
    pytest.importorskip("bfcl_eval")
    source = shared_data / "bfcl" / "glyphh-ada-1.1" / "BFCL_v4_multi_turn_miss_func_result.json"
    lines = source.read_text(encoding="utf-8").splitlines()[:6]
    changed = []
    for number, line in enumerate(lines):
        row = json.loads(line)
        if number in (1, 3, 4):
            row["result"] = CRASH
        changed.append(json.dumps(row))
    folder = tmp_path / "glyphh-ada-1.1"
    folder.mkdir()
    path = folder / source.name
    path.write_text("\n".join(changed) + "\n", encoding="utf-8")
    return path


def test_bfcl_inference_crashes_are_left_out_by_default(
    crashed_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.jsonl"
    assert main(["score", "bfcl", str(crashed_file), "--out", str(out)]) == 0  # not an error: the system's
    assert len(rows(out)) == 3
    err = capsys.readouterr().err
    assert "infrastructure: 3 rollouts ended by an infrastructure failure" in err
    assert "N = 3 without them, 6 with them" in err
    assert "multi_turn_miss_func_0 (" in err  # the ids, with where each was read
    kept = tmp_path / "k.jsonl"
    argv = ["score", "bfcl", str(crashed_file), "--out", str(kept), "--keep-infrastructure-failures"]
    assert main(argv) == 0
    records = rows(kept)
    assert len(records) == 6
    crashed = [r for r in records if "infrastructure" in r.get("metadata", {})]
    assert len(crashed) == 3
    assert all(r["fed"] == 1 and r["metadata"]["infrastructure"] == CRASH for r in crashed)
    assert "3 infrastructure failures kept" in capsys.readouterr().err


def test_a_tau2_simulation_ended_by_infrastructure_is_left_out(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("tau2")
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text(encoding="utf-8"))
    data["simulations"] = data["simulations"][:3]
    data["simulations"][1]["termination_reason"] = "infrastructure_error"
    ended = data["simulations"][1]["task_id"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    assert main(["score", "tau", str(path), "--out", str(out)]) == 0
    assert len(rows(out)) == 2
    err = capsys.readouterr().err
    assert "infrastructure: 1 rollout ended by an infrastructure failure" in err
    assert f"airline/{ended} (" in err
    kept = tmp_path / "k.jsonl"
    assert main(["score", "tau", str(path), "--out", str(kept), "--keep-infrastructure-failures"]) == 0
    marked = [r for r in rows(kept) if "infrastructure" in r["metadata"]]
    assert [r["task_id"] for r in marked] == [f"airline/{ended}"]
