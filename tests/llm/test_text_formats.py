"""Every text tool-call format: read alone and by ``auto``, malformed, prose that is no call, hostile input."""

from __future__ import annotations

import json
import keyword
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakes.text_calls import write
from prefix_exec.llm.pythonic import MAX_PYTHON_CHARS, MAX_PYTHON_DEPTH
from prefix_exec.llm.text_reading import MAX_CALLS, MAX_RAW_CHARS, MAX_TEXT_CHARS
from prefix_exec.llm.textcalls import AUTO_ORDER, TEXT_FORMATS, read_text_calls, tools_prompt
from prefix_exec.llm.types import ToolSchema

FORMATS = AUTO_ORDER
CALLS = [("ls", {"a": False}), ("cd", {"folder": "doc s", "depth": [1, 2.5, None], "opts": {"k": "v"}})]


def pairs(text: str, fmt: str = "auto") -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, dict(c.arguments)) for c in read_text_calls(text, fmt).calls]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("calls", [CALLS[:1], CALLS], ids=["one", "two"])
def test_each_format_is_read_alone_and_by_auto_which_names_it(fmt: str, calls: Any) -> None:
    text = write(fmt, calls)
    for chosen in (fmt, "auto"):
        read = read_text_calls(text, chosen)
        assert [(c.name, dict(c.arguments)) for c in read.calls] == calls, (chosen, text)
        assert read.format == fmt
        assert all(c.parse_error is None for c in read.calls)
        assert [c.call_id for c in read.calls] == [f"text-{i}" for i in range(len(calls))]
        assert all(c.raw and c.name in c.raw for c in read.calls)


# Markers of the formats inside an argument string can make auto take the text for another format (as they
# would make a server's parser): the round trip leaves them out.
MARKERS = ("<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "```")
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20).filter(lambda t: not any(m in t for m in MARKERS))
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
# Python keywords cannot be written as pythonic names (``if(a=1)`` is no call), whatever the reader.
names = st.from_regex(r"[a-z_][a-z0-9_]{0,11}", fullmatch=True).filter(lambda n: not keyword.iskeyword(n))
identifiers = names
call_lists = st.lists(st.tuples(names, st.dictionaries(identifiers, values, max_size=4)), min_size=1, max_size=4)


@pytest.mark.parametrize("fmt", FORMATS)
@given(calls=call_lists)
def test_what_a_format_writes_reads_back_the_same(fmt: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
    text = write(fmt, calls)
    for chosen in (fmt, "auto"):
        read = read_text_calls(text, chosen)
        assert read.format == fmt
        assert [(c.name, dict(c.arguments)) for c in read.calls] == calls
        assert all(c.parse_error is None for c in read.calls)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_format_chosen_reads_no_other(fmt: str) -> None:
    for other in FORMATS:
        if other == fmt:
            continue
        text = write(other, CALLS)
        read = read_text_calls(text, fmt)
        assert not read.calls, f"{fmt} read {other}: {text!r}"
        assert read.prose == text.strip()


@pytest.mark.parametrize(
    ("fmt", "text", "name", "reason"),
    [
        ("hermes", '<tool_call>{"name": "ls", "arguments": {"a": </tool_call>', "ls", "not valid JSON"),
        ("hermes", '<tool_call>{"name": "ls", "arguments": [1]}</tool_call>', "ls", "must be a JSON object"),
        ("json", '{"name": "ls", "arguments": {"a": tru', "ls", "not valid JSON"),
        ("json", '{"name": "ls", "arguments": "not an object"}', "ls", "must be a JSON object"),
        ("json", '[{"name": 3, "arguments": {}}]', "", "string 'name'"),
        ("fenced", 'Here:\n```json\n{"name": "ls", "arguments": {"a": }\n```', "ls", "not valid JSON"),
        ("llama", '<|python_tag|>brave_search.call(query="x")', "", "expected JSON tool calls"),
        ("llama", '<|python_tag|>{"name": "ls", "parameters": {', "ls", "not valid JSON"),
        ("llama", '{"name": "ls", "parameters": 7}', "ls", "must be a JSON object"),
        ("mistral", "[TOOL_CALLS] [{'name': 'ls'}]", "", "not valid JSON"),
        ("mistral", '[TOOL_CALLS] [{"name": "ls"}]', "ls", "expected tool calls"),
        ("mistral", '[TOOL_CALLS] [{"name": "ls", "arguments": {}}, {"name": "cd"}]', "cd", "has no 'arguments'"),
        ("mistral", "[TOOL_CALLS]ls[ARGS]{oops}", "ls", "not valid JSON"),
        ("mistral", "[TOOL_CALLS] just words", "", "expected NAME[ARGS]"),
        ("pythonic", "[ls(a=True", "", "not valid Python"),
        ("pythonic", "[ls(True)]", "ls", "name every argument"),
        ("pythonic", "[ls(a=x)]", "ls", "not a literal"),
        ("pythonic", '[ls(a=open("/etc/passwd"))]', "ls", "not a literal"),
        ("pythonic", '[ls(a=__import__("os").system("touch /tmp/pwned"))]', "ls", "not a literal"),
        ("pythonic", "[ls(a=1 + 2)]", "ls", "not a literal"),
        ("pythonic", "[ls(a={1, 2})]", "ls", "set is not JSON data"),
        ("pythonic", "[ls(a=b'x')]", "ls", "bytes is not JSON data"),
        ("pythonic", "[ls(**opts)]", "ls", "cannot use **"),
        ("pythonic", "[ls(a=1), 5]", "", "must be a call"),
        ("pythonic", "[ls.get(a=1)(b=2)]", "", "must call a name"),
        ("pythonic", "[ls(a=1, a=2)]", "ls", "given twice"),
    ],
)
def test_text_in_a_format_that_does_not_parse_is_a_call_with_its_reason(
    fmt: str, text: str, name: str, reason: str
) -> None:
    for chosen in (fmt, "auto"):
        read = read_text_calls(text, chosen)
        assert read.format == fmt
        failed = [c for c in read.calls if c.parse_error]
        assert failed, read
        assert failed[0].name == name
        assert reason in (failed[0].parse_error or "")
        assert failed[0].raw
        assert failed[0].arguments == {}


@pytest.mark.parametrize(
    "text",
    [
        "The folder holds 3 files.",
        '{"results": [1, 2], "count": 2}',  # JSON data: no name and arguments
        '[{"name": "Alice", "age": 31}, {"name": "Bob", "age": 40}]',  # names, but no arguments
        '{"name": "ls"}',  # a name alone is no call shape
        'The answer:\n```json\n{"total": 12}\n```',
        "[1, 2, 3] are the ids",
        "[see the note (below)]",
        "I will use the <tool_call> format later.",
        "Use [TOOL_CALLS] only when needed",  # Mistral's marker mentioned mid-prose still claims the text
        "",
        "   ",
    ],
)
def test_prose_and_json_data_are_answers_without_a_call(text: str) -> None:
    read = read_text_calls(text)
    if "[TOOL_CALLS]" in text:  # the marker is the model's own control token: text after it is a (bad) call
        assert read.format == "mistral"
        assert read.calls[0].parse_error
        return
    assert read.calls == ()
    assert read.format is None
    assert read.prose == (text.strip() or None)


def test_prose_around_calls_is_kept() -> None:
    read = read_text_calls('Listing first.\n<tool_call>{"name": "ls", "arguments": {}}</tool_call>\nThen done.')
    assert read.prose == "Listing first.\n\nThen done."
    read = read_text_calls('{"name": "ls", "arguments": {}}\nI listed the folder.')
    assert (read.format, read.prose) == ("json", "I listed the folder.")
    read = read_text_calls("[ls(a=True)] I listed the folder.")
    assert (read.format, read.prose, pairs("[ls(a=True)] x")) == (
        "pythonic",
        "I listed the folder.",
        [("ls", {"a": True})],
    )


@pytest.mark.parametrize(
    ("text", "prose"),
    [
        ("[ls(a=True)]\nI listed the folder [as asked].", "I listed the folder [as asked]."),
        ('[ls(a="x]y")] See [the docs](https://example.org).', "See [the docs](https://example.org)."),
        ("<|python_start|>[ls(a=True)]<|python_end|> Done [1].", "Done [1]."),
        ("[ls(a=True)][0]", "[0]"),
        ("[ls(a=True)] I'll " + "wait " * (MAX_PYTHON_CHARS // 4), "I'll " + "wait " * (MAX_PYTHON_CHARS // 4)),
    ],
    ids=["bracket-in-prose", "link-in-prose", "tags", "subscript", "long-prose"],
)
def test_pythonic_prose_after_the_list_is_prose_whatever_it_holds(text: str, prose: str) -> None:
    """The list ends at its own closing bracket: brackets in the prose after it (or in its strings), and prose
    longer than the list's bound, once made the whole answer one parse error."""
    read = read_text_calls(text)
    assert read.format == "pythonic"
    assert [(c.name, dict(c.arguments), c.parse_error) for c in read.calls] == [
        ("ls", {"a": "x]y" if "x]y" in text else True}, None)
    ]
    assert read.prose == prose.strip()


def test_auto_tries_the_formats_in_the_documented_order() -> None:
    assert AUTO_ORDER == ("hermes", "mistral", "json", "llama", "fenced", "pythonic")
    assert TEXT_FORMATS == ("auto", *AUTO_ORDER)
    # A fenced block inside <tool_call> is hermes, not fenced.
    assert (
        read_text_calls('<tool_call>\n```json\n{"name": "ls", "arguments": {}}\n```\n</tool_call>').format == "hermes"
    )
    # [TOOL_CALLS] before a hermes block: hermes is tried first and wins.
    both = '[TOOL_CALLS] [{"name": "cd", "arguments": {}}] <tool_call>{"name": "ls", "arguments": {}}</tool_call>'
    assert (read_text_calls(both).format, pairs(both)) == ("hermes", [("ls", {})])
    # An object with both keys is json's (tried before llama); "parameters" alone is llama's.
    assert read_text_calls('{"name": "ls", "arguments": {}, "parameters": {"x": 1}}').format == "json"
    assert read_text_calls('{"name": "ls", "parameters": {"x": 1}}').format == "llama"
    # Bare JSON with its own Markdown fence after it: json reads the start and leaves the fence as prose.
    mixed = '{"name": "ls", "arguments": {}}\n```json\n{"name": "cd", "arguments": {}}\n```'
    assert (read_text_calls(mixed).format, pairs(mixed)) == ("json", [("ls", {})])


def test_arguments_double_encoded_as_a_string_are_read() -> None:
    assert pairs('{"name": "ls", "arguments": "{\\"a\\": 1}"}') == [("ls", {"a": 1})]


def test_several_json_objects_in_a_row_and_a_list_are_each_calls() -> None:
    assert pairs('{"name": "ls", "arguments": {}}\n{"name": "cd", "arguments": {"folder": "x"}}') == [
        ("ls", {}),
        ("cd", {"folder": "x"}),
    ]
    # A truncated second object (a length limit) is a failed call after the good one.
    read = read_text_calls('{"name": "ls", "arguments": {}}\n{"name": "cd", "arguments": {"fol')
    assert [c.parse_error is None for c in read.calls] == [True, False]
    assert read.calls[1].name == "cd"


# ------------------------------------------------------------------------------------------- hostile input


def test_a_runaway_answer_reads_at_most_max_calls() -> None:
    block = '<tool_call>{"name": "ls", "arguments": {}}</tool_call>'
    assert len(read_text_calls(block * (MAX_CALLS * 3), "hermes").calls) == MAX_CALLS
    listing = json.dumps([{"name": "ls", "arguments": {}}] * (MAX_CALLS * 3))
    assert len(read_text_calls(listing).calls) == MAX_CALLS
    python = "[" + ", ".join(["ls(a=1)"] * 1000) + "]"
    assert len(read_text_calls(python).calls) == MAX_CALLS


def test_huge_answers_are_read_only_up_to_the_bound() -> None:
    huge = '<tool_call>{"name": "ls", "arguments": {"pad": "' + "x" * (MAX_TEXT_CHARS * 5) + '"}}</tool_call>'
    (call,) = read_text_calls(huge).calls  # cut before its end: a failed call whose quote is bounded
    assert call.parse_error
    assert call.name == "ls"
    assert len(call.raw or "") < MAX_RAW_CHARS + 100


@pytest.mark.parametrize("fmt", ["hermes", "json", "fenced", "llama", "mistral"])
def test_json_nested_past_the_recursion_limit_is_a_parse_error(fmt: str) -> None:
    deep = "[" * 200_000 + "]" * 200_000
    text = write(fmt, [("ls", {"a": 1})]).replace("1", deep, 1)
    read = read_text_calls(text, fmt)
    assert read.calls
    assert read.calls[0].parse_error
    assert len(read.calls[0].raw or "") < MAX_RAW_CHARS + 100


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[ls(a=" + "[" * 100_000 + "]" * 100_000 + ")]", f"longer than {MAX_PYTHON_CHARS:,}"),
        ("[ls(a=" + "[" * 5_000 + "]" * 5_000 + ")]", f"nested deeper than {MAX_PYTHON_DEPTH}"),
        ("[ls(a=" + "(" * (MAX_PYTHON_DEPTH + 1) + "1" + ")" * (MAX_PYTHON_DEPTH + 1) + ")]", "nested deeper"),
        ("[ls(a='" + "x" * MAX_PYTHON_CHARS + "')]", f"longer than {MAX_PYTHON_CHARS:,}"),
        ("[ls(a=" + "-" * 15_000 + "1)]", "not valid Python"),  # deep unary chain: no brackets at all
        ("[ls(a=" + "not " * 4_000 + "1)]", "not valid Python"),
        ("[ls(a=" + "9" * 5_000 + ")]", "not valid Python"),  # past Python's int digit limit
        ("[ls(a=" + "1+" * 5_000 + "1)]", ""),  # deep BinOp chain: nested too deeply or not a literal
        ("[ls(a='\x00')]", ""),
    ],
)
def test_hostile_pythonic_text_is_a_parse_error_not_a_crash(text: str, reason: str) -> None:
    read = read_text_calls(text, "pythonic")
    assert read.format == "pythonic"
    (call,) = read.calls
    if "\x00" in text:  # a NUL inside a string literal is a valid string
        assert call.parse_error is None or "not valid Python" in call.parse_error
        return
    assert call.parse_error
    assert reason in call.parse_error
    assert len(call.raw or "") < MAX_RAW_CHARS + 100


@pytest.mark.parametrize(
    "body",
    [
        '```json\n{"name": "ls", "arguments": {"a": false}}\n```',
        '```json  \n\n{"name": "ls", "arguments": {"a": false}}```',
        '```\n{"name": "ls", "arguments": {"a": false}}\n\n```',
        '\n```tool-call\n  {"name": "ls", "arguments": {"a": false}}\n```\n',
        '```json {"name": "ls", "arguments": {"a": false}}```',  # on the fence's own line, as fenced reads it
        '```{"name": "ls", "arguments": {"a": false}}\n```',
    ],
)
def test_a_fence_inside_a_tool_call_block_is_taken_off(body: str) -> None:
    assert pairs(f"<tool_call>{body}</tool_call>", "hermes") == [("ls", {"a": False})]


#: Bound on one reading of hostile text, seconds: a hang bound (the reading takes milliseconds), not a timing.
HANG_BOUND_S = 60.0


@pytest.mark.parametrize(
    ("tail", "expected"),
    # No block's body starts like a call ({), so none is a call: the bound is what is tested here.
    [("x</tool_call>", []), ("```</tool_call>", []), ("x", []), ("{</tool_call>", ["not valid JSON"])],
    ids=["closed", "fenced", "cut-off", "call"],
)
def test_a_tool_call_block_of_a_fence_and_newlines_is_read_without_backtracking(tail: str, expected: Any) -> None:
    """An opening fence then newlines filling the answer: the fence pattern once backtracked over every
    newline for every newline (8,000 took seconds, the 200,000 the readers look at took hours). Run in a
    child process, so the old code fails by the hang bound instead of hanging the suite."""
    code = (
        "import json\n"
        "from prefix_exec.llm.textcalls import read_text_calls\n"
        "from prefix_exec.llm.text_reading import MAX_TEXT_CHARS\n"
        f"text = '<tool_call>```' + '\\n' * (MAX_TEXT_CHARS - 50) + {tail!r}\n"
        "print(json.dumps([c.parse_error for c in read_text_calls(text, 'auto').calls]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_BOUND_S, check=True
    )
    errors = json.loads(done.stdout)
    assert len(errors) == len(expected)
    assert all(want in got for want, got in zip(expected, errors, strict=True))


# ------------------------------------------------------------------------------------------- prompts


TOOLS = (ToolSchema("login", "log in", {"type": "object", "properties": {"username": {"type": "string"}}}),)


@pytest.mark.parametrize(
    ("fmt", "marker"),
    [
        ("hermes", "<tool_call>"),
        ("json", '{"name": "TOOL", "arguments"'),
        ("fenced", "```json"),
        ("llama", '"parameters"'),
        ("mistral", "[TOOL_CALLS]"),
        ("pythonic", '[TOOL(ARG="VALUE")'),
    ],
)
def test_the_prompt_asks_for_the_chosen_format(fmt: str, marker: str) -> None:
    prompt = tools_prompt(TOOLS, fmt)
    assert '"name": "login"' in prompt
    assert marker in prompt
    others = {"hermes": "<tool_call>", "mistral": "[TOOL_CALLS]", "fenced": "```"}
    assert not any(m in prompt for f, m in others.items() if f != fmt)
    assert tools_prompt(TOOLS, "auto") == tools_prompt(TOOLS, "hermes")


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_prompts_example_reads_back_in_its_format(fmt: str) -> None:
    """The example a prompt shows is a call its own reader reads: what we ask for, we can read."""
    prompt = tools_prompt(TOOLS, fmt)
    marker = {
        "hermes": "<tool_call>",
        "json": '{"name": "TOOL"',
        "fenced": "```json",
        "llama": '{"name": "TOOL"',
        "mistral": '[TOOL_CALLS] [{"name"',
        "pythonic": "[TOOL(",
    }[fmt]
    example = prompt[prompt.index(marker) :]
    example = example.split("; ", 1)[0] if fmt in ("hermes", "json", "llama") else example
    example = example.split("]. ", 1)[0] + "]" if fmt in ("mistral", "pythonic") else example
    example = example.replace("{...}", "{}")
    read = read_text_calls(example, fmt)
    assert read.calls, example
    assert read.calls[0].name == "TOOL"
    assert read.calls[0].parse_error is None


@pytest.mark.parametrize(
    "text",
    [
        '```json {"name": "ls", "arguments": {}} ```',  # a fence on one line
        'Listing:\n```\n[{"name": "ls", "arguments": {}}]\n```',  # no language, a list
        '```tool_call\n{"name": "ls", "arguments": {}}',  # never closed (a length limit)
    ],
)
def test_fences_of_every_shape_hold_calls(text: str) -> None:
    assert (read_text_calls(text, "fenced").format, pairs(text, "fenced")) == ("fenced", [("ls", {})])


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("[Smith(2020)] showed that small models copy their prompt.", "pythonic"),
        ("[Smith(2020), Lee(2021)]: both say so.", "pythonic"),
        ("[Note (see below): it's long", "pythonic"),  # no end found, and no keyword argument
        ("Use <tool_call>...</tool_call> to call a tool.", "hermes"),
        ("<tool_call> is how I would call it, but no call is needed.</tool_call>", "hermes"),
        ('{Note: the tool takes "name": "x" and "arguments": {} but I will not call it.', "json"),
        ('{"answer": 3, "why": "see notes"} ... later: "name": "x", "arguments": {"y": [', "json"),
        ('{"results": [1, 2, } and then "name": "ls", "arguments": {}', "json"),
    ],
)
def test_prose_that_only_looks_like_a_format_is_no_failed_call(text: str, fmt: str) -> None:
    """A format's failure needs the text to start the format's call shape (docs/runner.md, ``auto``): a
    citation, a mention of the tag, or a JSON-ish answer that names the keys later is an answer, no call."""
    for chosen in ("auto", fmt):
        read = read_text_calls(text, chosen)
        assert (read.calls, read.format, read.prose) == ((), None, text.strip()), chosen


@pytest.mark.parametrize(
    ("text", "fmt", "name"),
    [
        ("[get_weather(city='Paris'", "pythonic", ""),  # keyword form, cut off
        ("[get_weather('Paris')]", "pythonic", "get_weather"),  # the whole answer: positional is its failure
        ("[ls(a=1)\n", "pythonic", ""),
        ('<tool_call>\n```json\n{"name": "ls", "arguments": {"a": }\n</tool_call>', "hermes", "ls"),
        ('{"name": "ls", "arguments": {"path": "a\\q"}}', "json", "ls"),
        ('[{"arguments": {"a": 1}, "name": "ls"', "json", "ls"),
    ],
)
def test_text_that_starts_a_call_and_breaks_stays_a_failed_call(text: str, fmt: str, name: str) -> None:
    for chosen in ("auto", fmt):
        read = read_text_calls(text, chosen)
        assert read.format == fmt, chosen
        (call,) = read.calls
        assert call.parse_error and call.name == name, call
