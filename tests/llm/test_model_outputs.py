"""A real model's answers (tests/data/model-outputs/, see its README) read as the backend reads them.

Each file is one raw answer of Qwen2.5-Coder-0.5B-Instruct behind llama.cpp's ``llama-server``: ``native-*``
answered a request with native ``tools`` (read as ``tool_mode = "auto"`` reads it), ``null-content-*`` the same
after a tool call whose assistant message had ``content`` null or ``""``, ``<format>-*`` a text-mode request
whose system prompt asked for that format (read with ``text_format`` that format, and with ``auto``).
What each holds is written down by hand below, from reading the file: the reader is checked against it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.llm.decode import decode_answer
from prefix_exec.llm.textcalls import AUTO_ORDER, read_text_calls
from prefix_exec.llm.tool_support import rejects_tools

FOLDER = Path(__file__).resolve().parents[1] / "data" / "model-outputs"

Calls = list[tuple[str, dict[str, Any]]]
#: How an answer reads: the format that read it (``None``: an answer without a call), its calls that parsed, and
#: whether any call failed to parse.
Reading = tuple[str | None, Calls, bool]

PARIS = [("get_weather", {"city": "Paris", "unit": "c"})]
HIDDEN = [("ls", {"a": True})]
DOCS = [("ls", {"folder": "docs"})]  # asked to cd into docs and list it: one call, an argument ls does not have
NO_CALL: Reading = (None, [], False)
#: The schema of get_weather written back as if it were a call (mistral-jinja-1: no [TOOL_CALLS] either).
ECHO = [
    (
        "get_weather",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"],
        },
    )
]


def both(fmt: str, calls: Calls) -> dict[str, Reading]:
    """Read alike by the format asked for and by ``auto``."""
    return {fmt: (fmt, calls, False), "auto": (fmt, calls, False)}


#: file -> text_format -> how it reads, written down by hand from the file. ``native``/``null-content`` files
#: are read as ``tool_mode = "auto"`` reads a native answer (with ``text_format = "auto"``).
EXPECTED: dict[str, dict[str, Reading]] = {
    "native-jinja-1.txt": {"auto": ("fenced", PARIS, False)},
    "native-jinja-2.txt": {"auto": ("fenced", HIDDEN, False)},
    "native-jinja-3.txt": {"auto": ("fenced", HIDDEN, False)},  # asked to cd first: it did not
    # After a tool result the model calls again and then writes a made-up result: prose after the call.
    "null-content-jinja-null.txt": {"auto": ("json", PARIS, False)},
    "null-content-jinja-empty.txt": {"auto": ("json", PARIS, False)},
    # Asked for <tool_call> tags, the model writes bare JSON: no call for hermes, one for auto (issue 27).
    **{
        f"hermes-{server}-{i}.txt": {"hermes": NO_CALL, "auto": ("json", calls, False)}
        for server in ("jinja", "nojinja")
        for i, calls in enumerate((PARIS, HIDDEN, DOCS), 1)
    },
    **{
        f"json-{server}-{i}.txt": both("json", calls)
        for server in ("jinja", "nojinja")
        for i, calls in enumerate((PARIS, HIDDEN, DOCS), 1)
    },
    # fenced-jinja-1 spelled the arguments "parameters" and added the tool's description: a fence reads both.
    **{f"fenced-jinja-{i}.txt": both("fenced", calls) for i, calls in enumerate((PARIS, HIDDEN, DOCS), 1)},
    **{f"llama-jinja-{i}.txt": both("llama", calls) for i, calls in enumerate((PARIS, HIDDEN, DOCS), 1)},
    **{f"pythonic-jinja-{i}.txt": both("pythonic", calls) for i, calls in enumerate((PARIS, HIDDEN, DOCS), 1)},
    # Without its marker the schema echo is no Mistral call; auto reads {"name", "parameters"} as llama's
    # shape, a call whose arguments replay will refuse.
    "mistral-jinja-1.txt": {"mistral": NO_CALL, "auto": ("llama", ECHO, False)},
    **{f"mistral-jinja-{i}.txt": both("mistral", calls) for i, calls in ((2, HIDDEN), (3, DOCS))},
}


def answer(name: str) -> tuple[str | None, Any]:
    """The answer's content (``None`` for null) and its ``tool_calls`` as the server sent them."""
    text = (FOLDER / name).read_text(encoding="utf-8")
    head, _, rest = text.partition("\ncontent:\n")
    tool_calls = json.loads(head.split("tool_calls: ", 1)[1].splitlines()[0])
    content = rest.split("\n--- request messages ---", 1)[0].removesuffix("\n")
    return (None if content == "<null>" else content), tool_calls


#: Answers that were errors: file -> status.
ERRORS = {"native-nojinja-1.txt": 500, "null-content-nojinja-null.txt": 500}


def test_every_recorded_answer_has_an_expectation() -> None:
    assert sorted(p.name for p in FOLDER.glob("*-*.txt")) == sorted([*EXPECTED, *ERRORS])  # not make_samples.py.txt


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_llama_server_without_jinja_rejects_tools_with_a_500_auto_recognises(name: str) -> None:
    text = (FOLDER / name).read_text(encoding="utf-8")
    assert text.startswith(f"status: {ERRORS[name]}\n")
    error = json.loads(text.split("body:\n", 1)[1].splitlines()[0])["error"]
    assert error["code"] == 500
    assert rejects_tools(error["message"])  # so auto switches to text (tests/llm/test_text_fallback.py)


@pytest.mark.parametrize(("name", "fmt"), [(name, fmt) for name in sorted(EXPECTED) for fmt in EXPECTED[name]])
def test_a_real_answer_reads_as_written_down(name: str, fmt: str) -> None:
    expected_format, calls, failed = EXPECTED[name][fmt]
    content, tool_calls = answer(name)
    if name.startswith(("native-", "null-content-")):
        body = {"choices": [{"message": {"role": "assistant", "content": content, "tool_calls": tool_calls}}]}
        done = decode_answer(body, mode="auto", text_format=fmt, role="executor", model="qwen", latency_s=0.0)
        assert done.in_content is (expected_format is not None and not tool_calls)
        read_format, read_calls = done.text_format, done.calls
    else:
        assert name.split("-", 1)[0] in AUTO_ORDER
        read = read_text_calls(content, fmt)
        read_format, read_calls = read.format, read.calls
    assert read_format == expected_format
    assert [(c.name, dict(c.arguments)) for c in read_calls if not c.parse_error] == calls
    assert any(c.parse_error for c in read_calls) is failed


def test_llama_server_takes_null_content_beside_tool_calls() -> None:
    """What ``null_content`` is not needed for: llama-server answered the same to ``null`` and ``""``."""
    texts = [(FOLDER / f"null-content-jinja-{kind}.txt").read_text(encoding="utf-8") for kind in ("null", "empty")]
    assert all(text.startswith("status: 200\n") for text in texts)
    assert answer("null-content-jinja-null.txt") == answer("null-content-jinja-empty.txt")


def test_a_made_up_tool_result_after_the_call_stays_prose() -> None:
    content, _ = answer("null-content-jinja-null.txt")
    assert read_text_calls(content).prose == '{"temperature": 18, "sky": "cloudy"}'
