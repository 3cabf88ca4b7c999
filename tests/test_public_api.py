"""``import prefix_exec``: every public name imports, is what its module defines, and is documented in
docs/architecture.md's "Public API" table with that module; the import itself loads nothing else."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import prefix_exec

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def documented() -> dict[str, str]:
    """The "Public API" section's table: name -> module."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## Public API", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `(\w+)` \| .+ \| `([\w.]+)` \|$", section, flags=re.M))


def test_all_and_the_homes_name_the_same_names() -> None:
    assert sorted(prefix_exec.__all__) == prefix_exec.__all__
    assert set(prefix_exec.__all__) == set(prefix_exec.HOMES)


@pytest.mark.parametrize("name", prefix_exec.__all__)
def test_every_public_name_imports_from_its_defining_module(name: str) -> None:
    value = getattr(prefix_exec, name)
    home = importlib.import_module(prefix_exec.HOMES[name])
    assert value is getattr(home, name)
    assert getattr(value, "__module__", home.__name__) == home.__name__  # defined there, not re-exported


def test_every_public_name_is_in_the_public_api_table_with_its_module() -> None:
    assert documented() == prefix_exec.HOMES


def test_the_import_loads_nothing_and_replay_stays_the_function() -> None:
    """In a fresh interpreter: ``import prefix_exec`` loads no other module of ours (nor typing); the function
    ``replay`` is what the package gives, also after its module ``prefix_exec.replay`` was imported."""
    code = (
        "import sys\n"
        "import prefix_exec\n"
        "print(sorted(m for m in sys.modules if m.startswith('prefix_exec')), 'typing' in sys.modules)\n"
        "import prefix_exec.replay, prefix_exec.scoring.run\n"
        "from prefix_exec import replay\n"
        "from prefix_exec.replay import replay as defined\n"
        "print(replay is defined is prefix_exec.replay)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["['prefix_exec'] False", "True"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        prefix_exec.nothing  # noqa: B018
    with pytest.raises(ImportError):
        from prefix_exec import nothing  # noqa: F401


def test_the_readme_library_example_runs() -> None:
    from prefix_exec import load_spec, read_rollouts, replay

    root = ARCHITECTURE.parents[1]
    env = load_spec(root / "examples" / "ticketing" / "tools.yaml")
    records = [replay(r, env) for r in read_rollouts(root / "examples" / "ticketing" / "rollouts.jsonl")]
    assert records and all(r.T >= 1 for r in records)
