"""Which files may run code (issue 29 items 7 and 8): only a YAML spec of our form or a ``--hooks`` side file the
user names loads a hooks module; a JSON file shaped like a tool list never does. A hooks module that fails to
load (syntax error, ``SystemExit``, an exception) or a hook that calls ``sys.exit`` is an input error naming the
file, never exit 0 or a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from prefix_exec.cli import main
from prefix_exec.envs.custom.environment import load_spec
from prefix_exec.errors import InputError

TICKETING = Path(__file__).resolve().parents[2] / "examples" / "ticketing"
TOOL = {"name": "login", "parameters": {"type": "object"}}


def canary(folder: Path, body: str = "") -> tuple[Path, Path]:
    """A hooks module that creates ``marker`` when it is imported (then runs ``body``)."""
    marker = folder / "ran.marker"
    module = folder / "canary_hooks.py"
    module.write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n{body}\n", encoding="utf-8")
    return module, marker


def score(tools: Path, out: Path, *extra: str) -> int:
    argv = ["score", "custom", "--tools", str(tools), str(TICKETING / "rollouts.jsonl"), "--out", str(out), *extra]
    return main([*argv, "--keep-going"])


@pytest.mark.parametrize(
    "document",
    [
        {"tools": [TOOL]},  # our spec's shape
        {"tools": [{"type": "function", "function": TOOL}]},  # an OpenAI tools array in an object
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "login", "inputSchema": {"type": "object"}}]}},
    ],
    ids=["spec-shaped", "openai", "mcp"],
)
def test_a_json_tool_list_naming_hooks_never_imports_them(
    document: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module, marker = canary(tmp_path)
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({**document, "hooks": str(module)}), encoding="utf-8")
    code = score(tools, tmp_path / "out.jsonl")
    err = capsys.readouterr().err
    assert not marker.exists(), "a JSON tool list ran the module it names"
    assert "Traceback" not in err
    if "tools" in document and document["tools"] == [TOOL]:  # read as our spec: refused, naming the rule
        assert code == 2
        assert "names a hooks module; only a YAML spec (.yaml/.yml) may" in err
        assert "field 'hooks'" in err


def test_a_yaml_spec_and_a_hooks_side_file_are_trusted_code(tmp_path: Path) -> None:
    module, marker = canary(tmp_path, "def check(state, args):\n    return None\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"hooks": str(module), "tools": [{**TOOL, "precondition": "check"}]}))
    assert load_spec(spec).tools["login"].precondition is not None
    assert marker.exists()
    marker.unlink()
    side = tmp_path / "side.json"  # a side file the user names with --hooks may be JSON
    side.write_text(json.dumps({"hooks": str(module), "tools": {"login": {"precondition": "check"}}}))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": TOOL}]))
    assert load_spec(tools, hooks=side).tools["login"].precondition is not None
    assert marker.exists()


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        ("raise SystemExit(0)", "raised SystemExit while loading", 3),
        ("import sys\nsys.exit(3)", "raised SystemExit while loading: 3", 4),
        ("def broken(:\n    pass", "is not valid Python: invalid syntax", 3),
        ("1 / 0", "raised ZeroDivisionError while loading: division by zero", 3),
    ],
    ids=["system-exit", "sys-exit", "syntax-error", "raises"],
)
def test_a_hooks_module_that_fails_to_load_is_exit_2_naming_file_and_line(
    body: str, message: str, line: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module, _ = canary(tmp_path, body)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"hooks": module.name, "tools": [TOOL]}))
    with pytest.raises(InputError) as info:
        load_spec(spec)
    assert message in info.value.message
    assert (Path(str(info.value.path)), info.value.line) == (module, line)
    out = tmp_path / "out.jsonl"
    assert score(spec, out) == 2
    err = capsys.readouterr().err
    assert f"{module}:{line}: " in err
    assert "Traceback" not in err
    assert not out.exists()


def test_a_hook_that_calls_sys_exit_is_that_rollouts_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load((TICKETING / "tools.yaml").read_text(encoding="utf-8"))
    hooks = tmp_path / "hooks.py"
    hooks.write_text(
        (TICKETING / "hooks.py").read_text(encoding="utf-8")
        + "\n\ndef require_login(state, args):\n    raise SystemExit(0)\n",
        encoding="utf-8",
    )
    data["hooks"] = str(hooks)
    spec = tmp_path / "tools.yaml"
    spec.write_text(yaml.safe_dump(data), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert score(spec, out) == 2
    err = capsys.readouterr().err
    assert "hook 'require_login'" in err and "raised SystemExit" in err
    assert "Traceback" not in err
