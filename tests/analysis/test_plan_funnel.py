"""Where dual-loop's plans went before the executor, on the recorded real-model run (tests/data/real-model)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prefix_exec.analysis.plan_funnel import PlanFunnel, funnel_lines, funnel_of, funnel_rows
from prefix_exec.cli.run import plan_lines

REAL = Path(__file__).parents[1] / "data" / "real-model"


def real_rows() -> list[tuple[str, str, dict[str, object]]]:
    rows = [json.loads(line) for line in (REAL / "records.jsonl").read_text().splitlines()]
    return [(row["method"], row["task_id"], row.get("metadata", {})) for row in rows]


def test_the_real_models_plans_all_failed_the_structure_check() -> None:
    """Every plan of the 0.5B model was refused by the structure check: its verifier never ran."""
    rows = funnel_rows(real_rows())
    assert [(m, t) for m, t, _ in rows] == [
        ("dual-loop", "close-printer"),
        ("dual-loop", "multi_turn_base_100"),
        ("dual-loop", "new-laptop"),
        ("dual-loop", "all"),
    ]
    bfcl = rows[1][2]
    assert bfcl == PlanFunnel(turns=2, proposed=4, structure=4, verifier=0, unreadable=0, revised=2, accepted=0)
    assert rows[-1][2] == PlanFunnel(turns=4, proposed=8, structure=8, revised=4)
    assert funnel_lines(rows[1:2]) == [
        "  dual-loop multi_turn_base_100: 4 plans for 2 turns: 4 refused by the structure check (the verifier "
        "never ran), 0 by the verifier, 2 revisions, 0 accepted"
    ]


def test_rounds_split_into_structure_verifier_and_approval() -> None:
    """Two turns of k_val 3: a bad plan, a rejected one, an approved one; then a verifier answer that was no
    verdict (re-asked) and an approval."""
    funnel = funnel_of(
        {
            "plans": 4,
            "plan_parse_errors": 1,
            "verifier_parse_errors": 1,
            "verification_rounds": [3, 2],
            "plan_approved": [True, True],
            "planned_turns": [0, 1],
        }
    )
    assert funnel == PlanFunnel(turns=2, proposed=4, structure=1, verifier=1, unreadable=1, revised=2, accepted=2)
    assert funnel is not None and "never ran" not in funnel.describe()


def test_react_plans_nothing() -> None:
    assert funnel_of({"method": "react", "turns": 2}) is None
    assert funnel_rows([("react", "t", {"turns": 1})]) == []


def test_run_prints_the_funnel_from_its_records(tmp_path: Path) -> None:
    shutil.copy(REAL / "records.jsonl", tmp_path / "records.jsonl")
    lines = plan_lines(tmp_path)
    assert lines[0] == "prefix-exec: plans before the executor:"
    assert len(lines) == 5 and "the verifier never ran" in lines[-1]
    assert plan_lines(tmp_path / "missing") == []


@pytest.mark.parametrize(
    ("funnel", "headline"),
    [
        (
            PlanFunnel(turns=2, proposed=4, structure=4, revised=2),
            "every plan refused by the structure check: the verifier never ran",
        ),
        (PlanFunnel(turns=2, proposed=2), "no verifier: the plans went to the executor unchecked"),
        (
            PlanFunnel(turns=2, proposed=2, structure=1),
            "no verifier: the plans went to the executor unchecked (1 refused by the structure check, given as raw "
            "text)",
        ),
        (PlanFunnel(turns=2, proposed=4, verifier=2, revised=2, accepted=2), "every turn's plan accepted"),
        (PlanFunnel(turns=2, proposed=4, verifier=4, revised=2), "no plan accepted"),
        (PlanFunnel(turns=2, proposed=3, verifier=1, revised=1, accepted=1), "plans accepted in 1 of 2 turns"),
        (PlanFunnel(), "no plan proposed"),
    ],
)
def test_the_headline_says_where_the_plans_stopped(funnel: PlanFunnel, headline: str) -> None:
    assert funnel.headline() == headline
