"""Call decoding (literals only), the error-label table, soft results, doc-type binding, the stratified-200 sample."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("bfcl_eval")

from prefix_exec.envs.bfcl.binding import binding_problems
from prefix_exec.envs.bfcl.calls import CallSyntaxError, ParsedCall, bind_positional, parse_call, parse_call_list
from prefix_exec.envs.bfcl.labels import ERROR_TABLE, error_of, label_error, soft_signals
from prefix_exec.envs.bfcl.sample import draw, sample_name, stratified_200
from prefix_exec.envs.bfcl.tasks import CATEGORIES, data_dir, function_docs
from prefix_exec.trajectory import FailureLabel

literals = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@given(literals)
def test_any_literal_round_trips_through_repr(value: object) -> None:
    parsed = parse_call(f"f(x={value!r})")
    assert parsed == ParsedCall("f", (), {"x": value})


def test_positional_and_keyword_calls() -> None:
    assert parse_call("sort('a.txt')") == ParsedCall("sort", ("a.txt",), {})
    assert parse_call("f(-1, b=[1, (2, 3)], c={'k': -2.5})") == ParsedCall(
        "f", (-1,), {"b": [1, [2, 3]], "c": {"k": -2.5}}
    )
    assert bind_positional(parse_call("sort('a.txt')"), lambda name: ("file_name",)) == {"file_name": "a.txt"}
    with pytest.raises(CallSyntaxError, match="given twice"):
        bind_positional(parse_call("sort('a', file_name='b')"), lambda name: ("file_name",))
    with pytest.raises(CallSyntaxError, match="unknown function"):
        bind_positional(parse_call("nope(1)"), lambda name: None)
    assert [c.name for c in parse_call_list("`[a(), b(x=1)]`")] == ["a", "b"]


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("os.system('x')", "plain name, found attribute access"),
        ("__import__('os')", "dunder"),
        ("f(x=g())", "nested call"),
        ("f(x=lambda: 1)", "lambda"),
        ("f(x=[i for i in y])", "comprehension"),
        ("f(x=1 + 2)", "operator"),
        ("f(x=y)", "variable name"),
        ("f(*a)", "starred"),
        ("f(**a)", "expansion"),
        ("f(x=b'1')", "unsupported constant"),
        ("f(x=1j)", "unsupported constant"),
        ("f(x=...)", "unsupported constant"),
        ("f(x={1, 2})", "a set"),
        ("f(x={**a})", "a \\*\\* expansion inside a dict"),
        ("f(x={[1]: 2})", "a list used as a dict key"),
        ("f(x={{1: 2}: 3})", "a dict used as a dict key"),  # once a TypeError that escaped the importer
        ("f(", "not valid call syntax"),
        ("f(x=" + "[" * 5000 + "]" * 5000 + ")", "not valid call syntax"),
        ("f(x=" + "9" * 5000 + ")", "not valid call syntax"),
    ],
)
def test_non_literal_calls_are_refused(source: str, reason: str) -> None:
    with pytest.raises(CallSyntaxError, match=reason):
        parse_call(source)


def _bfcl_error_messages() -> set[str]:
    """The literal "error" strings in BFCL's backend sources (f-string fields stripped)."""
    import bfcl_eval.eval_checker.multi_turn_eval.func_source_code as package

    messages = set()
    for path in Path(package.__path__[0]).glob("*.py"):
        if path.stem.startswith(("memory", "web_search", "long_context")):
            continue
        for match in re.finditer(r'"error":\s*f?"([^"]+)"', path.read_text(encoding="utf-8")):
            messages.add(re.sub(r"\{[^}]*\}", "X", match.group(1)))
    return messages


def test_every_bfcl_error_message_is_classified() -> None:
    messages = _bfcl_error_messages()
    assert len(messages) > 60
    unclassified = sorted(m for m in messages if not label_error(m)[2])
    assert unclassified == []


@pytest.mark.parametrize(
    ("message", "label"),
    [
        ("User not authenticated. Please authenticate before posting.", FailureLabel.PRECONDITION),
        ("Start the engine before activating the cruise control.", FailureLabel.PRECONDITION),
        ("Market is closed. Transactions are not allowed.", FailureLabel.PRECONDITION),
        ("Token expired", FailureLabel.PRECONDITION),
        ("Insufficient funds", FailureLabel.PRECONDITION),
        ("cat: 'x': No such file or directory", FailureLabel.DEPENDENCY),
        ("Ticket with ID 7 not found.", FailureLabel.DEPENDENCY),
        ("Invalid stock symbol: ZZZ", FailureLabel.DEPENDENCY),
        ("mkdir: cannot create directory 'a': File exists", FailureLabel.STATE_CONSISTENCY),
        ("User name 'bob' already exists.", FailureLabel.STATE_CONSISTENCY),
        ("Ticket with ID 1 is already closed.", FailureLabel.STATE_CONSISTENCY),
        ("Card already registered", FailureLabel.STATE_CONSISTENCY),
        ("Invalid priority. Priority must be between 1 and 5.", FailureLabel.SCHEMA),
        ("Fuel tank is empty. Min fuel level is 0 gallons.", FailureLabel.SCHEMA),
        ("Fuel tank is empty.", FailureLabel.PRECONDITION),
        ("Cannot divide by zero", FailureLabel.SCHEMA),
    ],
)
def test_error_table_rows(message: str, label: FailureLabel) -> None:
    assert label_error(message)[0] is label


def test_exceptions_and_fallback() -> None:
    assert label_error("'card_9'", "KeyError")[0] is FailureLabel.DEPENDENCY
    assert label_error("unsupported operand", "TypeError")[0] is FailureLabel.SCHEMA
    assert label_error("404") == (FailureLabel.PRECONDITION, "unclassified backend error", False)
    assert [row[1] for row in ERROR_TABLE] == sorted(row[1] for row in ERROR_TABLE)  # tie-break order


def test_error_shapes_and_soft_results() -> None:
    assert error_of({"booking_status": False, "error": "Card not registered"}) == "Card not registered"
    assert error_of([{"error": "User not authenticated."}]) == "User not authenticated."
    assert error_of(["Error: User not authenticated. Please log in."]) == "User not authenticated. Please log in."
    assert error_of({"result": 1}) is None
    assert error_of(["AAPL"]) is None
    assert soft_signals({"verification_status": False}) == ("soft: verification_status=False",)
    assert soft_signals({"retweet_status": "Already retweeted"}) == ("soft: retweet_status='Already retweeted'",)
    assert soft_signals({"verification_status": True}) == ()


def test_binding_to_doc_types() -> None:
    doc = function_docs("MathAPI")["mean"]
    assert binding_problems("mean", {"numbers": [1, 2.5]}, doc) == []
    assert binding_problems("mean", {"numbers": [1, "2"]}, doc) == [
        "mean: argument 'numbers'[1]: expected float, got str"
    ]
    assert binding_problems("mean", {"numbers": True}, doc) == ["mean: argument 'numbers': expected array, got boolean"]
    tail = function_docs("GorillaFileSystem")["tail"]
    assert binding_problems("tail", {"file_name": "a", "lines": 2.5}, tail) == [
        "tail: argument 'lines': expected integer, got float"
    ]
    assert binding_problems("tail", {"file_name": "a", "lines": None}, tail) == []  # None for an optional one
    assert binding_problems("tail", {"lines": 1, "x": 2}, tail) == [
        "tail: unknown argument 'x'",
        "tail: missing required argument 'file_name'",
    ]


def test_stratified_200_is_the_seeded_4_by_50_draw() -> None:
    assert sample_name("stratified-200") == "stratified-200"
    for other in ("paper", "other"):  # 'paper' was its old name
        with pytest.raises(KeyError):
            sample_name(other)
    ids = stratified_200()
    assert ids == draw()
    assert len(ids) == len(set(ids)) == 200
    for category in CATEGORIES:
        assert sum(i.startswith(f"multi_turn_{category}_") for i in ids) == 50
    assert draw(seed=1) != ids
    shipped = json.loads(
        (Path(__file__).resolve().parents[2] / "src/prefix_exec/data/bfcl_stratified_200.json").read_text()
    )
    assert shipped["task_ids"] == ids
    assert data_dir().is_dir()
