"""``score custom`` with recorded outcomes on canonical rollouts: the evidence options, the consistency report
(written, resumed) and the no-tool rule, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def observed(ticketing: Path, tmp_path: Path) -> Path:
    """The example's react rollouts, the second call of open-vpn-followup recorded as the server's refusal (a
    plain reply beginning 'Error'), every other call with a plain success reply."""
    lines = []
    for row in rows(ticketing / "rollouts.jsonl"):
        if row["method"] != "react":
            continue
        for depth, action in enumerate(row["actions"], start=1):
            refused = row["task_id"] == "open-vpn-followup" and depth == 2
            action["observation"] = {"content": "Error: search is down" if refused else "ok", "error": None}
        lines.append(json.dumps(row))
    path = tmp_path / "observed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def score(ticketing: Path, rollouts: Path, out: Path, *extra: str) -> int:
    argv = ["score", "custom", "--tools", str(ticketing / "tools.yaml"), str(rollouts), "--out", str(out)]
    return main([*argv, *extra])


def test_the_pattern_decides_and_the_report_lists_the_refusal(
    ticketing: Path, observed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    assert score(ticketing, observed, out) == 0
    err = capsys.readouterr().err
    got = {r["task_id"]: r for r in rows(out)}
    vpn = got["open-vpn-followup"]
    assert (vpn["fed"], vpn["label"]) == (2, "precondition")
    assert vpn["verdicts"][1]["notes"] == [
        "source: recorded outcome (error pattern)",
        "classifier: default -> precondition",
    ]
    assert sum(not r["executable"] for r in got.values()) == 1
    report = json.loads((tmp_path / "out.jsonl.consistency.json").read_text())
    assert [(e["task_id"], e["depth"], e["kind"], e["replay_accepted"]) for e in report] == [
        ("open-vpn-followup", 2, "recorded-refusal", True)
    ]
    assert "consistency: 1 disagreement(s) (1 recorded-refusal)" in err
    # --no-error-pattern: the reply is text like any other, every react rollout replays in full
    again = tmp_path / "again.jsonl"
    assert score(ticketing, observed, again, "--no-error-pattern", "--consistency", str(tmp_path / "c.json")) == 0
    assert all(r["executable"] for r in rows(again))
    assert json.loads((tmp_path / "c.json").read_text()) == []
    assert "replay agrees with every recorded outcome" in capsys.readouterr().err
    # a pattern of the user's own
    mine = tmp_path / "mine.jsonl"
    assert score(ticketing, observed, mine, "--error-pattern", r"^ok$") == 0
    assert all(r["fed"] == 1 for r in rows(mine) if not r["no_tool"])


def test_resume_compares_every_record_again(ticketing: Path, observed: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    assert score(ticketing, observed, out) == 0
    full = (tmp_path / "out.jsonl.consistency.json").read_text()
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:2]) + "\n")  # as if killed after two records (open-vpn-followup is first)
    (tmp_path / "out.jsonl.consistency.json").unlink()
    assert score(ticketing, observed, out, "--resume") == 0
    assert (tmp_path / "out.jsonl.consistency.json").read_text() == full


def test_no_report_without_recorded_outcomes(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    assert score(ticketing, ticketing / "rollouts.jsonl", out) == 0
    assert not (tmp_path / "out.jsonl.consistency.json").exists()
    assert "consistency" not in capsys.readouterr().err
    assert (
        score(ticketing, ticketing / "rollouts.jsonl", out, "--overwrite", "--consistency", str(tmp_path / "c.json"))
        == 0
    )
    assert json.loads((tmp_path / "c.json").read_text()) == []
    assert "no call with a recorded outcome to compare" in capsys.readouterr().err


def test_require_tools_and_bad_patterns(ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    assert score(ticketing, ticketing / "rollouts.jsonl", out) == 0
    allowed = next(r for r in rows(out) if r["no_tool"])
    assert allowed["executable"]
    assert allowed["verdicts"][0]["notes"] == [
        "source: our check",
        "no-tool rule: task 'what-can-you-do' sets allow_no_tool: true",
    ]
    assert score(ticketing, ticketing / "rollouts.jsonl", out, "--overwrite", "--require-tools") == 0
    required = next(r for r in rows(out) if r["no_tool"])
    assert (required["fed"], required["label"]) == (1, "precondition")
    capsys.readouterr()
    bad = tmp_path / "bad.jsonl"
    assert score(ticketing, ticketing / "rollouts.jsonl", bad, "--error-pattern", "[z-a]") == 2
    err = capsys.readouterr().err
    assert "prefix-exec: error: --error-pattern '[z-a]': not a valid regular expression" in err
    assert not bad.exists()
    with pytest.raises(SystemExit) as caught:  # argparse: the two pattern options exclude each other
        score(ticketing, ticketing / "rollouts.jsonl", bad, "--error-pattern", "x", "--no-error-pattern")
    assert caught.value.code == 2
