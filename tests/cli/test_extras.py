"""New-user paths: --version, and a missing optional extra is an exit-2 message naming the extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ticketing_cli import score_example

from prefix_exec.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("prefix-exec ")
    assert out.split()[1][0].isdigit()


def test_report_without_matplotlib_writes_nothing(
    ticketing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "records.jsonl"
    assert score_example(ticketing, records) == 0
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    out = tmp_path / "report"
    assert main(["report", str(records), "--out", str(out), "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert "prefix-exec[plot]" in err
    assert "--no-plots" in err
    assert "Traceback" not in err
    assert not out.exists()
    assert main(["report", str(records), "--out", str(out), "--resamples", "50", "--no-plots"]) == 0
    assert (out / "report.html").is_file()


def test_demo_without_matplotlib_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--tasks", "2", "--resamples", "20"]) == 2
    assert "prefix-exec[plot]" in capsys.readouterr().err
    assert not out.exists()


def test_a_missing_module_deep_inside_a_command_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def needs_openai(args: object) -> int:
        raise ModuleNotFoundError("No module named 'openai'", name="openai")

    monkeypatch.setattr("prefix_exec.cli.metrics.run", needs_openai)
    assert main(["metrics", "x.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'prefix-exec[llm]'" in err
    assert "Traceback" not in err
