"""Hostile JSON Schemas and YAML specs for the hostile sweep (tests/test_hostile_sweep.py, registered as kind
``schemas``): argument schemas a transcript's own tools list may carry (each scored between two good
conversations), with the arguments of the call they check, and YAML tool specs that must be refused as a whole.
The references point at the sweep's canary URL and file; tests/envs/test_json_schema.py proves the same with its own
listener and canary for every reference keyword."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hostile_cases import CANARY_FILE, CANARY_URL, Case, register

_MIXED = [i if i % 2 else str(i) for i in range(40_000)]
_ROLLOUTS = Path(__file__).resolve().parents[1] / "examples" / "ticketing" / "rollouts.jsonl"


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"username": schema}}
    return schema


def _on(keyword: str, value: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"username": {keyword: value}}}


#: name -> (the tool's parameters schema, the call's arguments).
SCHEMAS: dict[str, tuple[Any, Any]] = {
    "ref-http": (_on("$ref", f"{CANARY_URL}/s.json"), None),
    "dynamic-ref-http": (_on("$dynamicRef", f"{CANARY_URL}/s.json"), None),
    "dynamic-ref-file": (_on("$dynamicRef", f"file://{CANARY_FILE}"), None),
    "ref-file-anchor": (_on("$ref", f"file://{CANARY_FILE}#here"), None),
    "dynamic-ref-missing-anchor": (_on("$dynamicRef", "#nowhere"), None),
    "ref-under-remote-id": (
        {"$id": f"{CANARY_URL}/a/", "$defs": {"n": {}}, "properties": {"username": {"$id": "b/", "$ref": "#/$defs/n"}}},
        None,
    ),
    "remote-schema": ({"$schema": f"{CANARY_URL}/meta", "type": "object"}, None),
    "recursive-ref-2019": (
        {"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveAnchor": True, "$recursiveRef": "#"},
        None,
    ),
    "ref-root": ({"$ref": "#", "type": "object"}, None),
    "ref-self": ({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, None),
    "ref-recursing-with-arguments": (
        {"type": "object", "properties": {"username": {"$ref": "#"}}},
        {"username": _deep(500)},
    ),
    "deep-300": (_deep(300), None),
    "pattern-nested-groups": (_on("pattern", "(" * 600 + "a" + ")" * 600), None),
    "pattern-catastrophic": (_on("pattern", "^(a|aa)+$"), {"username": "a" * 80 + "!"}),
    "pattern-properties-catastrophic": (
        {"type": "object", "patternProperties": {"^(a|aa)+$": {}}},
        {"a" * 80 + "!": 1},
    ),
    "pattern-expanding": (_on("pattern", "(?:a{1000}){1000}"), None),
    "pattern-invalid": (_on("pattern", "(["), None),
    "unique-items-40k-mixed": (_on("uniqueItems", True), {"username": [*_MIXED, [1], {"a": 1}]}),
    "draft4-enum-40k": ({"$schema": "http://json-schema.org/draft-04/schema#", "enum": [*_MIXED, [1]]}, None),
    "enum-40k-against-40k": (
        {"type": "object", "properties": {"username": {"type": "array", "items": {"enum": _MIXED}}}},
        {"username": _MIXED},
    ),
}

_ANCHORS = "x-anchors:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"  {c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
_TOOL = "tools:\n  - name: login\n    parameters: {type: object}\n"
#: name -> a YAML tool spec that must be refused (exit 2) with a reason.
YAML_SPECS: dict[str, str] = {
    "billion-laughs": _ANCHORS + "tools:\n  - name: login\n    parameters: {type: object, default: *i}\n",
    "alias-cycle": "tools:\n  - &t\n    name: login\n    parameters: {type: object, default: [*t]}\n",
    "given-date": _TOOL + "given:\n  day: [2024-01-01]\n",
    "given-set": _TOOL + "given:\n  ids: !!set {a, b}\n",
    "given-binary": _TOOL + "given:\n  blob: [!!binary aGVsbG8=]\n",
    "timestamp-in-schema": "tools:\n  - name: login\n    parameters: {type: object, const: 2024-01-01T10:00:00}\n",
}


def _conversation(task: str, tools: list[Any], arguments: Any) -> dict[str, Any]:
    function = {"name": "login", "arguments": json.dumps(arguments if arguments is not None else {"username": "sam"})}
    return {
        "task_id": task,
        "model": "m",
        "success": 1,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": function}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
        "tools": tools,
    }


@register("schemas")
def schema_cases() -> Iterator[Case]:
    """Each schema between two good conversations (``score transcripts --rollout-budget 5``); each YAML spec (and a
    spec whose hooks module does not parse) as ``score custom --tools`` on the ticketing rollouts."""
    good = [{"type": "function", "function": {"name": "login", "parameters": {"type": "object"}}}]
    for name, (schema, arguments) in SCHEMAS.items():
        tools = [{"type": "function", "function": {"name": "login", "parameters": schema}}]
        rows = [_conversation("g0", good, None), _conversation("hostile", tools, arguments)]
        text = "\n".join(json.dumps(r) for r in [*rows, _conversation("g1", good, None)]) + "\n"
        yield Case(
            f"schemas:{name}",
            {"in.jsonl": text},
            lambda d: [
                "score",
                "transcripts",
                str(d / "in.jsonl"),
                "--rollout-budget",
                "5",
                "--keep-going",
                "--out",
                str(d / "o"),
            ],
            "o",
            ("g0", "g1"),
        )
    hooks = {"hooks.py": "def pre(state, args)\n    return None\n"}  # the user's own hooks, not parsing
    with_hooks = "hooks: hooks.py\ntools:\n  - name: login\n    parameters: {type: object}\n    precondition: pre\n"
    specs: dict[str, dict[str, str | bytes]] = {n: {"spec.yaml": t} for n, t in YAML_SPECS.items()}
    specs["hooks-syntax"] = {"spec.yaml": with_hooks, **hooks}
    for name, files in specs.items():
        yield Case(
            f"schemas:yaml-{name}",
            files,
            lambda d: ["score", "custom", "--tools", str(d / "spec.yaml"), str(_ROLLOUTS), "--out", str(d / "o")],
            "o",
        )
