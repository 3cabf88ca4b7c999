"""The one argument decoder every importer uses: JSON text or an object in, (arguments, parse_error) out."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prefix_exec.importers.arguments import MAX_ARGUMENT_CHARS, decode_arguments

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
objects = st.dictionaries(st.text(max_size=5), json_values, max_size=4)


@given(objects)
def test_an_object_and_its_json_text_decode_to_the_same_arguments(value: dict[str, Any]) -> None:
    assert decode_arguments(value) == (value, None)
    assert decode_arguments(json.dumps(value)) == (value, None)


@given(json_values.filter(lambda v: not isinstance(v, dict) and v is not None))
def test_json_that_is_not_an_object_is_a_parse_error_never_empty_arguments(value: Any) -> None:
    """``[1, 2]``, ``3``, ``"x"``, ``true`` as text or as a value (a string value is text, so JSON text only):
    the model's error, a schema failure."""
    for given_as in (json.dumps(value),) if isinstance(value, str) else (value, json.dumps(value)):
        arguments, error = decode_arguments(given_as)
        assert arguments == {}
        assert error == f"arguments must be a JSON object, got {type(value).__name__}"


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ('{"x": ', "arguments are not JSON: Expecting value at column 7"),
        ("{'x': 1}", "arguments are not JSON: Expecting property name enclosed in double quotes at column 2"),
        ('"{\\"location\\": \\"current\\"}"', "arguments must be a JSON object, got str"),  # encoded twice
        ("[" * 5000 + "]" * 5000, "arguments are not JSON: nested too deeply"),
        (
            "9" * 5000,
            "arguments are not JSON: Exceeds the limit (4300 digits) for integer string conversion: "
            "value has 5000 digits",
        ),
        ("x" * (MAX_ARGUMENT_CHARS + 1), f"arguments are longer than {MAX_ARGUMENT_CHARS:,} characters"),
        ({1: "a"}, "arguments must be a JSON object, got keys that are not strings"),
        (("a", "b"), "arguments must be a JSON object, got tuple"),
    ],
)
def test_undecodable_arguments_say_why(value: Any, error: str) -> None:
    assert decode_arguments(value) == ({}, error)


@pytest.mark.parametrize("value", [None, "", "  \n", "{}", {}])
def test_no_arguments_are_an_empty_object(value: Any) -> None:
    assert decode_arguments(value) == ({}, None)


def test_the_result_is_a_copy() -> None:
    given_object = {"a": 1}
    arguments, _ = decode_arguments(given_object)
    arguments["b"] = 2
    assert given_object == {"a": 1}
