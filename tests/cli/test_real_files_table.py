"""docs/custom.md, "On real files": every figure of its table is what its commands give on tau-bench's published
gpt-4o airline trajectories, and its refs side files are the ones the table was made with (the second is the first
with ``conversation_gives: false`` on top: values the conversation gave are then not given, issue 41)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main

ROOT = Path(__file__).resolve().parents[2]
TAU_BENCH = ROOT / "tests" / "data" / "tau-bench"
SECTION = (ROOT / "docs" / "custom.md").read_text(encoding="utf-8").split("## On real files", 1)[1]
#: The table's first column -> the options that run adds to the documented base command.
RUNS = {
    "default": [],
    "`--require-tools`": ["--require-tools"],
    "`--no-error-pattern`": ["--no-error-pattern"],
    "`--hooks airline-refs.yaml`": ["--hooks", "airline-refs.yaml"],
    "`--hooks airline-refs-off.yaml`": ["--hooks", "airline-refs-off.yaml"],
}


def documented_rows() -> dict[str, list[str]]:
    table = SECTION[SECTION.index("| run | inputs |") :].split("\n\n", 1)[0].splitlines()[2:]
    rows = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in table]
    return {row[0]: row[1:] for row in rows}


def refs_side_file(directory: Path) -> Path:
    """The YAML block that follows the section's mention of airline-refs.yaml, written where the commands run."""
    block = re.search(r"`airline-refs\.yaml` \(ours.*?```yaml\n(.*?)```", SECTION, re.S)
    assert block is not None
    path = directory / "airline-refs.yaml"
    path.write_text(block.group(1), encoding="utf-8")
    assert "`airline-refs-off.yaml` is the same file with the line `conversation_gives: false` on top" in SECTION
    (directory / "airline-refs-off.yaml").write_text("conversation_gives: false\n" + block.group(1), encoding="utf-8")
    return path


def figures(records: list[dict[str, Any]], report: list[dict[str, Any]], err: str) -> list[str]:
    """One table row, computed: the documented columns after `run`, in order."""
    rejected = [v for r in records for v in r["verdicts"] if not v["accepted"]]
    sources = Counter(note for v in rejected for note in v["notes"] if note.startswith("source:"))
    labels = Counter(v["label"] for v in rejected)
    kinds = Counter(entry["kind"] for entry in report)
    compared = re.search(r"in (\d+) calls compared|agrees with every recorded outcome \((\d+) calls\)", err)
    assert compared is not None
    executable = sum(r["executable"] for r in records)
    return [
        "200",
        str(len(records)),
        str(200 - len(records)),
        str(executable),
        f"{sources['source: recorded outcome (error flag)']} / {sources['source: recorded outcome (error pattern)']}",
        str(sources["source: our check"]),
        ", ".join(f"{label} {n}" for label, n in sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))) or "none",
        f"{kinds['recorded-refusal']} / {kinds['extra-check']}",
        f"{int(compared.group(1) or compared.group(2)):,}",
        f"{executable / len(records):.2f}",
        f"{sum(r['success'] for r in records) / len(records):.2f}",
    ]


@pytest.mark.parametrize("run", RUNS)
def test_the_documented_row_is_what_the_command_gives(
    run: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    refs_side_file(tmp_path)
    out = tmp_path / "out.jsonl"
    argv = ["score", "transcripts", str(TAU_BENCH / "gpt-4o-airline.json"), "--tools"]
    argv += [str(TAU_BENCH / "airline-tools.json"), "--model", "gpt-4o", *RUNS[run], "--out", str(out)]
    assert main(argv) == 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    report = json.loads((tmp_path / "out.jsonl.consistency.json").read_text(encoding="utf-8"))
    assert figures(records, report, capsys.readouterr().err) == documented_rows()[run]


def test_the_table_has_one_row_per_run() -> None:
    assert list(documented_rows()) == list(RUNS)
