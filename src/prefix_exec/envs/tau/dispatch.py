"""The one way a tool name from a file reaches tau2's toolkit: the domain's allow-list, and our calculator.

Names come from untrusted files: the model's tool calls (replay, ``--regrade``), a task's
``initialization_actions`` (``func_name``) and its ``message_history`` calls. None may choose a method by
``getattr`` alone: ``__init__`` or ``use_tool`` (tau2's generic dispatcher, whose ``tool_name`` argument would
reach tau2's ``eval``-based ``calculate``) are not tools. :func:`invoke_tool` accepts only the domain's agent tools
(tau2's ``get_tools()``, :attr:`Domain.tools`), answers any other name with tau2's own ``Tool 'x' not found.``,
and runs ``calculate`` as our bounded syntax-tree version (:func:`~prefix_exec.envs.tau.binding.calculate_call`)
everywhere. Arguments nested past :data:`MAX_DEPTH` are refused before anything copies them (``copy.deepcopy``
and the information check recurse, and 600 levels exhaust Python's stack).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from prefix_exec.envs.tau.binding import calculate_call
from prefix_exec.envs.tau.domain import Domain
from prefix_exec.json_types import JsonMapping

#: Deepest nesting of lists and objects accepted in tool arguments; tau2's tools take at most 3 levels.
MAX_DEPTH = 64


def depth_error(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """``None`` when ``value`` nests lists/objects at most ``limit`` deep, else a message. Iterative, so any
    depth is measured without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, Mapping) else item if isinstance(item, list | tuple) else ()
        for child in children:
            if isinstance(child, Mapping | list | tuple):
                if depth + 1 > limit:
                    return f"arguments nested deeper than {limit} levels"
                stack.append((child, depth + 1))
    return None


def invoke_tool(domain: Domain, toolkit: Any, name: str, arguments: JsonMapping) -> Any:
    """Run ``name(**arguments)`` on ``toolkit`` (a toolkit of ``domain``) as tau2's ``use_tool`` does, for
    allowed names only. Raises what tau2 would: ``ValueError("Tool 'x' not found.")`` for a name that is not
    an agent tool of the domain, or the tool's own exception; ``ValueError`` for arguments nested too deep."""
    if name not in domain.tools:
        raise ValueError(f"Tool '{name}' not found.")
    problem = depth_error(arguments)
    if problem is not None:
        raise ValueError(problem)
    args = copy.deepcopy(dict(arguments))
    if name == "calculate":
        return calculate_call(type(toolkit).__name__, args)
    return toolkit.use_tool(name, **args)
