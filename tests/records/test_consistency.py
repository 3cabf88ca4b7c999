"""The consistency report's lines on stderr: one line per entry, input's text never printed raw."""

from __future__ import annotations

from prefix_exec.records.consistency import SHOWN_CHARS, Disagreement, one_line


def entry(content: object, *, task: str = "t1", tool: str = "lookup") -> Disagreement:
    return Disagreement(
        dataset="d",
        task_id=task,
        model="m",
        method="react",
        trial=0,
        depth=2,
        tool=tool,
        arguments={},
        recorded_error=True,
        recorded_content=content,
        replay_accepted=True,
        replay_label=None,
        replay_reason="",
        kind="recorded-refusal",
    )


def test_a_multi_line_error_is_one_line_with_its_breaks_escaped() -> None:
    text = entry("Traceback (most recent call last):\n  File x\nValueError: no such order").describe()
    assert "\n" not in text
    assert "recorded error: Traceback (most recent call last):\\n  File x\\nValueError: no such order;" in text


def test_terminal_escapes_from_input_are_escaped_wherever_they_come_from() -> None:
    text = entry("\x1b[2J\x1b]0;owned\x07 gone", task="t\x1b[31m", tool="look\rup").describe()
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in text)
    assert "\\u001b[2J\\u001b]0;owned\\u0007 gone" in text
    assert "d/t\\u001b[31m (m, react, trial 0)" in text and "look\\rup" in text


def test_a_long_or_structured_reply_is_cut_and_shown_as_json() -> None:
    long = entry("x" * 10_000).describe()
    assert f"error: {'x' * (SHOWN_CHARS - 3)}...;" in long
    assert 'error: {"error": "no\\nsuch"};' in entry({"error": "no\nsuch"}).describe()


def test_one_line_keeps_printable_text_and_non_ascii_as_it_is() -> None:
    assert one_line("Zürich — 東京 ok") == "Zürich — 東京 ok"
    assert one_line("a\tb\x00c\x85") == "a\\tb\\u0000c\\u0085"
