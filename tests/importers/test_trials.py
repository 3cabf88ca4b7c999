"""Trial numbers (prefix_exec.importers.trials): where a trial is read from (distinct trials for repeated tasks:
tests/scoring/test_numbering.py)."""

from __future__ import annotations

from typing import Any

import pytest

from prefix_exec.importers.trials import TrialError, TrialRule, lookup


@pytest.mark.parametrize(
    ("source", "unit", "expected"),
    [
        (TrialRule(), {"trial": 3}, 3),
        (TrialRule(), {"id": 1}, None),  # the input names none
        (TrialRule(), {"trial": None}, None),
        (TrialRule(fixed=7), {"trial": 3}, 7),  # --trial wins over the input's own
        (TrialRule(field="meta.runs.1"), {"trial": 3, "meta": {"runs": [5, 6]}}, 6),
        (TrialRule(field="meta.run"), {"trial": 3, "meta": {"run": 0}}, 0),
    ],
)
def test_a_trial_comes_from_the_option_then_the_input(source: TrialRule, unit: Any, expected: int | None) -> None:
    assert source.read(unit) == expected


def test_other_own_fields_and_none() -> None:
    assert TrialRule().read({"metadata": {"trial": 2}}, own=("trial", "metadata.trial")) == 2
    assert TrialRule().read({"trial": 2}, own=()) is None  # a format without a trial field


@pytest.mark.parametrize(
    ("source", "unit", "message"),
    [
        (TrialRule(field="meta.run"), {"trial": 3}, "field 'meta.run': missing"),
        (TrialRule(field="run"), {"run": None}, "field 'run': missing"),
        (TrialRule(), {"trial": -1}, "field 'trial': a trial must be an integer >= 0, got -1"),
        (TrialRule(), {"trial": True}, "got True"),
        (TrialRule(), {"trial": "3"}, "got '3'"),
        (TrialRule(field="r"), {"r": 1.5}, "got 1.5"),
    ],
)
def test_a_trial_that_cannot_be_read_is_an_error_naming_the_field(source: TrialRule, unit: Any, message: str) -> None:
    with pytest.raises(TrialError) as info:
        source.read(unit)
    assert message in str(info.value)
    error = info.value.input_error(path="f.jsonl", line=4, prefix="[2].")
    assert error.describe().startswith(f"f.jsonl:4: field '[2].{info.value.field}'")
    assert error.hint


def test_lookup_walks_objects_and_list_indexes() -> None:
    data = {"a": [{"b": 1}], "c": None}
    assert lookup(data, "a.0.b") == (True, 1)
    assert lookup(data, "c") == (True, None)
    assert lookup(data, "a.1.b") == (False, None)
    assert lookup(data, "a.x") == (False, None)
    assert lookup([1], "0") == (True, 1)


def test_a_path_part_that_only_looks_like_a_digit_is_no_index() -> None:
    # '²' is a digit to str.isdigit but no int: a user's --trial-field / --task-id-field is not a traceback
    assert lookup({"runs": [1, 2]}, "runs.²") == (False, None)
    assert lookup({"runs": [1, 2]}, "runs.\u0661") == (True, 2)  # ARABIC-INDIC DIGIT ONE is a decimal digit
