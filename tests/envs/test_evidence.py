"""envs.custom.evidence: the classifier's table (every rule and the default), what a recorded refusal is under a
policy, the recorded result as a JSON value, and the generic consistency comparison."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prefix_exec.envs.custom import evidence
from prefix_exec.envs.custom.evidence import (
    DEFAULT_LABEL,
    DEFAULT_POLICY,
    DEFAULT_RULE,
    RULES,
    TEXT_CHARS,
    EvidencePolicy,
    classify,
    recorded_value,
    refusal,
)
from prefix_exec.trajectory import FailureLabel, Observation, PrefixRecord, ToolCall, Verdict

S, D, P, C = (
    FailureLabel.SCHEMA,
    FailureLabel.DEPENDENCY,
    FailureLabel.PRECONDITION,
    FailureLabel.STATE_CONSISTENCY,
)

#: (error type, error text, label, rule): at least one row per rule of the table, and the default.
TABLE = [
    # error types (the text says nothing a text rule knows)
    ("ValidationError", "bad", S, "argument error type"),
    ("pydantic_core._pydantic_core.ValidationError", "x", S, "argument error type"),
    ("parsing", "x", S, "argument error type"),  # inspect's ToolCallError type
    ("TypeError", "x", S, "argument error type"),
    ("json.decoder.JSONDecodeError", "x", S, "argument error type"),
    ("InvalidParams", "x", S, "argument error type"),
    ("FileNotFoundError", "x", D, "not-found error type"),
    ("file_not_found", "x", D, "not-found error type"),  # inspect's
    ("KeyError", "'N-9'", D, "not-found error type"),
    ("DoesNotExist", "x", D, "not-found error type"),
    ("PermissionError", "x", P, "permission error type"),
    ("permission", "x", P, "permission error type"),  # inspect's
    ("approval", "x", P, "permission error type"),  # inspect's: the approver refused the call
    ("AuthenticationError", "x", P, "permission error type"),
    ("FileExistsError", "x", C, "conflict error type"),
    ("DuplicateError", "x", C, "conflict error type"),
    ("ConflictError", "x", C, "conflict error type"),
    # the type decides before the text
    ("KeyError", "already there", D, "not-found error type"),
    # texts
    (None, "Unknown action cancel_everything", S, "unknown tool"),  # tau-bench's unknown tool
    (None, "Tool 'fly' not found.", S, "unknown tool"),  # tau2's unknown tool
    (None, "Error: no such function frobnicate", S, "unknown tool"),
    (None, "1 validation error for CreateNote", S, "validation error"),
    (None, "Error: 2 validation errors for Payment", S, "validation error"),  # tau2's retail
    (None, "argument does not match the schema", S, "validation error"),
    (None, "execute() missing 1 required positional argument: 'text'", S, "missing argument"),
    (None, "'title' is a required property", S, "missing argument"),
    (None, "Error: missing required parameter note_id", S, "missing argument"),
    (None, "got an unexpected keyword argument 'colour'", S, "unexpected argument"),
    (None, "unknown parameter: limit", S, "unexpected argument"),
    (None, "Invalid argument: count must be positive", S, "invalid argument"),
    (None, "Error: invalid JSON in arguments", S, "invalid argument"),
    (None, "could not parse the date", S, "invalid argument"),
    # AgentDojo's date arguments (datetime.strptime's words)
    (None, "ValueError: time data '2024-05-26 10:00 AM' does not match format '%Y-%m-%d %H:%M'", S, "format"),
    (None, "ValueError: unconverted data remains: :00", S, "format"),
    (None, "Error: wrong date format, use YYYY-MM-DD", S, "format"),
    (None, "invalid literal for int() with base 10: 'ten'", S, "format"),
    (None, "Error: user not found", D, "not found"),  # tau-bench
    # an empty search: what was asked for does not exist (AgentDojo's workspace suite)
    (None, "ValueError: No emails found. Try with a different query.", D, "nothing found"),
    (None, "ValueError: No events found", D, "nothing found"),
    (None, "no record for passenger P-3", D, "nothing found"),
    (None, "No matching files", D, "nothing found"),
    (None, "ValueError: No travel service status is available for 'lost property'.", D, "nothing found"),
    (None, "ValueError: No account_recovery_assistance record matches the supplied process_id.", D, "nothing found"),
    (None, "note N-9 not found", D, "not found"),
    (None, "Error: unknown ticket id T-9", D, "unknown id"),
    (None, "invalid order_id", D, "unknown id"),
    (None, "The file does not exist", D, "does not exist"),
    (None, "reservation doesn't exist", D, "does not exist"),
    (None, "no such reservation", D, "does not exist"),
    (None, "Permission to write was refused", P, "permission"),
    (None, "403 Forbidden", P, "permission"),
    (None, "Access denied", P, "permission"),
    (None, "this operation is not allowed for basic members", P, "not allowed"),
    (None, "changes are not permitted after check-in", P, "not allowed"),
    (None, "you must log in first", P, "must first"),
    (None, "The agent must verify the user's identity first", P, "must first"),
    (None, "no agent is logged in", DEFAULT_LABEL, DEFAULT_RULE),  # "logged in" alone is not a rule
    (None, "user is not logged in", P, "must first"),
    (None, "this action requires a confirmed booking", P, "requires"),
    (None, "Error: the reservation is already cancelled", C, "already"),
    (None, "Conflict: the record changed", C, "conflict"),
    (None, "duplicate booking", C, "duplicate"),
    (None, "the quote is no longer valid", C, "no longer"),
    # anything else: the stated default
    (None, "Error: not enough seats on flight HAT001", DEFAULT_LABEL, DEFAULT_RULE),
    (None, "Error: non-pending order cannot be modified", DEFAULT_LABEL, DEFAULT_RULE),
    ("timeout", "Command timed out before completing.", DEFAULT_LABEL, DEFAULT_RULE),  # inspect's
    ("unknown", "", DEFAULT_LABEL, DEFAULT_RULE),
    (None, "", DEFAULT_LABEL, DEFAULT_RULE),
]


@pytest.mark.parametrize(("error_type", "text", "label", "rule"), TABLE)
def test_the_classifier_table(error_type: str | None, text: str, label: FailureLabel, rule: str) -> None:
    assert classify(error_type, text) == evidence.Classification(label, rule)


def test_every_rule_is_exercised_and_the_default_is_precondition() -> None:
    assert {row[3] for row in TABLE} == {rule.name for rule in RULES} | {DEFAULT_RULE}
    assert DEFAULT_LABEL is FailureLabel.PRECONDITION
    assert len({rule.name for rule in RULES}) == len(RULES)


def test_text_rules_are_case_insensitive_and_whole_words() -> None:
    assert classify(None, "USER NOT FOUND").label is D
    assert classify(None, "notfound").rule == DEFAULT_RULE  # no word boundary, no rule
    assert classify(None, "nothing was found here").rule == DEFAULT_RULE


@given(st.text(max_size=200), st.one_of(st.none(), st.text(max_size=40)))
def test_classify_always_gives_a_label_and_a_named_rule(text: str, error_type: str | None) -> None:
    found = classify(error_type, text)
    assert found.rule in {rule.name for rule in RULES} | {DEFAULT_RULE}
    assert isinstance(found.label, FailureLabel)
    assert found.label is not FailureLabel.INFORMATION


# ---------------------------------------------------------------------------------------------- refusal


@pytest.mark.parametrize(
    ("observation", "by"),
    [
        (Observation("user not found", error=True), "flag"),
        (Observation(None, error=True), "flag"),
        (Observation("Error: user not found"), "pattern"),
        (Observation("  Error: leading blanks"), "pattern"),
        (Observation("Error"), "pattern"),
    ],
)
def test_refusals(observation: Observation, by: str) -> None:
    found = refusal(observation)
    assert found is not None
    assert found.by == by


@pytest.mark.parametrize(
    "observation",
    [
        None,
        Observation('{"note_id": "N-1"}'),
        Observation("Error: user not found", error=False),  # the log's flag says it succeeded: the flag decides
        Observation("error: lower case"),
        Observation("Errors: 0"),
        Observation("ErrorCode 0"),
        Observation("No Error here"),
        Observation({"error": "a JSON object is not text that begins with Error"}),
        Observation(["Error: in a list"]),
        Observation(None),
    ],
)
def test_not_refusals_under_the_default_pattern(observation: Observation | None) -> None:
    assert refusal(observation) is None


def test_the_pattern_and_its_absence() -> None:
    no_pattern = EvidencePolicy(error_pattern=None)
    assert refusal(Observation("Error: x"), no_pattern) is None
    assert refusal(Observation("x", error=True), no_pattern) is not None  # flags always count
    custom = EvidencePolicy(error_pattern=re.compile(r'"error":'))
    found = refusal(Observation({"error": "ticket T-9 not found"}), custom)
    assert found is not None
    assert (found.by, found.label) == ("pattern", D)
    assert refusal(Observation("Error: x"), custom) is None
    assert DEFAULT_POLICY.error_pattern is not None
    assert DEFAULT_POLICY.error_pattern.pattern == r"\A\s*(?:Error\b|[\w.]*(?:Error|Exception)\b:)"


@pytest.mark.parametrize(
    ("text", "is_refusal"),
    [
        ("Error: user not found", True),
        ("  ValueError: Channel does not exist!", True),
        ("pydantic_core._pydantic_core.ValidationError: 1 validation error for send", True),
        ("TypeError: send() got an unexpected keyword argument 'to'", True),
        ("RuntimeException: boom", True),
        ("Errors: 0", False),
        ("ValueError without a colon", False),
        ("the ValueError: was handled", False),  # not at the start
        ('{"error": "x"}', False),
        ("error: lower case", False),
    ],
)
def test_the_default_pattern_reads_exception_names(text: str, is_refusal: bool) -> None:
    assert (refusal(Observation(text)) is not None) is is_refusal


def test_an_exception_name_is_the_type_when_the_log_names_none() -> None:
    found = refusal(Observation("KeyError: 'N-9'"))
    assert found is not None
    assert (found.error_type, found.label, found.rule) == ("KeyError", D, "not-found error type")
    named = refusal(Observation("KeyError: 'N-9'", error=True, error_type="conflict"))
    assert named is not None
    assert named.error_type == "conflict"  # the log's own kind wins
    assert evidence.leading_exception("not an exception: x") is None


def test_the_pattern_reads_the_first_characters_only() -> None:
    late = "x" * TEXT_CHARS + "Error"
    assert refusal(Observation(late), EvidencePolicy(error_pattern=re.compile("Error"))) is None
    assert refusal(Observation("x" * (TEXT_CHARS - 5) + "Error"), EvidencePolicy(re.compile("Error"))) is not None


def test_a_refusal_quotes_the_error_and_names_its_source() -> None:
    found = refusal(Observation("note N-9 not found", error=True, error_type="unknown"))
    assert found is not None
    assert (
        found.reason == 'the recorded outcome refused the call (the log\'s error flag) [unknown]: "note N-9 not found"'
    )
    assert found.notes == ("source: recorded outcome (error flag)", "classifier: not found -> dependency")
    long = refusal(Observation("Error: " + "y" * 5000))
    assert long is not None
    assert len(long.reason) < 400
    assert long.reason.endswith('..."')
    assert long.notes[0] == "source: recorded outcome (error pattern)"
    silent = refusal(Observation(None, error=True))
    assert silent is not None
    assert silent.reason.endswith(": no text")


def test_compile_pattern_refuses_what_is_no_regex() -> None:
    assert evidence.compile_pattern(r"^E\d+").pattern == r"^E\d+"
    with pytest.raises(ValueError, match="not a valid regular expression"):
        evidence.compile_pattern("(unclosed")


# ------------------------------------------------------------------------------------------ recorded values


@pytest.mark.parametrize(
    ("content", "value"),
    [
        ('{"note_id": "N-1"}', {"note_id": "N-1"}),
        ('[{"id": 1}, {"id": 2}]', [{"id": 1}, {"id": 2}]),
        ('"N-1"', "N-1"),
        ("N-1", "N-1"),  # plain text is itself
        ("Note created: N-1", "Note created: N-1"),
        ({"note_id": "N-1"}, {"note_id": "N-1"}),  # already parsed (MCP structuredContent, a dict content)
        ([1, 2], [1, 2]),
        (7, 7),
        (None, None),
        ("[" * 100_000, "[" * 100_000),  # nested past the recursion limit: the text itself
    ],
)
def test_recorded_value(content: object, value: object) -> None:
    assert recorded_value(Observation(content)) == value


def test_a_reply_of_text_blocks_reads_as_its_text() -> None:
    """Anthropic tool_result, OpenAI and LangChain tool content given as a list of text blocks: the pattern and
    produces read the blocks' text, as inspect's and MCP's replies are read."""
    blocks = [{"type": "text", "text": "Error: order O-9"}, {"type": "text", "text": "not found"}]
    found = refusal(Observation(blocks))
    assert found is not None
    assert (found.by, found.label) == ("pattern", D)
    assert recorded_value(Observation([{"type": "text", "text": '{"note_id": "N-1"}'}])) == {"note_id": "N-1"}
    mixed = [{"type": "text", "text": "Error: x"}, {"type": "image", "source": {}}]
    assert refusal(Observation(mixed)) is None  # not text only: its JSON text, which does not begin with Error
    assert recorded_value(Observation(mixed)) == mixed
    huge = [{"type": "text", "text": "y" * 1000}] * (evidence.PARSE_CHARS // 1000 + 1)
    assert recorded_value(Observation(huge)) is None  # longer than PARSE_CHARS, as a string would be
    assert len(evidence.observation_text(Observation(huge))) == TEXT_CHARS


def test_recorded_value_of_nothing_and_of_too_much() -> None:
    assert recorded_value(None) is None
    assert recorded_value(Observation("x" * (evidence.PARSE_CHARS + 1))) is None


def test_observation_text_is_bounded_for_huge_values() -> None:
    huge = {"rows": [{"id": i, "name": "n" * 50} for i in range(200_000)]}  # ~14 MB as JSON
    text = evidence.observation_text(Observation(huge))
    assert len(text) == TEXT_CHARS
    assert text.startswith('{"rows": [{"id": 0')
    deep: list[object] = []
    node = deep
    for _ in range(5000):
        node.append([])
        node = node[0]  # type: ignore[assignment]
    assert evidence.observation_text(Observation(deep)) == ""


# ---------------------------------------------------------------------------------------------- consistency


def record(*steps: tuple[ToolCall, Verdict]) -> PrefixRecord:
    calls = tuple(call for call, _ in steps)
    verdicts = tuple(verdict for _, verdict in steps)
    rejected = [i for i, v in enumerate(verdicts, start=1) if not v.accepted]
    T = len(calls)
    return PrefixRecord(
        "d", "t", "m", "x", 0, T=T, fed=rejected[0] if rejected else T + 1, success=1, verdicts=verdicts, actions=calls
    )


OK = Verdict.accept(notes=(evidence.ORIGIN_CHECK,))
OURS = Verdict.reject(D, "n=1 is no note that an earlier call produced", notes=(evidence.ORIGIN_CHECK,))
THEIRS = Verdict.reject(
    D, "the recorded outcome refused the call", notes=evidence.refusal(Observation("x not found", error=True)).notes
)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("call", "verdict", "kind"),
    [
        (ToolCall("a", observation=Observation("ok")), OK, None),  # both accepted
        (ToolCall("a", observation=Observation("Error: x")), OURS, None),  # both refused
        (ToolCall("a", observation=Observation("x", error=True)), OURS, None),
        (ToolCall("a", observation=Observation("x not found", error=True)), THEIRS, "recorded-refusal"),
        (ToolCall("a", observation=Observation("ok")), OURS, "extra-check"),
        (ToolCall("a", observation=Observation("Error: x", error=False)), OURS, "extra-check"),
        (ToolCall("a", observation=Observation("Error: x")), OK, "recorded-refusal"),  # under another policy
    ],
)
def test_disagreements(call: ToolCall, verdict: Verdict, kind: str | None) -> None:
    found, compared = evidence.compare_custom(record((call, verdict)))
    assert compared == 1
    assert [d.kind for d in found] == ([kind] if kind else [])
    if kind == "recorded-refusal":
        assert (found[0].recorded_error, found[0].replay_accepted, found[0].replay_label) == (True, True, None)
        assert "our checks accepted [recorded-refusal]" in found[0].describe()
    if kind == "extra-check":
        assert (found[0].recorded_error, found[0].replay_accepted, found[0].replay_label) == (
            False,
            False,
            "dependency",
        )


def test_calls_without_a_recorded_outcome_are_not_compared() -> None:
    found, compared = evidence.compare_custom(record((ToolCall("a"), OK), (ToolCall("b"), OURS)))
    assert (found, compared) == ([], 0)
    no_pattern = partial(evidence.compare_custom, policy=EvidencePolicy(error_pattern=None))
    found, compared = no_pattern(record((ToolCall("a", observation=Observation("Error: x")), OURS)))
    assert [d.kind for d in found] == ["extra-check"]  # without the pattern the reply was a success


def test_two_models_runs_of_one_task_are_told_apart() -> None:
    """One file can hold several models' runs of one task (AgentDojo's runs of four pipelines): each entry names
    its whole rollout, model and method included, in the line on stderr and in the report."""
    step = (ToolCall("a", observation=Observation("x not found", error=True)), THEIRS)
    entries = [
        evidence.compare_custom(replace(record(step), model=model, method="default"))[0][0]
        for model in ("gpt-4o-2024-05-13", "command-r-plus")
    ]
    assert [e.describe().split(" call ")[0] for e in entries] == [
        "d/t (gpt-4o-2024-05-13, default, trial 0)",
        "d/t (command-r-plus, default, trial 0)",
    ]
    assert [(e.to_json()["model"], e.to_json()["method"]) for e in entries] == [
        ("gpt-4o-2024-05-13", "default"),
        ("command-r-plus", "default"),
    ]


def test_a_disagreement_keeps_a_bounded_excerpt_of_the_content() -> None:
    huge = ToolCall("a", observation=Observation({"rows": list(range(100_000))}))
    (entry,), _ = evidence.compare_custom(record((huge, OURS)))
    assert isinstance(entry.recorded_content, str)
    assert len(entry.recorded_content) < 1100
    json.dumps(entry.to_json())


def test_the_documented_table_is_the_classifier() -> None:
    """docs/custom.md's table lists the rules in order with their labels and the default last."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "custom.md").read_text(encoding="utf-8")
    table = docs[docs.index("| rule | reads |") :].split("\n\n", 1)[0].splitlines()[2:]
    rows = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in table]
    documented = [(row[0], row[1], row[-1].strip("`")) for row in rows]
    expected = [(rule.name, rule.on, rule.label.value) for rule in RULES]
    assert documented == [*expected, (DEFAULT_RULE, "any", DEFAULT_LABEL.value)]
    for row, rule in zip(rows, RULES, strict=False):
        if rule.on == "type":
            assert row[2] == f"`{rule.pattern.replace('|', chr(92) + '|')}`"
