"""``score transcripts`` on AgentDojo's own runs of its four suites (tests/data/agentdojo/runs, made by AgentDojo
0.1.35's code: scripts/agentdojo/generate.py), each suite on its own tools list: every conversation is read, the
ground truth is executable throughout, FED is at the first recorded error of every faulty run (the position
faulty.json records, independent of our scoring), and the first failures' labels are docs/custom.md's table
("AgentDojo's own runs"), with the classifier of issue 43 and with the one before it."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "agentdojo"
ORACLE: dict[str, dict[str, Any]] = json.loads((DATA / "faulty.json").read_text())
IDENTITY = ["--task-id-field", "suite_name,user_task_id", "--success-field", "utility", "--model-field"]

_spec = importlib.util.spec_from_file_location("default_labels", ROOT / "scripts" / "default_labels.py")
assert _spec is not None and _spec.loader is not None
default_labels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(default_labels)

#: docs/custom.md: faulty runs whose first failure only the recorded error shows (our checks accepted the call).
BY_RECORD = {"workspace": 36, "slack": 18, "travel": 6, "banking": 0}
#: docs/custom.md's table: suite -> (conversations, ground truth, faulty, labels now, labels before issue 43).
TABLE: dict[str, tuple[int, int, int, dict[str, int], dict[str, int]]] = {
    "workspace": (77, 40, 37, {"dependency": 28, "schema": 9}, {"dependency": 11, "schema": 2, "precondition": 24}),
    "slack": (42, 21, 21, {"dependency": 18, "schema": 3}, {"dependency": 18, "schema": 3}),
    "travel": (40, 20, 20, {"schema": 20}, {"schema": 15, "precondition": 5}),
    "banking": (32, 16, 16, {"schema": 16}, {"schema": 16}),
}


def runs(suite: str) -> list[Path]:
    return sorted((DATA / "runs").glob(f"*/{suite}/*/none/none.json"))


def score(suite: str, out: Path) -> list[dict[str, Any]]:
    files = [str(p) for p in runs(suite)]
    argv = ["score", "transcripts", *files, "--tools", str(DATA / f"{suite}-tools.json"), *IDENTITY]
    assert main([*argv, "pipeline_name", "--workers", "1", "--out", str(out)]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def label_before(record: dict[str, Any]) -> str:
    """The first failure's label by the classifier before issue 43 (scripts/default_labels.py's table)."""
    return str(default_labels.record_label_before(record, lambda: ORACLE[record["task_id"]]["error"]))


@pytest.mark.parametrize("suite", sorted(TABLE))
def test_every_run_is_read_and_fails_at_its_first_recorded_error(
    suite: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conversations, truth, faulty, now, was = TABLE[suite]
    records = score(suite, tmp_path / "o.jsonl")
    err = capsys.readouterr().err
    assert len(runs(suite)) == len(records) == conversations
    assert err.count("1 conversation read as OpenAI Chat (detected)") == conversations
    by_pipeline = Counter(r["model"] for r in records)
    assert by_pipeline == {"ground-truth": truth, "scripted-faulty": faulty}
    for record in records:
        if record["model"] == "ground-truth":
            assert record["fed"] == record["T"] + 1, record["task_id"]  # AgentDojo raised on no call
            assert record["success"] == 1, record["task_id"]  # its own utility check
            continue
        expected = ORACLE[record["task_id"]]
        assert record["fed"] == expected["position"], record["task_id"]
        refused = record["actions"][record["fed"] - 1]
        assert refused["observation"] == {"content": expected["error"], "error": True}
        assert refused["name"] == expected["function"]
    faulty_records = [r for r in records if r["model"] == "scripted-faulty"]
    origins = Counter(r["verdicts"][r["fed"] - 1]["notes"][0] for r in faulty_records)
    assert origins["source: recorded outcome (error flag)"] == BY_RECORD[suite]
    assert origins["source: our check"] == faulty - BY_RECORD[suite]
    assert Counter(r["label"] for r in records if r["model"] == "scripted-faulty") == now
    assert Counter(label_before(r) for r in records if r["model"] == "scripted-faulty") == was


def test_every_task_without_a_faulty_run_says_why() -> None:
    missing = {key: value["reason"] for key, value in ORACLE.items() if "position" not in value}
    assert missing == {
        f"workspace/user_task_{n}": "no mutation of any argument made the tool refuse" for n in (24, 26, 27)
    }
    assert len(ORACLE) == sum(truth for _, truth, _, _, _ in TABLE.values()) == 97
