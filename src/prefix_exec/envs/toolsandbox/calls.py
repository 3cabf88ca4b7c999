"""The Python code ToolSandbox runs for an agent's tool call, built by us and read back by us.

ToolSandbox executes a call as code text in an ``InteractiveConsole`` (its own agents paste the model's call id
and arguments into it). Here no model text ever reaches that code:

- the **tool name** must be one of the scenario's agent-facing tools (an allow-list), and the name executed is
  ToolSandbox's execution-facing name for it, which must be a plain identifier;
- the **arguments** are re-rendered from the parsed JSON values as Python literals by :func:`python_literal`
  (``str`` via ``repr``, finite numbers, ``True``/``False``/``None``, lists and string-keyed dicts; bounded in
  depth, digits and size), and the whole code is parsed back and checked for exactly the expected shape;
- the **call id** (the variable prefix) is one we generate, ``call_<n>``.

The code has ToolSandbox's own shape, so run folders we write read like its own::

    call_3_parameters = {'phone_number': '+1 555'}
    call_3_response = search_contacts(**call_3_parameters)
    print(repr(call_3_response))

:func:`parse_call_code` reads that shape back from a recorded row in linear time (no backtracking regex).
"""

from __future__ import annotations

import ast
import keyword
import math
from typing import Any

from prefix_exec.json_types import JsonObject

#: Limits on the arguments of one call: nesting depth, integer digits, and the rendered size in characters.
MAX_DEPTH = 32
MAX_DIGITS = 1000
MAX_CHARS = 1_000_000
_INT_BOUND = 10**MAX_DIGITS


class UnsafeCall(ValueError):
    """A call whose name or arguments cannot be rendered as safe code; it is a schema failure, never run."""


def python_literal(value: Any, depth: int = 0) -> str:
    """``value`` (parsed JSON) as a Python literal; raises :class:`UnsafeCall` for anything else."""
    if depth > MAX_DEPTH:
        raise UnsafeCall(f"arguments nest deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        if abs(value) >= _INT_BOUND:
            raise UnsafeCall(f"an integer argument has more than {MAX_DIGITS} digits")
        return repr(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnsafeCall(f"a number argument is not finite ({value!r})")
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise UnsafeCall(f"an argument name is not a string ({type(key).__name__})")
            items.append(f"{key!r}: {python_literal(item, depth + 1)}")
        return "{" + ", ".join(items) + "}"
    raise UnsafeCall(f"an argument of type {type(value).__name__} is not a JSON value")


def is_identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name) and name.isascii()


def call_code(call_id: str, function: str, arguments: Any) -> str:
    """The code that calls ``function(**arguments)`` and prints the result's ``repr``.

    ``call_id`` and ``function`` must be plain identifiers (ours and the allow-listed execution-facing name);
    ``arguments`` must be a dict of JSON values. Raises :class:`UnsafeCall` otherwise.
    """
    if not is_identifier(call_id) or not is_identifier(function) or function.startswith("__"):
        raise UnsafeCall(f"not a plain identifier: {call_id!r} / {function!r}")
    if not isinstance(arguments, dict):
        raise UnsafeCall(f"the arguments are a {type(arguments).__name__}, not an object")
    literal = python_literal(arguments)
    if len(literal) > MAX_CHARS:
        raise UnsafeCall(f"the arguments are longer than {MAX_CHARS} characters")
    code = (
        f"{call_id}_parameters = {literal}\n{call_id}_response = {function}(**{call_id}_parameters)\n"
        f"print(repr({call_id}_response))"
    )
    _check_shape(code, call_id, function)
    return code


def _check_shape(code: str, call_id: str, function: str) -> None:
    """Defence in depth: the code is exactly an assignment of a literal, one call and one print."""
    try:
        tree = ast.parse(code)
        first, second, third = tree.body
        assert isinstance(first, ast.Assign) and isinstance(second, ast.Assign) and isinstance(third, ast.Expr)
        ast.literal_eval(first.value)
        call = second.value
        assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == function
        assert not call.args and len(call.keywords) == 1 and call.keywords[0].arg is None
        assert ast.unparse(third) == f"print(repr({call_id}_response))"
    except (AssertionError, ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
        raise UnsafeCall("the generated code does not have the expected shape") from None


def parse_call_code(code: str) -> tuple[str, str, str] | None:
    """``(call id, arguments text, tool name)`` of code in ToolSandbox's call shape, else ``None``.

    The shape is ``<id>_parameters = <args>`` on the first line and ``<id>_response = <name>(`` starting the
    second. Linear in the code's length.
    """
    first, newline, rest = code.partition("\n")
    if not newline:
        return None
    second = rest.partition("\n")[0]
    call_id, found, tail = second.partition("_response = ")
    if not found or not call_id or not first.startswith(f"{call_id}_parameters = "):
        return None
    name, paren, _ = tail.partition("(")
    if not paren or not name or any(c.isspace() for c in name):
        return None
    return call_id, first[len(call_id) + len("_parameters = ") :], name


def literal_arguments(text: str) -> JsonObject | None:
    """The arguments dict of a recorded call's literal text (never executed), or ``None`` when it is not one
    (or is too long, too deep, or has an integer past Python's digit limit)."""
    if len(text) > MAX_CHARS:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
