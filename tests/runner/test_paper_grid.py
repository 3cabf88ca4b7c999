"""examples/paper-grid.toml parses and expands to the paper's grid."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from prefix_exec.runner import load_grid

GRID = Path(__file__).resolve().parents[2] / "examples" / "paper-grid.toml"


def test_the_paper_grid_has_the_papers_units(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefix_exec.runner.run_dir import plan_units

    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    monkeypatch.delenv("RAPID_API_KEY", raising=False)
    grid = load_grid(GRID)
    assert [m.name for m in grid.models if m.condition] == ["MODEL_A", "MODEL_B", "MODEL_C"]
    assert len(grid.methods) == 4
    assert grid.agent.k_val == 3
    assert grid.agent.max_steps == 20
    units = plan_units(grid)
    tasks = Counter(u.dataset for u in units if u.model == "MODEL_A" and u.method == "react")
    assert tasks == Counter({"bfcl": 200, "toolsandbox": 200, "tau3": 164})
    tau3 = [u.task_id for u in units if u.dataset == "tau3" and u.model == "MODEL_A" and u.method == "react"]
    assert len(set(tau3)) == 164  # the colliding ids ("18" of both domains) are distinct tasks
    assert Counter(t.split("/")[0] for t in tau3) == Counter({"airline": 50, "retail": 114})
    assert {"airline/18", "retail/18"} <= set(tau3)
    assert len(units) == (200 + 200 + 50 + 114) * 3 * 4 == 6768
