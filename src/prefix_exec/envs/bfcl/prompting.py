"""BFCL's prompting-format decoding, mirrored without ``eval``: what BFCL's checker executes for Y.

Final success Y on prompting result files must be BFCL's number. BFCL's evaluation (``eval_runner``
``_evaluate_single_multi_turn_entry`` with ``default_decode_execute_prompting``) reads a model's texts
differently from :mod:`prefix_exec.envs.bfcl.calls`, which decodes the calls the model meant for the
prefix replay. This module reproduces BFCL's reading, value by value:

- A turn entry must be a list of step strings. A turn that is one plain string is iterated by
  character, and no single character decodes to a call, so the turn is empty for BFCL.
- A step's text is stripped of backticks, newlines and spaces, bracketed when it is not already, then
  stripped of whitespace and single quotes, so a call wrapped in quotes (``'f(a=1)'``) reads as a list
  holding a string, which fails to decode. Every element must be a call.
- Only keyword arguments are kept: ``cd('x')`` runs as ``cd()``.
- Argument values as BFCL's ``resolve_ast_by_type`` gives them: a bare name is its own text
  (``a=true`` is ``'true'``), a unary operator negates its constant operand (``+5`` is ``-5``), a call
  without keywords and a subscript are their source text, ``...`` is ``'...'``, a tuple is a list here
  (as the strict decoder reads it). An operator expression BFCL ``eval``\\ s is computed here only over
  literal numbers, strings and lists (a name in it is undefined, so the step fails to decode, as
  ``eval`` fails); a comprehension, lambda, f-string, set, comparison or attribute fails to decode.
- Rendering the call back to source for execution: a dict argument whose values are all dicts is
  rendered as a nested call, and an empty one fails to decode (BFCL's ``parse_nested_value``).

What fails to decode skips its step, as BFCL skips it; a step that decodes to no call is skipped too.
Values BFCL would execute but this module will not reproduce (a nested call, a call inside an operator
expression, bytes, complex numbers, non-string dict keys, non-finite floats, results over
:data:`MAX_VALUE_CHARS`) make the call :data:`UNSUPPORTED`: it runs as an undefined name, an error text
with no effect on the state. docs/bfcl.md lists these cases.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from prefix_exec.envs.bfcl.calls import MAX_CALL_CHARS, MAX_INT_BITS, collection
from prefix_exec.json_types import JsonObject

#: The name given to a call whose values BFCL would execute but this module does not reproduce.
UNSUPPORTED = "<unsupported by the safe decoder>"
#: Longest string, list or repr an operator expression may produce here.
MAX_VALUE_CHARS = 100_000

#: One call as BFCL executes it: (name, keyword arguments).
Call = tuple[str, JsonObject]


class DecodeFailure(ValueError):
    """BFCL's decoder raises on this text: the step is skipped."""


class _Unsupported(ValueError):
    """BFCL would evaluate this expression; it is not reproduced here."""


#: Stands for a value BFCL reads but this module does not reproduce; the call becomes :data:`UNSUPPORTED`.
#: A marker rather than an exception, so that the rest of the step is still read: a later value that
#: fails to decode fails the whole step, as in BFCL.
_UNREPRODUCED = object()


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
    ast.Invert: operator.invert,
}


def decode_turn(entry: Any) -> list[Call]:
    """The calls BFCL executes for one turn entry of a prompting result, in order.

    A list entry is decoded step by step (a non-string step fails to decode, as BFCL's prompting decoder
    fails on it); a string entry is iterated by character, as BFCL iterates it, which yields no call.
    """
    if not isinstance(entry, list):
        # One character never decodes to a call: "[c]" is a list holding a name, a constant or nothing.
        return []
    calls: list[Call] = []
    for step in entry:
        try:
            calls += decode_step(step)
        except DecodeFailure:
            continue
    return calls


def decode_step(text: Any) -> list[Call]:
    """BFCL's ``default_decode_execute_prompting`` of one step; raises :class:`DecodeFailure` where it raises."""
    if not isinstance(text, str):
        raise DecodeFailure(f"a {type(text).__name__} step is not text")
    text = text.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    text = text.strip().strip("'")
    if len(text) > MAX_CALL_CHARS:
        raise DecodeFailure(f"call text longer than {MAX_CALL_CHARS} characters")
    try:
        body = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise DecodeFailure(f"not valid syntax: {exc}") from None
    if isinstance(body, ast.Call):
        elements: list[ast.expr] = [body]
    elif isinstance(body, ast.List | ast.Tuple | ast.Set):
        elements = list(body.elts)
    else:
        raise DecodeFailure(f"{type(body).__name__} has no elements")
    calls = []
    for element in elements:
        if not isinstance(element, ast.Call):
            raise DecodeFailure(f"an element is a {type(element).__name__}, not a call")
        calls.append(_call(element))
    return calls


def _call(node: ast.Call) -> Call:
    name = _function_name(node.func)
    arguments = {key: _rendered(value) for key, value in _keywords(node).items()}
    if _contains_unreproduced(arguments):
        return UNSUPPORTED, {}
    return name, arguments


def _keywords(node: ast.Call) -> JsonObject:
    """The keyword arguments BFCL keeps (positional ones are dropped), every one resolved."""
    arguments: JsonObject = {}
    for keyword in node.keywords:
        value = _value(keyword.value)
        # ``**x`` renders as ``None=...``, which does not run: an error text, as an unsupported call gives
        arguments[keyword.arg if keyword.arg is not None else ""] = _UNREPRODUCED if keyword.arg is None else value
    return arguments


def _function_name(func: ast.expr) -> str:
    """BFCL's dotted name of the called function (``resolve_ast_call``); other shapes give ``''``."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def _value(node: ast.expr) -> Any:
    """``resolve_ast_by_type``: the value BFCL reads for one argument node."""
    if isinstance(node, ast.Constant):
        try:
            return _constant(node.value)
        except _Unsupported:
            return _UNREPRODUCED
    if isinstance(node, ast.UnaryOp):
        if not isinstance(node.operand, ast.Constant):
            raise DecodeFailure("a unary operator on a non-constant")  # BFCL reads operand.value
        operand: Any = node.operand.value
        try:
            return _bounded(-operand)
        except TypeError:
            raise DecodeFailure("a negated non-number") from None
        except _Unsupported:
            return _UNREPRODUCED
    if isinstance(node, ast.List | ast.Tuple | ast.Dict):
        return collection(node, _value, DecodeFailure)
    if isinstance(node, ast.BinOp):
        try:
            return _evaluate(node)
        except _Unsupported:
            return _UNREPRODUCED
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        if not node.keywords:
            return ast.unparse(node)
        return {_function_name(node.func): _keywords(node)}  # BFCL's nested call; rendered as one
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    # Lambda (BFCL indexes its body and fails), comprehensions, f-strings, sets, comparisons, attributes.
    raise DecodeFailure(f"unsupported AST type {type(node).__name__}")


def _constant(value: Any) -> Any:
    if value is Ellipsis:
        return "..."
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise _Unsupported("a very large integer")
    if isinstance(value, float) and not math.isfinite(value):
        raise _Unsupported("a non-finite float")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise _Unsupported(f"a {type(value).__name__} constant")


def _evaluate(node: ast.expr) -> Any:
    """What ``eval`` gives for an operator expression over literals; a name is undefined, as for ``eval``."""
    if isinstance(node, ast.Constant):
        if node.value is Ellipsis:
            raise DecodeFailure("an operator applied to ...")
        return _constant(node.value)
    if isinstance(node, ast.Name):
        raise DecodeFailure(f"name {node.id!r} is not defined")
    if isinstance(node, ast.List | ast.Tuple):
        items = [_evaluate(element) for element in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _apply(_UNARY[type(node.op)], _evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(right, int) and abs(right) > 64:
            raise _Unsupported("a large power")
        if isinstance(node.op, ast.Mult) and _size(left) * _size(right) > MAX_VALUE_CHARS:
            raise _Unsupported("a large repetition")
        return _apply(_BINARY[type(node.op)], left, right)
    raise _Unsupported(f"{type(node).__name__} inside an operator expression")


def _apply(function: Callable[..., Any], *operands: Any) -> Any:
    try:
        result = function(*operands)
    except (TypeError, ArithmeticError, ValueError) as exc:
        raise DecodeFailure(f"eval raises {type(exc).__name__}") from None
    if isinstance(result, tuple):
        result = list(result)
    return _bounded(result)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | list | tuple) else 1


def _bounded(value: Any) -> Any:
    if isinstance(value, complex):
        raise _Unsupported("a complex number")
    if isinstance(value, float) and not math.isfinite(value):
        raise _Unsupported("a non-finite float")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise _Unsupported("a very large integer")
    if isinstance(value, str | list) and len(value) > MAX_VALUE_CHARS:
        raise _Unsupported("a very long value")
    return value


#: Characters that break BFCL's rendering of a dict key as ``'<key>'`` (the call then fails to run).
_BAD_KEY_CHARACTERS = frozenset("'\\\n\r\x00")


def _rendered(value: Any) -> Any:
    """The value the executed source holds after BFCL renders it (``parse_nested_value``) and ``eval`` reads it.

    A dict whose values are all dicts renders as a nested call (an empty one fails to render); any other
    dict renders its keys as ``'<str(key)>'`` (so ``{1: 'a'}`` runs as ``{'1': 'a'}``) and its values
    the same way; everything else round-trips through ``repr``.
    """
    if not isinstance(value, dict):
        return value
    if all(isinstance(inner, dict) for inner in value.values()):
        if not value:
            raise DecodeFailure("an empty dict argument")  # list(value.keys())[0] raises IndexError
        arguments = next(iter(value.values()))  # only the first entry is rendered, as name(k=v, ...)
        for inner in arguments.values():
            _rendered(inner)
        return _UNREPRODUCED  # a nested call, which BFCL would run
    rendered: JsonObject = {}
    for key, inner in value.items():
        text = str(key)
        if key is _UNREPRODUCED or _BAD_KEY_CHARACTERS & set(text):
            rendered[text] = _UNREPRODUCED  # the rendered source does not read back as this key
        else:
            rendered[text] = _rendered(inner)
    return rendered


def _contains_unreproduced(value: Any) -> bool:
    if value is _UNREPRODUCED:
        return True
    if isinstance(value, dict):
        # a dict inside a list keeps its keys through repr; a JSON record cannot hold a non-string one
        return any(not isinstance(key, str) or _contains_unreproduced(inner) for key, inner in value.items())
    if isinstance(value, list):
        return any(_contains_unreproduced(inner) for inner in value)
    return False
