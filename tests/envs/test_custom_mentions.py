"""The tokenization that says which values a conversation's message gave (issue 41, item 1): examples written by
hand, the identities the module docstring states (hypothesis), and its bounds."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prefix_exec.envs.custom import mentions
from prefix_exec.envs.custom.mentions import Mentions, forms, given_tokens, message_text, tokens


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("Please cancel my reservation 8JK2LM.", "8JK2LM"),
        ("my reservation id is '8JK2LM'", "8JK2LM"),
        ('The id is "8JK2LM", thanks!', "8JK2LM"),
        ("(8JK2LM)", "8JK2LM"),
        ("reservation_id=8JK2LM;", "8JK2LM"),
        ('{"reservation_id": "8JK2LM"}', "8JK2LM"),
        ("order #W2378156 please", "#W2378156"),
        ("order #W2378156 please", "W2378156"),
        ("it cost $120.", "120"),
        ("my user id is mia_li_3668?", "mia_li_3668"),
        ("mail a@b.com now", "a@b.com"),
        # tau-bench airline: the user gives an address whose local part is the user id the agent then passes
        ("my email is sophia_silva_7557@example.com.", "sophia_silva_7557"),
        ("open /tmp/notes.txt", "/tmp/notes.txt"),
        ("open /tmp/notes.txt", "notes.txt"),
        ("\u201cHAT-3\u201d", "HAT-3"),
        ("The one to change is M20IZO\u2014I\u2019d prefer nonstop", "M20IZO"),  # tau2 qwen2.5-7b airline task 9
        ("two bags \u2013 ZFA04Y \u2013 please", "ZFA04Y"),
        # tau2 airline, leaderboard/azure-gpt-4o_airline.json: the user writes Markdown bold
        ("1. My user ID is **sophia_silva_7557**.\n2. I'd like", "sophia_silva_7557"),
        ("*HAT-3*", "HAT-3"),
        # tau2 retail, leaderboard/toolorchestra-gpt-5_retail_no-task-ids.json: an em dash runs on from the id
        ("The order number I\u2019ve got is #W7209932\u2014pretty sure that\u2019s the one", "#W7209932"),
        ("The order number I\u2019ve got is #W7209932\u2014pretty sure that\u2019s the one", "W7209932"),
        ("#W7209932\u2013pretty", "#W7209932"),
    ],
)
def test_a_value_inside_a_sentence_is_a_token(text: str, token: str) -> None:
    assert token in tokens(text)


@pytest.mark.parametrize(
    ("text", "absent"),
    [
        ("reservation 8jk2lm", "8JK2LM"),  # case as written
        ("12345", "1234"),  # a whole token, never a part of one
        ("ABCD", "ABC"),
        ("version 1.5", "1"),  # a dot inside a word does not separate
        ("mia-li", "mia"),
        ("**mia_li_3668**", "mia_li"),  # ``_`` and ``-`` are part of ids: never stripped nor split
        ("**mia_li_3668**", "*mia_li_3668*"),
        ("_mia-li-_", "mia-li"),
        ("#W7209932\u2014pretty", "#W7209932\u2014pretty"),  # a dash ends a word
        ("write to x@y now", "x"),  # no dotted domain: not an e-mail address, no local part
        ("a@b@c.com", "a"),  # two @: not one address
    ],
)
def test_a_value_not_said_as_a_whole_token_is_not_one(text: str, absent: str) -> None:
    assert absent not in tokens(text)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("8JK2LM", ("8JK2LM",)),
        ("#W5061109", ("#W5061109", "W5061109")),  # tau2 retail's ids; the users type W5061109
        ("#", ("#",)),
        ("##W1", ("##W1", "#W1")),
        ("W#1", ("W#1",)),
        (123, ("123",)),
        (1.5, ("1.5",)),
        (5.0, ("5.0", "5")),
        (True, ()),
        (None, ()),
        ("", ()),
        ("John Smith", ()),
        ({"id": "8JK2LM"}, ()),
        ("x" * (mentions.MAX_TOKEN_CHARS + 1), ()),
        (float("nan"), ()),
    ],
)
def test_forms_of_argument_values(value: Any, expected: tuple[str, ...]) -> None:
    assert forms(value) == expected


def test_an_id_with_a_hash_is_given_without_it() -> None:
    """tau2 retail, gpt-4.1_retail_1trial.json: the user types ``W5061109``, the agent passes ``#W5061109``."""
    heard = Mentions()
    heard.hear(1, "Hi, I\u2019d like to change the wireless earbuds in my order W5061109 to a blue colored one.")
    assert heard.given_at("#W5061109") == 1
    assert heard.given_at("W5061109") == 1
    assert heard.given_at("#W506110") is None  # still a whole token
    assert heard.given_at("##W5061109") is None  # one ``#`` is dropped, not every one
    heard.hear(3, "and order #W2378156 too")
    assert heard.given_at("#W2378156") == 3 and heard.given_at("W2378156") == 3


def test_a_number_compares_as_written() -> None:
    heard = Mentions()
    heard.hear(3, "I have 2 bags and reservation 123; it was 0456.")
    assert heard.given_at(123) == 3
    assert heard.given_at("123") == 3
    assert heard.given_at(2) == 3
    assert heard.given_at(456) is None  # said as 0456
    assert heard.given_at(123.5) is None


def test_message_text_reads_text_parts_only() -> None:
    content = [{"type": "text", "text": "id 8JK2LM"}, {"type": "image", "url": "Z9Z9"}, "and HAT-3"]
    assert message_text(content) == "id 8JK2LM\nand HAT-3"
    assert message_text({"type": "text", "text": "A1"}) == "A1"
    assert message_text(42) == ""
    assert message_text(None) == ""


def test_mentions_keep_the_first_message_that_gave_a_value() -> None:
    heard = Mentions()
    heard.hear(1, "reservation 8JK2LM")
    heard.hear(4, "yes, 8JK2LM and ABC123")
    assert heard.given_at("8JK2LM") == 1
    assert heard.given_at("ABC123") == 4
    assert heard.given_at("NOPE") is None
    assert given_tokens(["a b", "b c"]) == {"a": 0, "b": 0, "c": 1}


def test_a_fork_is_independent() -> None:
    heard = Mentions()
    heard.hear(0, "A1")
    twin = heard.fork()
    twin.hear(1, "B2")
    heard.hear(2, "C3")
    assert twin.given_at("B2") == 1 and heard.given_at("B2") is None
    assert heard.given_at("C3") == 2 and twin.given_at("C3") is None
    assert heard.given_at("A1") == twin.given_at("A1") == 0


CLEAN = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9_@+.\-]{0,20}[A-Za-z0-9])?", fullmatch=True)
WORDS = st.lists(st.text(max_size=12), max_size=6).map(" ".join)


@given(
    CLEAN,
    WORDS,
    WORDS,
    st.sampled_from(["", "(", '"', "'", "`", "id=", "#", "[", "\u201c", "x/", "**", "*", "x\u2014", "\u2013"]),
    st.sampled_from(
        ["", ".", ",", ")", '"', "!", "?", ":", ";", "'s", "\u201d", "...", "\u2014I\u2019d", "**.", "*", "\u2013x"]
    ),
)
def test_a_clean_value_said_anywhere_is_given(value: str, left: str, right: str, before: str, after: str) -> None:
    """Identity: a value said as a word of a sentence, quoted, bracketed or punctuated, is a token of it."""
    heard = Mentions()
    heard.hear(7, f"{left} {before}{value}{after} {right}")
    assert heard.given_at(value) is not None


@given(st.text(max_size=300))
def test_every_token_is_a_distinct_bounded_substring(text: str) -> None:
    """Identity: each token occurs in the text as written, at most once in the list, within the length bound."""
    found = tokens(text)
    assert len(found) == len(set(found))
    for token in found:
        assert token and token in text and len(token) <= mentions.MAX_TOKEN_CHARS
        assert not any(c.isspace() for c in token)


@given(st.text(max_size=200), st.one_of(st.text(max_size=10), st.integers(), st.floats(), st.booleans()))
def test_given_at_is_a_form_among_the_tokens(text: str, value: Any) -> None:
    """Identity: a value is given exactly when one of its forms is a token of the message."""
    heard = Mentions()
    heard.hear(0, text)
    assert (heard.given_at(value) is not None) == any(f in tokens(text) for f in forms(value))


def test_a_huge_message_is_read_within_its_bounds() -> None:
    huge = "A1 " * (mentions.MAX_TEXT_CHARS // 3) + "LATE9 " + "x" * 100_000_000  # a 100 MB message
    heard = Mentions()
    heard.hear(2, huge)
    assert heard.given_at("A1") == 2
    assert heard.given_at("LATE9") is None  # past the characters read
    assert heard.cut == (2,) and heard.read == mentions.MAX_TEXT_CHARS
    parts = [{"type": "text", "text": "B2"}] * 2_000_000
    heard.hear(3, parts)
    assert heard.given_at("B2") == 3 and heard.cut == (2, 3)


def test_a_conversation_reads_a_bounded_number_of_characters() -> None:
    heard = Mentions()
    block = "ID1 " * (mentions.MAX_TEXT_CHARS // 4)
    messages = mentions.MAX_CONVERSATION_CHARS // mentions.MAX_TEXT_CHARS
    for index in range(messages):
        heard.hear(index, block)
    assert heard.read == mentions.MAX_CONVERSATION_CHARS and not heard.cut
    heard.hear(messages, "LATE9")
    assert heard.given_at("LATE9") is None and heard.cut == (messages,)
    heard.hear(messages + 1, [])  # nothing to read is no cut
    assert heard.cut == (messages,)


def test_distinct_tokens_are_capped_per_message_and_conversation() -> None:
    many = " ".join(f"T{i}" for i in range(mentions.MAX_MESSAGE_TOKENS + 10))
    heard = Mentions()
    heard.hear(0, many)
    assert len(heard) == mentions.MAX_MESSAGE_TOKENS
    assert heard.cut == (0,)
    for index in range(1, 2 * mentions.MAX_CONVERSATION_TOKENS // mentions.MAX_MESSAGE_TOKENS):
        heard.hear(index, " ".join(f"M{index}x{i}" for i in range(mentions.MAX_MESSAGE_TOKENS)))
    assert len(heard) == mentions.MAX_CONVERSATION_TOKENS
