"""scripts/sweep_launchers.py's comparison of the hostile sweep's digest files (one per launcher)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "sweep_launchers.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sweep_launchers", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sweep = _load()


def test_differences_names_each_case_whose_digests_differ_among_the_common_ones() -> None:
    digests = {
        "1": {"a": "x" * 64, "b": "-", "c": "y" * 64, "only-1": "z"},
        "2": {"a": "x" * 64, "b": "-", "c": "w" * 64},
        "ray": {"a": "x" * 64, "b": "v" * 64, "c": "y" * 64},
    }
    count, found = sweep.differences(digests)
    assert count == 3
    assert found == [f"b: 1=- 2=- ray={'v' * 12}", f"c: 1={'y' * 12} 2={'w' * 12} ray={'y' * 12}"]
    assert sweep.differences({"1": {"a": "-"}, "2": {"a": "-"}}) == (1, [])


def test_compare_exits_1_on_a_difference_or_nothing_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = []
    for name, table in {"1": {"a": "-", "b": "x"}, "2": {"a": "-", "b": "x"}, "ray": {"a": "-", "b": "y"}}.items():
        files.append(tmp_path / f"digests-{name}.json")
        files[-1].write_text(json.dumps(table), encoding="utf-8")
    assert sweep.main(["--compare", *map(str, files[:2])]) == 0
    assert "2 cases compared across 1, 2: 0 differ" in capsys.readouterr().out
    assert sweep.main(["--compare", *map(str, files)]) == 1
    assert "b: 1=x 2=x ray=y" in capsys.readouterr().out
    (tmp_path / "digests-empty.json").write_text("{}", encoding="utf-8")
    assert sweep.main(["--compare", str(files[0]), str(tmp_path / "digests-empty.json")]) == 1
