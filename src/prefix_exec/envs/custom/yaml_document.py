"""A YAML document read as JSON values, safely: the node graph is checked before any object is built.

A spec or hooks file may be YAML (:mod:`prefix_exec.envs.custom.spec_formats`). Only JSON values are accepted: a
date, a set or binary, ``.nan`` and ``.inf``, a key that is not a string and a key given twice are refused,
naming the field and line; an alias may not hold itself, and aliases may add at most
:data:`MAX_ALIAS_EXPANSION` nodes (a "billion laughs" document adds 10**9). Each is a
``yaml.YAMLError`` the caller turns into an input error with the file's name.
"""

from __future__ import annotations

from typing import Any

import yaml

from prefix_exec.json_types import json_path

# yaml.safe_load's loader, on libyaml's parser where PyYAML has it (the same documents, about 8 times faster;
# a run or a test reads the same spec many times).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


#: The YAML tags whose values are JSON values (a merge key ``<<`` only copies mappings).
_JSON_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "str", "seq", "map", "merge"))
#: How many nodes YAML aliases may add to a document when expanded (a "billion laughs" adds 10**9).
MAX_ALIAS_EXPANSION = 100_000


def read_yaml(text: str) -> Any:
    """A YAML document of JSON values only: its node graph is checked before any object is built."""
    loader = _YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_nodes(root: yaml.Node) -> None:
    """Refuse a node of a non-JSON type (a date, a set, binary), an alias inside its own node, and aliases that
    expand the document by more than :data:`MAX_ALIAS_EXPANSION` nodes, naming the field and line."""
    sizes: dict[int, int] = {}  # expanded size of each node done
    composed = 0
    stack: list[tuple[yaml.Node, list[Any], bool]] = [(root, [], False)]
    open_nodes: set[int] = set()
    while stack:
        node, parts, done = stack.pop()
        if done:
            open_nodes.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(child)] for _, child in _children(node))
            continue
        if id(node) in open_nodes:
            raise yaml.YAMLError(f"a YAML alias at {json_path(parts) or 'the top'} refers to a node that holds it")
        if id(node) in sizes:
            continue
        composed += 1
        if node.tag not in _JSON_TAGS:
            kind = node.tag.rsplit(":", 1)[-1]
            raise _NotJson(
                f"a YAML {kind} value at {json_path(parts) or 'the top'} "
                "(a spec holds JSON values only: quote a date, write a set as a list)",
                node,
            )
        _check_value(node, parts)
        open_nodes.add(id(node))
        stack.append((node, parts, True))
        stack.extend((child, [*parts, part], False) for part, child in _children(node))
    expanded = sizes[id(root)]
    if expanded - composed > MAX_ALIAS_EXPANSION:
        raise yaml.YAMLError(
            f"YAML aliases expand the document to {expanded:,} nodes from {composed:,}; at most "
            f"{MAX_ALIAS_EXPANSION:,} more are read"
        )


_STR, _FLOAT, _MERGE = (f"tag:yaml.org,2002:{t}" for t in ("str", "float", "merge"))


def _check_value(node: yaml.Node, parts: list[Any]) -> None:
    """Refuse what a JSON-tagged node still holds that JSON has not: ``.nan`` and ``.inf``, a mapping key that is
    not a string (``1: x`` built a dict that sorting its keys raised TypeError on) and a key given twice."""
    where = json_path(parts) or "the top"
    if node.tag == _FLOAT and str(node.value).lower().lstrip("+-") in (".nan", ".inf"):
        raise _NotJson(f"a YAML {node.value} at {where} (JSON has no NaN or infinity)", node)
    if not isinstance(node, yaml.MappingNode):
        return
    seen: set[str] = set()
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag not in (_STR, _MERGE):
            kind = key.tag.rsplit(":", 1)[-1]
            raise _NotJson(f"a YAML {kind} key at {where} (a spec's keys are strings: quote it)", key)
        if key.tag == _STR and key.value in seen:
            raise _NotJson(f"the key {key.value!r} twice at {where}", key)
        seen.add(key.value)


class _NotJson(yaml.YAMLError):
    def __init__(self, problem: str, node: yaml.Node) -> None:
        super().__init__(problem)
        self.problem, self.problem_mark = problem, node.start_mark


def _children(node: yaml.Node) -> list[tuple[Any, yaml.Node]]:
    """A node's children, each with its path part (a key's text, an index; a key node is its own part)."""
    if isinstance(node, yaml.SequenceNode):
        return list(enumerate(node.value))
    if isinstance(node, yaml.MappingNode):
        pairs: list[tuple[Any, yaml.Node]] = []
        for key, value in node.value:
            part = key.value if isinstance(key, yaml.ScalarNode) else "?"
            pairs += [(part, key), (part, value)]
        return pairs
    return []
