"""BFCL's own result files with real inference errors (tests/data/bfcl-crash: written by bfcl-eval's generation for
gpt-4o-2024-11-20-FC against the scripted model server, which answered some requests with an HTTP 500 or 502, let
one time out and refused one as too long with a 400). The three 5xx and the timeout are the system's: ``score bfcl``
leaves them out by default (count and ids on stderr), keeps them under the label 'infrastructure' on request, and
``metrics`` leaves them out of Table 2's agent rows and says so; the 400 stays the agent's; the other entries score
as BFCL scores them, with FED at the planted wrong call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.records.infrastructure import LABEL

pytest.importorskip("bfcl_eval")

DATA = Path(__file__).resolve().parents[1] / "data" / "bfcl-crash"
RUN = DATA / "result" / "gpt-4o-2024-11-20-FC"
#: The entries whose inference the system ended, as the generator planted them (by hand from faults.json): an
#: HTTP 500 at the first request, a 500 in the third turn, no answer within the client's timeout, a 502.
SYSTEM = ["multi_turn_base_1", "multi_turn_base_4", "multi_turn_base_6", "multi_turn_miss_param_2"]
TEXTS = {
    "multi_turn_base_1": "Error during inference: Error code: 500 - internal error",
    "multi_turn_base_4": "Error during inference: Error code: 500 - internal error",
    "multi_turn_base_6": "Error during inference: Request timed out.",
    "multi_turn_miss_param_2": "Error during inference: Error code: 502 - Bad Gateway",
}
#: The entry the server refused with a 400 (the prompt too long): an inference error that is not the system's.
TOO_LONG = "multi_turn_base_7"
LISTED = ", ".join(f"bfcl/{entry} (gpt-4o-2024-11-20, FC, trial 0)" for entry in SYSTEM)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def planted() -> dict[str, Any]:
    categories: dict[str, dict[str, Any]] = json.loads((DATA / "faults.json").read_text(encoding="utf-8"))
    return {entry: what for entries in categories.values() for entry, what in entries.items()}


def bfcl_invalid() -> set[str]:
    """The entries BFCL's own evaluation judged invalid (its score files list only those, after a header)."""
    found = set()
    for path in (DATA / "score" / "gpt-4o-2024-11-20-FC" / "multi_turn").glob("*_score.json"):
        found |= {row["id"] for row in rows(path)[1:]}
    return found


def test_the_files_are_bfcls_own() -> None:
    """Each crashed line is as BFCL's multi_threaded_inference writes it (the text and the traceback), each
    planted fault left one, and BFCL's own evaluation calls exactly those inference errors."""
    lines = {row["id"]: row for path in sorted(RUN.glob("multi_turn/*_result.json")) for row in rows(path)}
    assert len(lines) == 12
    crashed = {entry: row for entry, row in lines.items() if isinstance(row["result"], str)}
    assert sorted(crashed) == sorted([*SYSTEM, TOO_LONG])
    assert {entry for entry, what in planted().items() if what and "fault" in what} == set(crashed)
    for entry, row in crashed.items():
        assert sorted(row) == ["id", "result", "traceback"]
        assert row["traceback"].startswith("Traceback (most recent call last):")
        assert row["result"] == TEXTS.get(entry, row["result"])
    assert crashed[TOO_LONG]["result"].startswith("Error during inference: Error code: 400 - This model's maximum")
    assert "openai.APITimeoutError: Request timed out." in crashed["multi_turn_base_6"]["traceback"]
    invalid = {row["id"]: row for path in (DATA / "score").rglob("*_score.json") for row in rows(path)[1:]}
    assert {entry: row["error"]["error_type"] for entry, row in invalid.items()} == dict.fromkeys(
        crashed, "multi_turn:inference_error"
    )


def test_left_out_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.jsonl"
    assert main(["score", "bfcl", str(RUN), "--out", str(out)]) == 0  # the model's folder: BFCL v4's layout
    records = rows(out)
    assert [r["task_id"] for r in records] == [entry for entry in planted() if entry not in SYSTEM]
    assert {(r["model"], r["method"]) for r in records} == {("gpt-4o-2024-11-20", "FC")}
    err = " ".join(capsys.readouterr().err.split())
    assert (
        "infrastructure: 4 rollouts ended by an infrastructure failure (the system's, not the agent's) left out of "
        "PEC/FED/TER: N = 8 without them, 12 with them (--keep-infrastructure-failures counts them under the label "
        f"'infrastructure'): {LISTED}"
    ) in err
    assert "scored 8 rollouts (5 fully executable); 4 ended by an infrastructure failure left out (listed above)" in err


def test_kept_under_their_own_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "k.jsonl"
    assert main(["score", "bfcl", str(RUN), "--out", str(out), "--keep-infrastructure-failures"]) == 0
    records = {r["task_id"]: r for r in rows(out)}
    assert len(records) == 12
    assert sorted(e for e, r in records.items() if r["label"] == LABEL) == SYSTEM
    for entry in SYSTEM:
        record = records[entry]
        assert record["metadata"]["infrastructure"] == TEXTS[entry]
        assert (record["fed"], record["success"]) == (1, 0) and record["reason"].endswith(TEXTS[entry])
    # the 400 is the request's fault: the agent's, as any entry where the model made no call
    too_long = records[TOO_LONG]
    assert "infrastructure" not in too_long["metadata"]
    assert (too_long["fed"], too_long["label"], too_long["success"]) == (1, "precondition", 0)
    assert "N = 12 with them, 8 without them" in capsys.readouterr().err


def test_the_others_score_as_bfcl_scores_them(tmp_path: Path) -> None:
    """Y is BFCL's own verdict on every entry; FED is at the planted wrong call where there is one, past the end
    elsewhere. BFCL's turns end with the model's text ("Done."): no action."""
    out = tmp_path / "k.jsonl"
    assert main(["score", "bfcl", str(RUN), "--out", str(out), "--keep-infrastructure-failures"]) == 0
    records = {r["task_id"]: r for r in rows(out)}
    invalid = bfcl_invalid()
    assert {entry: r["success"] for entry, r in records.items()} == {e: int(e not in invalid) for e in records}
    for entry, what in planted().items():
        record = records[entry]
        if what is None:
            assert (record["executable"], record["fed"], record["label"]) == (True, record["T"] + 1, None)
        elif "mistake" in what:
            assert (record["fed"], record["label"]) == (what["mistake"]["position"], "dependency")
            (name,) = what["mistake"]["call"]
            assert record["verdicts"][record["fed"] - 1]["tool"] == name
    assert records["multi_turn_base_3"]["reason"].startswith("cd returned an error: cd: 'photos': No such file")
    assert records["multi_turn_base_5"]["reason"].startswith("comment returned an error: Tweet with ID 7 not found.")


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bfcl-crash") / "k.jsonl"
    assert main(["score", "bfcl", str(RUN), "--out", str(out), "--keep-infrastructure-failures"]) == 0
    return out


def test_table_2_leaves_them_out_of_the_agent_rows(
    kept: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "m.json"
    assert main(["metrics", str(kept), "--format", "json", "--resamples", "200", "--out", str(summary)]) == 0
    doc = json.loads(summary.read_text(encoding="utf-8"))
    (row,) = doc["conditions"]
    assert (row["N"], row["TER"]["point"], row["labels"]) == (8, pytest.approx(5 / 8), {
        "dependency": 2, "precondition": 1
    })  # fmt: skip
    assert doc["infrastructure"] == {
        "label": LABEL,
        "kept": False,
        "count": 4,
        "N_with": 12,
        "N_without": 8,
        "rollouts": [f"bfcl/{entry} (gpt-4o-2024-11-20, FC, trial 0)" for entry in SYSTEM],
    }
    capsys.readouterr()
    assert main(["metrics", str(kept), "--resamples", "200"]) == 0
    table = capsys.readouterr().out
    assert (
        "Here: 4 rollouts ended by an infrastructure failure (the system's, not the agent's) left out: N = 8" in table
    )
    assert "| bfcl | gpt-4o-2024-11-20 | FC | 8 | 0.62 [" in table  # the agent row: N = 8, TER 5/8


def test_kept_in_table_2_under_their_label(kept: Path, tmp_path: Path) -> None:
    summary = tmp_path / "m.json"
    argv = ["metrics", str(kept), "--format", "json", "--resamples", "200", "--keep-infrastructure-failures"]
    assert main([*argv, "--out", str(summary)]) == 0
    doc = json.loads(summary.read_text(encoding="utf-8"))
    (row,) = doc["conditions"]
    assert (row["N"], row["labels"]) == (12, {"dependency": 2, "precondition": 1, LABEL: 4})
    assert doc["infrastructure"]["kept"] is True
