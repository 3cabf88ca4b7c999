"""Schema binding of a tau2 tool call, checked before anything executes; and tau2's calculator without eval.

A call binds when its name is an exposed tool, every required parameter is present, no unknown parameter is
passed, and each value validates against the parameter's annotation in pydantic's *strict* mode (the model
tau2 itself builds from the signature, ``Tool.params``). Strict because tau2 passes the raw JSON values to the
Python function: ``"2"`` for an ``int`` would not be converted there, so lax coercion here would accept calls
the benchmark fails on. Nested objects given as JSON objects (``flights: [{"flight_number": ..}]``) are fine:
tau2's own annotations accept ``dict`` for them.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

from prefix_exec.envs.tau.domain import ToolSpec
from prefix_exec.json_types import JsonMapping


def binding_error(spec: ToolSpec, arguments: Any) -> str | None:
    """Why ``arguments`` do not bind to ``spec``, or ``None`` when they do."""
    if not isinstance(arguments, Mapping):
        return f"{spec.name}: arguments must be a JSON object, got {type(arguments).__name__}"
    problems: list[str] = []
    unknown = sorted(set(arguments) - spec.accepted)
    if unknown:
        problems.append(f"unknown argument(s) {', '.join(unknown)}")
    missing = sorted(spec.required - set(arguments))
    if missing:
        problems.append(f"missing required argument(s) {', '.join(missing)}")
    if not problems:
        try:
            spec.params.model_validate(dict(arguments), strict=True)
        except ValueError as exc:  # pydantic.ValidationError subclasses ValueError
            problems.append(_describe_error(exc))
    if problems:
        return f"{spec.name}: " + "; ".join(problems)
    return None


def _describe_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc).splitlines()[0]
    parts = []
    for error in errors()[:3]:
        where = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "argument types do not bind: " + "; ".join(parts)


_ALLOWED = set("0123456789+-*/(). ")
_BINARY: Mapping[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}


#: Largest integer, in bits, an intermediate ``calculate`` result may reach (a float holds at most 1,024).
MAX_BITS = 1 << 16


def _bits(op: ast.operator, left: Any, right: Any) -> int:
    """An upper bound on the bits of ``left op right`` for integer powers and products (0 for the rest)."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return 0
    if isinstance(op, ast.Pow) and right > 0 and abs(left) > 1:
        return right * abs(left).bit_length()
    if isinstance(op, ast.Mult):
        return abs(left).bit_length() + abs(right).bit_length()
    return 0


def calculate_call(owner: str, arguments: JsonMapping) -> str:
    """tau2's ``<owner>.calculate(**arguments)``: Python's own messages for arguments that do not bind
    (``AirlineTools.calculate() got an unexpected keyword argument 'x'``), then :func:`calculate`."""
    unexpected = [name for name in arguments if name != "expression"]
    if unexpected:  # Python names the first unexpected keyword before any missing one
        raise TypeError(f"{owner}.calculate() got an unexpected keyword argument '{unexpected[0]}'")
    if "expression" not in arguments:
        raise TypeError(f"{owner}.calculate() missing 1 required positional argument: 'expression'")
    return calculate(arguments["expression"])


def calculate(expression: str) -> str:
    """tau2's ``calculate`` tool, evaluated from the syntax tree instead of ``eval``.

    Same character whitelist, same message (``"Invalid characters in expression"``), same result format
    (``str(round(float(value), 2))``) and the same error texts as tau2's ``eval`` (syntax errors name
    ``<string>``, ``()`` fails in ``float``). Powers are bounded (|exponent| <= 64) so ``9**9**9`` cannot hang
    replay, and so is every integer power or product (:data:`MAX_BITS`; nested powers multiply). Those are
    the answers that differ from tau2's, which would compute for hours.
    """
    if not all(char in _ALLOWED for char in expression):
        raise ValueError("Invalid characters in expression")
    tree = ast.parse(expression.strip(), filename="<string>", mode="eval")
    return str(round(float(_evaluate(tree.body)), 2))


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Tuple) and not node.elts:
        return ()  # "()" is an empty tuple for eval too; float() then refuses it with tau2's message
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        if _bits(node.op, left, right) > MAX_BITS:
            # Nested powers multiply: (((9**64)**64)**64)**64 has 9**(64**4) digits and would run for hours.
            # Such a value cannot become a float, which is where tau2's own evaluation would fail.
            raise ValueError("int too large to convert to float")
        return _BINARY[type(node.op)](left, right)
    raise ValueError("Invalid expression")
