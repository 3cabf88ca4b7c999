"""A real plain install: a fresh virtual environment (no system site-packages) holding prefix-exec, built with
``pip install --no-deps`` from a copy of the source, and only the core dependencies that pyproject.toml lists.
Every command that needs something optional exits 2 before writing anything, with no traceback and with the
exact install command (the messages come from :mod:`prefix_exec.extras`); the commands that need nothing
optional work.

pip runs with this machine's own configuration, as ``make setup`` does: the wheels come from the indexes it
names (a local one here) or pip's cache, so the test needs no network when they are there. The environment is
built once for the module (about a minute on 2 busy cores).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from prefix_exec.cli import main
from prefix_exec.records.codec import write_records
from prefix_exec.trajectory import PrefixRecord, ToolCall, Verdict

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
#: Optional top-level modules a plain install must not have (else the test would prove nothing).
OPTIONAL = (
    "matplotlib",
    "openai",
    "ray",
    "litellm",
    "pandas",
    "bfcl_eval",
    "mpmath",
    "tau2",
    "loguru",
    "tool_sandbox",
    "mcp",
)
BFCL = "pip install 'prefix-exec[bfcl]' && pip install --no-deps bfcl-eval==2026.3.23"
PLOT = "pip install 'prefix-exec[report]'"


def core_dependencies() -> list[str]:
    dependencies: list[str] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return dependencies


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The project's own pip installs into the new environment (--python), which therefore needs no pip itself.
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    env.setdefault("PIP_RETRIES", "1")  # offline, an unreachable index costs one try, not five
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def closure(requirements: list[str]) -> list[metadata.Distribution]:
    """The installed distributions of ``requirements`` and of what they require in turn (extras left out),
    from the environment running the tests."""
    found: dict[str, metadata.Distribution] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if (req.marker and not req.marker.evaluate({"extra": ""})) or canonicalize_name(req.name) in found:
            continue
        dist = metadata.distribution(req.name)
        found[canonicalize_name(req.name)] = dist
        todo += [Requirement(r) for r in dist.requires or []]
    return list(found.values())


def copy_installed(requirements: list[str], site: Path) -> None:
    """Offline fallback: the same distributions as installed here, copied file by file (their RECORD) into
    ``site``, as pip would unpack their wheels (no scripts: none is needed)."""
    for dist in closure(requirements):
        for name in dist.files or []:
            if ".." in Path(name).parts:
                continue
            target = site / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(str(dist.locate_file(name))), target)


def source_copy(root: Path) -> Path:
    """A copy of what pip needs to build this project, in ``root/source`` (pip builds in the tree it is given:
    a copy keeps build/ and the egg-info out of the repository)."""
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(
        REPO / "src" / "prefix_exec",
        source / "src" / "prefix_exec",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    return source


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a fresh environment with a plain install of this source tree."""
    root = tmp_path_factory.mktemp("plain")
    source = source_copy(root)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    core = _pip(python, *core_dependencies())
    if core.returncode != 0:  # no index has wheels for this Python (offline): the ones installed here
        print(f"core dependencies copied from this environment: pip said {core.stderr[-500:]}", file=sys.stderr)
        (site,) = (venv / "lib").glob("python3*/site-packages")
        copy_installed(core_dependencies(), site)
    built = _pip(python, "--no-deps", str(source))  # pip builds it (setuptools from an index, as make setup)
    assert built.returncode == 0, built.stderr[-3000:]
    probe = "import importlib.util as u, json, sys; print(json.dumps([m for m in sys.argv[1:] if u.find_spec(m)]))"
    found = subprocess.run([python, "-c", probe, *OPTIONAL], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(found.stdout) == []
    return venv / "bin"


PYTHON_3_11 = shutil.which("python3.11")


@pytest.mark.parametrize(
    "pip",
    [
        # pip checks requires-python against the target it is given: this runs on any machine.
        pytest.param([sys.executable, "-m", "pip", "install", "--python-version", "3.11"], id="target-3.11"),
        # What a user types (issue 24): a real 3.11 interpreter's own pip, where one is installed.
        pytest.param(
            [PYTHON_3_11 or "python3.11", "-m", "pip", "install"],
            id="python3.11",
            marks=pytest.mark.skipif(PYTHON_3_11 is None, reason="no python3.11 on PATH"),
        ),
    ],
)
def test_pip_refuses_python_3_11(pip: list[str], tmp_path: Path) -> None:
    """methods.py and report/layout.py use 3.12 syntax: pip itself refuses 3.11, after reading the metadata and
    before installing anything (--dry-run --no-deps keep the check to this project, a few seconds)."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    env.setdefault("PIP_RETRIES", "1")
    done = subprocess.run(
        [*pip, "--dry-run", "--no-deps", str(source_copy(tmp_path))],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ERROR: Package 'prefix-exec' requires a different Python: 3.11." in done.stderr
    assert done.stderr.rstrip().endswith("not in '>=3.12'")


def prefix_exec(plain: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [str(plain / "prefix-exec"), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600
    )


def refused(done: subprocess.CompletedProcess[str], *commands: str) -> str:
    """Assert exit 2, a message without traceback that names every install command; return stderr."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("prefix-exec: error: this command needs ")
    for command in commands:
        assert command in done.stderr
    return done.stderr


def records_file(path: Path) -> Path:
    records = [
        PrefixRecord(
            "custom_demo",
            f"t{i}",
            "m",
            "react",
            0,
            2,
            3,
            i % 2,
            (Verdict.accept(), Verdict.accept()),
            (ToolCall("a", {}), ToolCall("b", {})),
        )
        for i in range(4)
    ]
    write_records(path, records)
    return path


def test_missing_extras_are_exit_2_with_the_install_command(plain: Path, tmp_path: Path, shared_data: Path) -> None:
    version = prefix_exec(plain, "--version", cwd=tmp_path)
    assert version.returncode == 0
    assert version.stdout.startswith("prefix-exec 0.")

    err = refused(prefix_exec(plain, "demo", "--out", "demo", cwd=tmp_path), BFCL, PLOT)
    assert "bfcl_eval, mpmath and matplotlib" in err
    assert not (tmp_path / "demo").exists()

    records = records_file(tmp_path / "records.jsonl")
    err = refused(prefix_exec(plain, "report", str(records), "--out", "report", cwd=tmp_path), PLOT)
    assert "--no-plots" in err
    assert not (tmp_path / "report").exists()  # no folder of tables without its report.html

    bfcl = shared_data / "bfcl" / "airev-agent-0.8b" / "BFCL_v4_multi_turn_base_result.json"
    refused(prefix_exec(plain, "score", "bfcl", str(bfcl), "--out", "bfcl.jsonl", cwd=tmp_path), BFCL)
    tau = shared_data / "tau" / "gpt-4.1_airline_1trial.json"
    refused(
        prefix_exec(plain, "score", "tau", str(tau), "--out", "tau.jsonl", cwd=tmp_path),
        "pip install 'prefix-exec[tau]'",
        "make setup",
        "tau2-bench",
    )

    done = prefix_exec(plain, "score", "inspect", str(records), "--out", "inspect.jsonl", cwd=tmp_path)
    refused(done, "this command needs inspect_ai", "pip install 'prefix-exec[inspect]'")

    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'seed = 1\nmethods = ["react"]\n[[datasets]]\nname = "ticketing"\nkind = "custom"\n'
        f'spec = "{REPO / "examples" / "ticketing" / "tools.yaml"}"\n'
        f'[[models]]\nname = "m"\nmodel = "x"\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = ""\n'
    )
    refused(prefix_exec(plain, "run", str(grid), "--out", "run", cwd=tmp_path), "pip install 'prefix-exec[llm]'")
    guard = prefix_exec(plain, "guard", "--record", "guard", "--", "true", cwd=tmp_path)
    refused(guard, "this command needs mcp", "pip install 'prefix-exec[guard]'")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.toml", "records.jsonl"]  # nothing else written


def test_what_needs_nothing_optional_works(plain: Path, tmp_path: Path, shared_data: Path) -> None:
    records = records_file(tmp_path / "records.jsonl")
    done = prefix_exec(
        plain, "report", str(records), "--out", "report", "--no-plots", "--resamples", "50", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report" / "report.html").is_file()
    done = prefix_exec(plain, "metrics", str(records), "--format", "json", "--resamples", "50", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["conditions"]
    ticketing = REPO / "examples" / "ticketing"
    done = prefix_exec(
        plain, "score", "custom", "--tools", str(ticketing / "tools.yaml"), str(ticketing / "rollouts.jsonl"),
        "--out", "ticketing.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len((tmp_path / "ticketing.jsonl").read_text().splitlines()) == 12
    done = prefix_exec(
        plain, "score", "custom", "--tools", str(ticketing / "mcp-tools-list.json"), "--hooks",
        str(ticketing / "mcp-hooks.yaml"), str(ticketing / "rollouts.jsonl"), "--out", "mcp.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "mcp.jsonl").read_text() == (tmp_path / "ticketing.jsonl").read_text()
    conversation = {
        "task_id": "t",
        "model": "m",
        "success": 1,
        "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    }
    (tmp_path / "transcripts.jsonl").write_text(json.dumps(conversation) + "\n")
    done = prefix_exec(plain, "score", "transcripts", "transcripts.jsonl", "--out", "openai.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "openai.jsonl").read_text())["executable"] is True
    (tmp_path / "labels.json").write_text('{"a": ["x"], "b": ["y"], "c": ["x"], "d": ["y"]}')
    done = prefix_exec(plain, "sample", "labels.json", "-n", "2", "--out", "chosen.txt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len((tmp_path / "chosen.txt").read_text().split()) == 2
    # ToolSandbox's results replay without ToolSandbox installed (docs/toolsandbox.md): the same records as
    # with every extra.
    run = shared_data / "toolsandbox" / "run_public"
    done = prefix_exec(plain, "score", "toolsandbox", str(run), "--out", "plain.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert main(["score", "toolsandbox", str(run), "--out", str(tmp_path / "full.jsonl")]) == 0
    plain_rows = (tmp_path / "plain.jsonl").read_text().splitlines()
    assert plain_rows == (tmp_path / "full.jsonl").read_text().splitlines()
    assert len(plain_rows) == 20
