"""Decode BFCL call strings with ``ast``: literal arguments only, nothing is ever evaluated.

BFCL writes calls as Python source: ``cd(folder='document')``, ``sort('final_report.pdf')``, or a prompting
model's ``[f(a=1), g(b="x")]``. This module walks the syntax tree and accepts exactly one shape per call:
a plain function name (an identifier, not a dunder) applied to literal positional and keyword arguments.
A literal is a string, number, boolean or ``None``, a negated number, or a list, tuple or dict of literals.
Everything else (attribute access, names, nested calls, lambdas, comprehensions, operators, starred
arguments, f-strings) raises :class:`CallSyntaxError` with the reason, and the caller scores it as a
``schema`` failure. Positional arguments are bound to names by the API method's signature order, as
BFCL's ``eval`` would bind them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from prefix_exec.json_types import JsonObject

#: Calls longer than this are refused before parsing (deep nesting can exhaust the parser's stack).
MAX_CALL_CHARS = 200_000

_NODE_NAMES: dict[type, str] = {
    ast.Attribute: "attribute access",
    ast.Call: "a nested call",
    ast.Lambda: "a lambda",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.Name: "a variable name",
    ast.BinOp: "an operator expression",
    ast.BoolOp: "an operator expression",
    ast.Compare: "a comparison",
    ast.Subscript: "a subscript",
    ast.JoinedStr: "an f-string",
    ast.Starred: "a starred argument",
    ast.IfExp: "a conditional expression",
    ast.NamedExpr: "an assignment expression",
    ast.Set: "a set",
    ast.Await: "an await",
}


class CallSyntaxError(ValueError):
    """A call string that is not a plain function applied to literal arguments."""


@dataclass(frozen=True)
class ParsedCall:
    """A decoded call: ``name(*args, **kwargs)`` with literal values only."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


#: Largest integer literal accepted, in bits. Python cannot even print an integer of over 4,300 digits by
#: default (so no record could hold it), and no BFCL argument needs more than a few dozen bits.
MAX_INT_BITS = 256


def literal(node: ast.expr) -> Any:
    """The Python value of a literal node; raises :class:`CallSyntaxError` naming what else it found."""
    if isinstance(node, ast.Constant):
        constant = node.value
        if isinstance(constant, int) and not isinstance(constant, bool) and constant.bit_length() > MAX_INT_BITS:
            raise CallSyntaxError(f"an integer literal of {constant.bit_length()} bits (the bound is {MAX_INT_BITS})")
        if constant is None or isinstance(constant, bool | int | float | str):
            return constant
        raise CallSyntaxError(f"unsupported constant {type(constant).__name__}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = node.operand
        if (
            isinstance(operand, ast.Constant)
            and isinstance(operand.value, int | float)
            and not isinstance(operand.value, bool)
        ):
            return -operand.value if isinstance(node.op, ast.USub) else operand.value
        raise CallSyntaxError("a sign applied to something other than a number")
    if isinstance(node, ast.List | ast.Tuple | ast.Dict):
        return collection(node, literal, CallSyntaxError)
    raise CallSyntaxError(f"{_NODE_NAMES.get(type(node), type(node).__name__)} is not a literal")


def collection(
    node: ast.List | ast.Tuple | ast.Dict, value_of: Callable[[ast.expr], Any], error: type[ValueError]
) -> list[Any] | dict[Any, Any]:
    """A list or tuple node as a list, or a dict node as a dict, each element read by ``value_of``.

    Raises ``error`` for a ``**`` expansion inside a dict, and for a key that reads as a list or a dict
    (a Python dict cannot hold it). The strict decoder (:func:`literal`) and BFCL's prompting reading
    (:mod:`prefix_exec.envs.bfcl.prompting`) differ in what a value is, not in how containers hold them.
    """
    if not isinstance(node, ast.Dict):
        return [value_of(element) for element in node.elts]
    result: dict[Any, Any] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        if key is None:
            raise error("a ** expansion inside a dict")
        parsed_key = value_of(key)
        if isinstance(parsed_key, list | dict):
            raise error(f"a {type(parsed_key).__name__} used as a dict key")
        result[parsed_key] = value_of(value)
    return result


def check_name(name: str) -> str | None:
    """Why ``name`` cannot be a tool name (not a plain identifier, private or dunder), or ``None``."""
    if not name.isidentifier():
        return f"function name {name!r} is not a plain identifier"
    if name.startswith("_"):
        return f"function name {name!r} is private or a dunder name"
    return None


def call_from_node(node: ast.expr) -> ParsedCall:
    """A :class:`ParsedCall` from one ``ast.Call`` node."""
    if not isinstance(node, ast.Call):
        raise CallSyntaxError(f"expected a function call, found {_NODE_NAMES.get(type(node), type(node).__name__)}")
    if not isinstance(node.func, ast.Name):
        what = _NODE_NAMES.get(type(node.func), type(node.func).__name__)
        raise CallSyntaxError(f"the called function must be a plain name, found {what}")
    problem = check_name(node.func.id)
    if problem:
        raise CallSyntaxError(problem)
    args = []
    for position, argument in enumerate(node.args):
        try:
            args.append(literal(argument))
        except CallSyntaxError as exc:
            raise CallSyntaxError(f"{node.func.id}: positional argument {position + 1}: {exc}") from None
    kwargs: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise CallSyntaxError(f"{node.func.id}: a ** argument expansion")
        try:
            kwargs[keyword.arg] = literal(keyword.value)
        except CallSyntaxError as exc:
            raise CallSyntaxError(f"{node.func.id}: argument {keyword.arg!r}: {exc}") from None
    return ParsedCall(node.func.id, tuple(args), kwargs)


def _parse(source: str) -> ast.expr:
    if len(source) > MAX_CALL_CHARS:
        raise CallSyntaxError(f"call text longer than {MAX_CALL_CHARS} characters")
    try:
        return ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc) or type(exc).__name__
        raise CallSyntaxError(f"not valid call syntax: {message}") from None


def parse_call(source: str) -> ParsedCall:
    """One call written as Python source, such as a BFCL ground-truth entry."""
    return call_from_node(_parse(source.strip()))


def parse_call_list(source: str) -> list[ParsedCall]:
    """A prompting model's turn text, decoded the way BFCL decodes it: ``[f(...), g(...)]`` or one call.

    Like BFCL's decoder this strips backticks, newlines, spaces and wrapping single quotes, and adds the
    brackets when they are missing. Every element must be a call; one bad element fails the whole text.
    """
    text = source.strip("`\n ").strip("'")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    body = _parse(text)
    elements = body.elts if isinstance(body, ast.List | ast.Tuple) else [body]
    return [call_from_node(element) for element in elements]


def bind_positional(call: ParsedCall, names_of: Callable[[str], Sequence[str] | None]) -> JsonObject:
    """Keyword arguments of ``call`` with its positional arguments named by ``names_of(call.name)``.

    Raises :class:`CallSyntaxError` when positional arguments cannot be named (unknown function, too many,
    or a name given twice).
    """
    if not call.args:
        return dict(call.kwargs)
    names = names_of(call.name)
    if names is None:
        raise CallSyntaxError(f"{call.name}: positional arguments to an unknown function cannot be bound")
    if len(call.args) > len(names):
        raise CallSyntaxError(f"{call.name}: {len(call.args)} positional arguments, at most {len(names)} allowed")
    bound = dict(zip(names, call.args, strict=False))
    for name, value in call.kwargs.items():
        if name in bound:
            raise CallSyntaxError(f"{call.name}: argument {name!r} given twice")
        bound[name] = value
    return bound
