"""Pythonic tool calls, ``[get_weather(city="Paris", days=3), now()]``, read with :mod:`ast` as literals only.

Llama 3.2/4 and vLLM's ``pythonic`` parser write calls this way. The answer (optionally between
``<|python_start|>`` and ``<|python_end|>``) must start with ``[NAME(``, and either in the format's own shape,
the first argument a keyword or none (``[NAME(KEY=``, ``[NAME()``), or be nothing but the list: text like
``[Smith(2020)] showed that...`` (a positional first argument and prose after the list, or no end of the list
found) is prose, not a failed call. The list is parsed with
:func:`ast.parse` and never compiled or evaluated. Each element must be a call of a name (dotted names
allowed, ``math.sqrt``) with keyword arguments only, and each argument's value node is read with
:func:`ast.literal_eval`: strings, numbers, booleans, ``None``, lists, tuples (read as lists) and dicts with
string keys. A name, attribute, call, operator, set, bytes or complex number as a value, a positional
argument, an argument given twice, or ``**kwargs`` is a parse error of that call; text that starts like the
format but is no valid Python list is one parse error for the whole answer. Prose after the list's closing
``]`` (found with Python's tokenizer, so brackets in the list's strings and in the prose are no trouble) is
kept as prose.

The list is bounded before the parser sees it (:data:`MAX_PYTHON_CHARS`, :data:`MAX_PYTHON_DEPTH`
brackets): deeply nested input can crash CPython's parser, and hostile text must not. Prose after the list
counts toward neither bound.
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from typing import Any

from prefix_exec.llm.text_reading import MAX_CALLS, Reading, failed
from prefix_exec.trajectory import ToolCall

#: Longest pythonic answer parsed, in characters.
MAX_PYTHON_CHARS = 20_000
#: Deepest bracket nesting parsed (every ``(``, ``[`` and ``{`` counts, inside strings too).
MAX_PYTHON_DEPTH = 48

_START = re.compile(r"\A\[\s*[A-Za-z_][\w.]*\s*\(")
#: The format's own shape: the first call's first argument is a keyword (``[f(a=``) or it has none (``[f()``).
_KEYWORD_START = re.compile(r"\A\[\s*[A-Za-z_][\w.]*\s*\(\s*(?:[A-Za-z_]\w*\s*=(?!=)|\))")
_OPEN, _CLOSE = "([{", ")]}"
_JSON_SCALARS = (str, int, bool, type(None))


def read_pythonic(text: str) -> Reading | None:
    """The calls of a pythonic answer (see the module docstring); ``None`` when it does not start like one."""
    source = text.strip().removeprefix("<|python_start|>").strip()
    source = source.removesuffix("<|eom_id|>").removesuffix("<|eot_id|>").rstrip()
    source = source.removesuffix("<|python_end|>").rstrip()
    if not _START.match(source):
        return None
    end = _list_end(source[: MAX_PYTHON_CHARS + 1])
    if not _KEYWORD_START.match(source) and (end is None or _after(source, end)):
        return None  # "[Smith(2020)] showed that...": a citation, not a call
    code = source if end is None else source[:end]  # no end found: the whole answer fails as one
    if len(code) > MAX_PYTHON_CHARS:
        return Reading(None, (failed(source, f"pythonic tool calls longer than {MAX_PYTHON_CHARS:,} characters"),))
    if _depth(code) > MAX_PYTHON_DEPTH:
        return Reading(None, (failed(source, f"pythonic tool calls nested deeper than {MAX_PYTHON_DEPTH}"),))
    parsed = _parse(code)
    if isinstance(parsed, str):
        return Reading(None, (failed(source, parsed),))
    return Reading(_after(source, len(code)), tuple(_call(node, code) for node in parsed.elts[:MAX_CALLS]))


def _after(source: str, end: int) -> str | None:
    """The prose after the list that ends at ``end``, ``None`` when there is none."""
    return source[end:].strip().removeprefix("<|python_end|>").strip() or None


def _list_end(source: str) -> int | None:
    """The index just past the ``]`` that closes the list ``source`` starts with, read with Python's tokenizer
    (brackets inside string literals do not count); ``None`` when the text ends or stops being Python first."""
    lines: list[str] = []
    reader = io.StringIO(source).readline

    def read_line() -> str:
        lines.append(reader())
        return lines[-1]

    depth = 0
    try:
        for token in tokenize.generate_tokens(read_line):
            if token.type != tokenize.OP or token.string not in "()[]{}":
                continue
            depth += 1 if token.string in _OPEN else -1
            if depth == 0:
                row, column = token.end
                end = sum(len(line) for line in lines[: row - 1]) + column
                return end if source[end - 1 : end] == "]" else None
    except (SyntaxError, tokenize.TokenError, ValueError, RecursionError, MemoryError):
        return None
    return None


def _depth(source: str) -> int:
    """The deepest bracket nesting in ``source``, counting brackets inside strings too (an over-count only)."""
    depth = deepest = 0
    for char in source:
        if char in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif char in _CLOSE:
            depth -= 1
    return deepest


def _parse(code: str) -> ast.List | str:
    """The list node ``code`` is, or why it is no list."""
    try:
        tree = ast.parse(code, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # ValueError: digits, NUL bytes
        return f"pythonic tool calls are not valid Python ({_first_line(exc)})"
    if not isinstance(tree.body, ast.List):
        return "pythonic tool calls must be one list [f(a=1), ...]"
    return tree.body


def _first_line(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return exc.msg
    if isinstance(exc, RecursionError | MemoryError):
        return "nested too deeply"
    return str(exc).split(";")[0][:120]


def _call(node: ast.expr, code: str) -> ToolCall:
    """One element of the list as a call; anything but a literal keyword call is a parse error."""
    raw = ast.get_source_segment(code, node) or ""
    if not isinstance(node, ast.Call):
        return failed(raw, "each element must be a call f(name=value, ...)")
    name = _dotted(node.func)
    if name is None:
        return failed(raw, "a pythonic tool call must call a name, f(...) or module.f(...)")
    if node.args:
        return failed(raw, "pythonic tool calls must name every argument, f(a=1), not f(1)", name=name)
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            return failed(raw, "pythonic tool calls cannot use **", name=name)
        if keyword.arg in arguments:
            return failed(raw, f"argument {keyword.arg!r} is given twice", name=name)
        try:
            value = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return failed(raw, f"argument {keyword.arg!r} is not a literal (strings, numbers, lists...)", name=name)
        try:
            arguments[keyword.arg] = _json(value)
        except (ValueError, RecursionError) as exc:
            return failed(raw, f"argument {keyword.arg!r}: {exc}", name=name)
    return ToolCall(name=name, arguments=arguments, raw=raw)


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attribute reads on a name, ``None`` for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _json(value: Any) -> Any:
    """``value`` (a Python literal) as JSON data: tuples become lists; raises ``ValueError`` for a set, bytes,
    a complex or non-finite number, or a dict key that is not a string."""
    if isinstance(value, _JSON_SCALARS):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not a finite number")
        return value
    if isinstance(value, list | tuple):
        return [_json(item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: _json(item) for key, item in value.items()}
    raise ValueError(f"{type(value).__name__} is not JSON data")
