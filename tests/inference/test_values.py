"""Where inference says values sit (paths) and which could be ids: by hand, and the identity that makes a written
``produces`` path or ``refs`` key work: every leaf found at a path is among what the environment selects there."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prefix_exec.envs.custom.session import ToolSpec, _select, referred
from prefix_exec.inference.values import (
    MAX_DEPTH,
    MAX_LEAVES,
    argument_leaves,
    idlike,
    is_field,
    key,
    leaf_name,
    result_leaves,
)

TAU2_USER = {
    "user_id": "mia_li_3668",
    "name": {"first_name": "Mia", "last_name": "Li"},
    "payment_methods": {"credit_card_4421486": {"source": "credit_card", "id": "credit_card_4421486"}},
    "reservations": ["NO6JO3", "AJVCTQ"],
}


def test_result_paths_by_hand() -> None:
    leaves = result_leaves(TAU2_USER)
    assert ("user_id", "mia_li_3668") in leaves
    assert ("name.first_name", "Mia") in leaves
    assert ("payment_methods[*].id", "credit_card_4421486") in leaves  # a key that is data reads as [*]
    assert ("reservations[*]", "NO6JO3") in leaves and ("reservations[*]", "AJVCTQ") in leaves
    assert result_leaves([[{"flight_number": "HAT1"}]]) == [("[*][*].flight_number", "HAT1")]
    assert result_leaves("yusuf_rossi_9620") == [("$", "yusuf_rossi_9620")]
    assert result_leaves(None) == []


def test_argument_paths_by_hand() -> None:
    arguments = {"item_ids": ["1", "2"], "flights": [{"flight_number": "HAT1", "date": "2024-05-01"}], "n": 2}
    assert argument_leaves(arguments) == [
        ("item_ids", "1"),
        ("item_ids", "2"),  # a list of scalars is its argument, element-wise (as refs reads it)
        ("flights[*].flight_number", "HAT1"),
        ("flights[*].date", "2024-05-01"),
        ("n", 2),
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("H9ZU1C", True),
        ("mia_li_3668", True),
        ("#W2378156", True),
        ("Mia Li", True),
        (1234567, True),
        ("2024-05-15", False),
        ("2024-05-15T10:00:00Z", False),
        ("15:00", False),
        ("5/15/2024", False),
        ("12", False),
        ("1.5", False),
        (50, False),
        (2.5, False),
        (True, False),
        (None, False),
        ("x", False),
        ("I would like to cancel my flight to Seattle", False),
        (" padded", False),
        ("a" * 129, False),
    ],
)
def test_what_could_be_an_id(value: Any, expected: bool) -> None:
    assert idlike(value) is expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [("user_id", True), ("firstName", True), ("address1", True), ("credit_card_7815826", False), ("2024", False)],
)
def test_field_names_and_data_keys(name: str, expected: bool) -> None:
    assert is_field(name) is expected
    assert is_field("Action Camera") is False


def test_keys_tell_strings_from_numbers() -> None:
    assert key("123") != key(123)
    assert key({"b": 1, "a": 2}) == key({"a": 2, "b": 1})


def test_leaf_names() -> None:
    assert leaf_name("flights[*].flight_number") == "flight_number"
    assert leaf_name("reservations[*]") == "reservations"
    assert leaf_name("$") == leaf_name("[*]") == ""


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_every_result_leaf_is_selected_at_its_path(value: Any) -> None:
    """What ``produces: {kind: PATH}`` would register holds every value inference saw at PATH."""
    for path, leaf in result_leaves(value):
        assert leaf in _select(value, path), (path, leaf)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), JSON, max_size=4))
def test_every_argument_leaf_is_referred_at_its_path(arguments: dict[str, Any]) -> None:
    """What ``refs: {PATH: kind}`` checks holds every value inference counted at PATH."""
    tool = ToolSpec("t", {}, validator=None)  # type: ignore[arg-type]
    for path, leaf in argument_leaves(arguments):
        assert leaf in [v for _, v in referred(tool, arguments, path)], (path, leaf)


def test_walks_are_bounded() -> None:
    deep: Any = "id-1"
    for _ in range(MAX_DEPTH + 10):
        deep = {"a": deep}
    assert result_leaves(deep) == []  # past the depth bound nothing is followed
    wide = {"ids": [f"x{i}" for i in range(MAX_LEAVES * 3)]}
    assert len(result_leaves(wide)) == MAX_LEAVES
    assert len(argument_leaves(wide)) == MAX_LEAVES
