"""The hooks side file (``--hooks``): our checks layered onto a tool spec of any form, keyed by tool name.

An OpenAI tools array or an MCP tools/list result declares argument schemas only. The side file adds what
they cannot say: the spec's top-level keys (``name``, ``hooks``, ``conversation_gives``, ``allow_no_tool``,
``initial_state``, ``given``, ``tasks``) and, per tool, ``refs``, ``produces``, ``invalidates``, ``precondition``,
``effect``, ``postcondition``, ``exposed_from_turn``, ``whole_arrays`` and ``conversation_gives``
(:data:`SIDE_SCHEMA`). It may name only tools the spec declares and set only keys the
spec leaves unset (:func:`check_layer`); :func:`prefix_exec.envs.custom.environment.load_spec` applies it.

One exception: an MCP ``tools/list`` result is what a server lists to one client at one moment (a server may list a
tool only to clients with a capability, or only after a login), so a side file written for the server may name
tools a listing lacks. Layered on such a listing, those tools' entries wait (:func:`split_unlisted`): left out of
this environment, named in :attr:`~prefix_exec.envs.custom.session.CustomEnvironment.unlisted`, and applied when a
listing has them; a call to such a tool meanwhile is an unknown tool (``schema``), as it is without a side file.
"""

from __future__ import annotations

from pathlib import Path

from prefix_exec.envs.custom.json_schema import compile_schema
from prefix_exec.envs.custom.spec_formats import SPEC_SCHEMA, read_document, schema_message
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping, JsonObject, json_path

#: The per-tool keys a side file may layer on: everything but the tool's name, description and schema.
LAYER_KEYS: tuple[str, ...] = (
    "refs",
    "produces",
    "invalidates",
    "precondition",
    "effect",
    "postcondition",
    "exposed_from_turn",
    "whole_arrays",
    "conversation_gives",
)
_TOOL_PROPERTIES: JsonMapping = SPEC_SCHEMA["properties"]["tools"]["items"]["properties"]
#: The hooks side file: our spec's top-level keys, with ``tools`` a mapping from tool name to layered keys.
SIDE_SCHEMA: JsonObject = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **{k: v for k, v in SPEC_SCHEMA["properties"].items() if k != "tools"},
        "tools": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {k: _TOOL_PROPERTIES[k] for k in LAYER_KEYS},
            },
        },
    },
    "$defs": SPEC_SCHEMA["$defs"],
}


def read_side_file(path: Path) -> JsonObject:
    """A validated hooks side file (:data:`SIDE_SCHEMA`)."""
    data = read_document(path, what="hooks file")
    errors = compile_schema(SIDE_SCHEMA).errors(data, bounded=False)
    if errors:
        raise InputError(
            schema_message(errors[0]),
            path=path,
            field=json_path(list(errors[0].absolute_path)) or None,
            hint="a hooks file holds hooks, conversation_gives, allow_no_tool, initial_state, given, tasks and "
            "tools: {TOOL_NAME: {refs, produces, invalidates, precondition, effect, postcondition, "
            "exposed_from_turn, whole_arrays, conversation_gives}}; see docs/custom.md",
        )
    return dict(data)


def split_unlisted(spec: JsonMapping, side: JsonMapping) -> tuple[JsonObject, tuple[str, ...]]:
    """``side`` without the entries of tools ``spec`` does not declare, and those tools' names (in the side file's
    order). For an MCP listing only (module docstring): every other spec declares its tools once and for all."""
    declared = {t["name"] for t in spec["tools"]}
    layers = side.get("tools") or {}
    unlisted = tuple(name for name in layers if name not in declared)
    if not unlisted:
        return dict(side), ()
    return {**side, "tools": {k: v for k, v in layers.items() if k in declared}}, unlisted


def check_layer(spec: JsonMapping, spec_path: str | Path, side: JsonMapping, side_path: Path) -> None:
    """Refuse a side file that names a tool the spec does not declare, or sets a key the spec sets too."""
    names = [t["name"] for t in spec["tools"]]
    for key in side:
        if key != "tools" and key in spec:
            raise InputError(
                f"{key!r} is set both here and in the tool spec {spec_path}",
                path=side_path,
                field=key,
                hint="keep it in one of the two files",
            )
    raw_tools = {t["name"]: t for t in spec["tools"]}
    for name, layer in (side.get("tools") or {}).items():
        if name not in raw_tools:
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            raise InputError(
                f"no tool named {name!r} in the tool spec {spec_path}",
                path=side_path,
                field=f"tools.{name}",
                hint=f"the spec declares: {shown}",
            )
        for key in layer:
            if key in raw_tools[name]:
                raise InputError(
                    f"{key!r} of tool {name!r} is set both here and in the tool spec {spec_path}",
                    path=side_path,
                    field=f"tools.{name}.{key}",
                    hint="keep it in one of the two files",
                )
