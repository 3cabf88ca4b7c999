"""scripts/infer_eval.py, issue 41's evaluation: its parts by hand (where a mutation goes, a made-up value of the
same shape found nowhere in the conversation), and its figures on tau-bench's published airline file, as
docs/custom.md ("Inferring a side file", "On real files") reports them, with its fixed seed."""

from __future__ import annotations

import importlib.util
import random
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("infer_eval", ROOT / "scripts" / "infer_eval.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["infer_eval"] = module
    spec.loader.exec_module(module)
    return module


def test_slots_at_a_path() -> None:
    arguments = {"flights": [{"flight_number": "A1"}, {"flight_number": "B2"}], "item_ids": ["x", "y"], "n": "z"}
    found = script().slots_at(arguments, "flights[*].flight_number")
    assert [c[k] for c, k in found] == ["A1", "B2"]
    assert [c[k] for c, k in script().slots_at(arguments, "item_ids")] == ["x", "y"]
    assert [c[k] for c, k in script().slots_at(arguments, "n")] == ["z"]
    assert script().slots_at(arguments, "missing[*].x") == []


def test_a_made_up_value_has_the_shape_and_is_nowhere() -> None:
    rng = random.Random(0)
    fake = script().made_up("credit_card_7815826", "credit_card_7815826 and more", rng)
    assert re.fullmatch(r"[a-z]{6}_[a-z]{4}_\d{7}", fake) and fake != "credit_card_7815826"
    assert script().made_up(12345, "", rng) != 12345 and isinstance(script().made_up(12345, "", rng), int)
    assert script().made_up("aa", "".join(f"{a}{b}" for a in "abcdefghijklmnopqrstuvwxyz" for b in "ab"), rng)


@pytest.mark.slow
def test_the_documented_figures_on_tau_bench(tmp_path: Path) -> None:
    evaluation = script()
    corpus = evaluation.corpora(type("Args", (), {"memory": None})(), tmp_path)["tau-bench-airline"]
    figures = evaluation.evaluate(corpus, tmp_path, seed=0)
    documented = (ROOT / "docs" / "custom.md").read_text(encoding="utf-8")
    assert evaluation.row(figures) in documented, evaluation.row(figures)
    assert figures.false_positive == [] and figures.caught / figures.mutated > 0.9
