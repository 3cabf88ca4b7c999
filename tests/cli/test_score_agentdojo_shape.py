"""``score transcripts`` on AgentDojo-shaped logs (tests/data/agentdojo): a metadata header line, errors in
``error``, calls without ids, task names that repeat across suites."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "agentdojo"
LOG = DATA / "invariant-shape.jsonl"
IDENTITY = ["--task-id-field", "metadata.suite_name,metadata.name", "--success-field", "metadata.success"]


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_conversation_is_read_and_fails_at_its_first_recorded_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o.jsonl"
    argv = ["score", "transcripts", str(LOG), "--tools", str(DATA / "tools.json"), *IDENTITY, "--out", str(out)]
    assert main(argv) == 0  # no --keep-going: the header line is skipped, not refused
    found = [(r["task_id"], r["model"], r["T"], r["fed"], r["label"], r["success"]) for r in rows(out)]
    assert found == [
        ("slack/user_task_3[without attack]", "gpt-4o-2024-05-13", 2, 2, "dependency", 0),
        ("workspace/user_task_3[without attack]", "gpt-4o-2024-05-13", 2, 1, "dependency", 1),
        ("workspace/user_task_7[without attack]", "command-r-plus", 2, 2, "schema", 0),
        ("banking/user_task_1[without attack]", "gpt-4o-2024-05-13", 1, 2, None, 1),
    ]
    by_task = {r["task_id"]: r for r in rows(out)}
    refused = by_task["slack/user_task_3[without attack]"]["verdicts"][1]
    assert refused["notes"] == ["source: recorded outcome (error flag)", "classifier: does not exist -> dependency"]
    assert '[ValueError]: "ValueError: Channel does not exist!"' in refused["reason"]
    dated = by_task["workspace/user_task_7[without attack]"]["verdicts"][1]["notes"][1]
    assert dated == "classifier: format -> schema"
    err = capsys.readouterr().err
    assert "4 conversations read as OpenAI Chat (detected); 1 record of metadata only skipped (line 1)" in err
    assert "replay agrees with every recorded outcome" not in err


def test_one_field_pools_the_suites_tasks(tmp_path: Path) -> None:
    """Without the composite identity, slack's and workspace's user_task_3 are two trials of one task."""
    out = tmp_path / "o.jsonl"
    argv = [
        "score",
        "transcripts",
        str(LOG),
        "--tools",
        str(DATA / "tools.json"),
        "--task-id-field",
        "metadata.name",
        "--success-field",
        "metadata.success",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    assert [(r["task_id"], r["trial"]) for r in rows(out)][:2] == [
        ("user_task_3[without attack]", 0),
        ("user_task_3[without attack]", 1),
    ]
