"""make setup's two scripts: the step runner (one line per step, pip's conflict block summarised, failures loud)
and the import check (one line per module that does not import, exit 1)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


step = _load("setup_step")
check = _load("check_setup")

# pip's block as pip 26 printed it in this repository's make setup before the installs were reordered.
PIP_BLOCK = """\
ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. \
This behaviour is the source of the following dependency conflicts.
tool-sandbox 0.0.1 requires anthropic==0.26.1, which is not installed.
bfcl-eval 2026.3.23 requires cohere==5.18.0, which is not installed.
tool-sandbox 0.0.1 requires numpy==1.26.4, but you have numpy 2.5.5 which is incompatible.
bfcl-eval 2026.3.23 requires numpy==1.26.4, but you have numpy 2.5.5 which is incompatible.
bfcl-eval 2026.3.23 requires mpmath==1.3.0, but you have mpmath 1.4.1 which is incompatible.
"""


def test_the_expected_conflicts_become_one_line() -> None:
    lines = step.conflict_report(PIP_BLOCK.splitlines(), Path("v/setup.log"))
    assert len(lines) == 1
    assert "3 declared pin(s) of bfcl-eval" in lines[0] and "2 declared pin(s) of tool-sandbox" in lines[0]
    assert "--no-deps" in lines[0] and "v/setup.log" in lines[0]
    assert not any("ERROR" in line for line in lines)


def test_other_conflicts_are_shown_as_pip_wrote_them() -> None:
    news = "matplotlib 3.9.0 requires numpy>=1.23, but you have numpy 1.0 which is incompatible."
    lines = step.conflict_report([*PIP_BLOCK.splitlines(), news], Path("setup.log"))
    assert lines[-1] == news
    assert len(lines) == 3  # the summary, a header saying these are not the expected ones, the line


def test_no_block_no_lines() -> None:
    assert step.conflict_report(["Successfully installed numpy-2.5.5"], Path("setup.log")) == []


def test_a_step_prints_one_line_and_logs_the_rest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "venv" / "setup.log"
    code = "print('noise'); import sys; print('more noise', file=sys.stderr)"
    assert step.main([str(log), "quiet step", "--", sys.executable, "-c", code]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("quiet step: ok (") and out.count("\n") == 1 and err == ""
    assert "noise" in log.read_text() and "more noise" in log.read_text()


def test_a_failing_step_exits_with_its_status_and_shows_the_log_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "setup.log"
    code = "import sys; print('\\n'.join(f'line {i}' for i in range(100))); sys.exit(3)"
    assert step.main([str(log), "loud step", "--", sys.executable, "-c", code]) == 3
    _, err = capsys.readouterr()
    assert err.startswith("loud step: FAILED (exit 3")
    shown = [line.strip() for line in err.splitlines()[1:]]
    assert shown == [f"line {i}" for i in range(70, 100)]  # the log's last 30 lines


def test_a_step_whose_command_cannot_start_fails_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A missing program (a venv that lost its pip) raised FileNotFoundError out of subprocess.run: a traceback
    # instead of the step's FAILED line, and nothing in the log.
    log = tmp_path / "setup.log"
    assert step.main([str(log), "missing", "--", str(tmp_path / "no-such-program")]) == 127
    _, err = capsys.readouterr()
    assert err.startswith("missing: FAILED (cannot run") and "no-such-program" in err
    assert "no-such-program" in log.read_text().split("=== missing")[-1].split("\n", 1)[1]


def test_the_check_names_each_module_that_does_not_import(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(check, "MODULES", {"core": ("json",), "ray": ("json", "no_such_module_x")})
    monkeypatch.setitem(sys.modules, "no_such_module_x", None)
    assert check.main(["core", "ray"]) == 1
    _, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert line.startswith("setup check: extra 'ray' needs no_such_module_x: ModuleNotFoundError")
    assert "pip install 'prefix-exec[ray]'" in line
    assert check.main(["core"]) == 0
    assert capsys.readouterr().out.startswith("setup check: all 1 modules of 1 extras import")
    assert check.main(["nonsense"]) == 2


def test_the_check_covers_every_extra_of_pyproject() -> None:
    import tomllib

    extras = tomllib.loads((SCRIPTS.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(extras) == set(check.MODULES) - {"core"}
    assert "plot" not in extras  # the old name of report, dropped at 0.x
