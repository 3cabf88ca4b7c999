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


def test_the_import_loads_nothing_of_ours_and_replay_stays_a_module() -> None:
    """In a fresh interpreter: ``import prefix_exec`` loads no other module of ours; ``prefix_exec.replay`` is the
    module (so ``import prefix_exec.replay as m`` and patching ``prefix_exec.replay.replay_session`` work)."""
    code = (
        "import inspect, sys\n"
        "import prefix_exec\n"
        "print(sorted(m for m in sys.modules if m.startswith('prefix_exec')))\n"
        "import prefix_exec.replay as module\n"
        "from prefix_exec.replay import replay, replay_session\n"
        "print(inspect.ismodule(module), module is prefix_exec.replay, module.replay_session is replay_session)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["['prefix_exec']", "True True True"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        prefix_exec.nothing  # noqa: B018
    with pytest.raises(ImportError):
        from prefix_exec import nothing  # noqa: F401


def test_the_readme_library_example_runs() -> None:
    """README's "Library" block, as written, run from the repository's root: it scores the ticketing example."""
    root = ARCHITECTURE.parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Library", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    code = block + "assert records and all(r.T >= 1 for r in records)\nprint(len(records))\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "12"
