"""Check 3 of a strict BFCL session: whether a call's arguments bind to BFCL's function doc.

No unknown names, every required one present, each value of the doc's type (``string``, ``integer``,
``float`` (an int is accepted), ``boolean``, ``array`` (and its ``items`` type), ``dict``, ``any``); ``None``
only for an optional parameter. Booleans are not numbers. A few doc types are widened where BFCL's own data
contradicts its docs (:data:`WIDENED`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefix_exec.json_types import JsonMapping

_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "float": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "dict": (dict,),
}


#: Doc types widened where BFCL's own data contradicts its docs: TicketAPI documents ``ticket_id`` as an
#: integer, but ``multi_turn_*_173`` starts with a ticket whose id is the string ``"ticket_001"`` and the
#: ground truth closes it by that id.
WIDENED: Mapping[tuple[str, str], tuple[str, ...]] = {
    (function, "ticket_id"): ("integer", "string")
    for function in ("close_ticket", "edit_ticket", "get_ticket", "resolve_ticket")
}


def type_problem(value: Any, spec: JsonMapping, where: str) -> str | None:
    """Why ``value`` does not have the doc type ``spec``, or ``None``. Booleans are not numbers."""
    declared = spec.get("type")
    if declared in (None, "any") or declared not in _TYPES:
        return None
    if isinstance(value, bool) and declared != "boolean":
        return f"{where}: expected {declared}, got boolean"
    if not isinstance(value, _TYPES[declared]):
        return f"{where}: expected {declared}, got {type(value).__name__}"
    items = spec.get("items")
    if declared == "array" and isinstance(items, Mapping) and isinstance(value, list):
        for index, element in enumerate(value):
            problem = type_problem(element, items, f"{where}[{index}]")
            if problem:
                return problem
    return None


def binding_problems(name: str, arguments: JsonMapping, doc: JsonMapping) -> list[str]:
    """Every way ``arguments`` fail to bind to the function doc ``doc`` (empty when they bind)."""
    parameters = doc.get("parameters", {})
    properties: JsonMapping = parameters.get("properties", {})
    required = set(parameters.get("required", ()))
    problems = [f"{name}: unknown argument {key!r}" for key in arguments if key not in properties]
    problems += [f"{name}: missing required argument {key!r}" for key in sorted(required - set(arguments))]
    for key, value in arguments.items():
        if key not in properties:
            continue
        if value is None and key not in required:
            continue
        widened = WIDENED.get((name, key))
        if widened and any(type_problem(value, {"type": t}, "") is None for t in widened):
            continue
        problem = type_problem(value, properties[key], f"{name}: argument {key!r}")
        if problem:
            problems.append(problem)
    return problems
