"""Model-written arguments that Python's JSON decoder refuses beyond syntax are parse errors, never crashes."""

from __future__ import annotations

import pytest

from prefix_exec.llm.textcalls import decode_arguments, read_text_calls

HUGE_INT = '{"n": ' + "9" * 5000 + "}"  # past Python's 4,300-digit limit for int()
DEEP = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"  # past the decoder's recursion limit


@pytest.mark.parametrize(
    ("raw", "reason"), [(HUGE_INT, "digits"), (DEEP, "nested too deeply"), ('{"a": 1', "Expecting")]
)
def test_arguments_python_cannot_decode_are_parse_errors(raw: str, reason: str) -> None:
    native = decode_arguments("ls", "c1", raw)
    assert native.parse_error is not None
    assert reason in native.parse_error
    assert native.arguments == {}
    (text,) = read_text_calls(f'<tool_call>{{"name": "ls", "arguments": {raw}}}</tool_call>').calls
    assert text.parse_error is not None
    assert reason in text.parse_error
    assert text.name == "ls"
