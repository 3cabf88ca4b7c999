"""The forms a tool spec can take, read into our spec format (``docs/custom.md``).

``--tools`` accepts three forms, told apart by their shape (never by a name inside the file):

- ``spec``: our own spec, an object with ``tools: [{name, parameters, refs, produces, ...}]`` (JSON or YAML);
- ``openai``: an OpenAI ``tools`` array, ``[{"type": "function", "function": {"name", "description",
  "parameters"}}]`` (Chat Completions). The flat Responses-API items ``{"type": "function", "name",
  "parameters"}``, the legacy ``functions`` items ``{"name", "parameters"}`` and Anthropic's tools ``{"name",
  "description", "input_schema"}`` are read too, and so is an object holding such an array under ``tools`` (a
  request body, a fine-tuning line);
- ``mcp``: an MCP ``tools/list`` result, ``{"tools": [{"name", "description", "inputSchema", ...}]}``, or the
  JSON-RPC response that wraps it in ``result``.

The two ecosystem forms declare argument schemas only: converted, each tool keeps its name, description and
JSON Schema, and nothing else applies; a hooks side file layers the rest on (:mod:`envs.custom.spec_layers`).
An empty list is a valid spec declaring no tool: every call is then an unknown tool, and a rollout without a call
is executable (:mod:`envs.custom.environment`). Every error names the file, the JSON path and the form it was read as.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jsonschema import ValidationError

from prefix_exec.envs.custom.json_schema import compile_schema, schema_problem
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping, JsonObject, depth_problem, json_path
from prefix_exec.records.jsonl import MAX_LINE_CHARS, check_regular_file, json_problem

#: What each form is called in messages.
FORM_NAMES: Mapping[str, str] = {
    "spec": "a prefix-exec tool spec",
    "openai": "an OpenAI tools array",
    "mcp": "an MCP tools/list result",
}
_FORM_HINTS: Mapping[str, str] = {
    "spec": "see docs/custom.md for the format",
    "openai": 'expected [{"type": "function", "function": {"name", "description", "parameters"}}, ...]',
    "mcp": 'expected {"tools": [{"name", "description", "inputSchema": {"type": "object", ...}}, ...]}',
}
#: Largest spec or side file read, in characters (a spec is kilobytes; a bigger file is an input error).
MAX_SPEC_CHARS = MAX_LINE_CHARS

#: What a spec sets for all its tasks and an entry of its ``tasks`` may set for one task.
_TASK_SETTINGS: JsonObject = {
    "description": {"type": "string"},
    "initial_state": {"type": "object"},
    "allow_no_tool": {"type": "boolean"},
    "given": {"$ref": "#/$defs/given"},
}
SPEC_SCHEMA: JsonObject = {
    "type": "object",
    "required": ["tools"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "hooks": {"type": "string"},
        "conversation_gives": {"$ref": "#/$defs/conversation_gives"},
        **_TASK_SETTINGS,
        "tasks": {
            "type": "object",
            "additionalProperties": {"type": "object", "additionalProperties": False, "properties": _TASK_SETTINGS},
        },
        "tools": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "description": {"type": "string"},
                    "parameters": {"type": "object"},
                    "refs": {"type": "object", "additionalProperties": {"type": "string"}},
                    "produces": {"type": "object", "additionalProperties": {"type": "string"}},
                    "invalidates": {"type": "object", "additionalProperties": {"type": "string"}},
                    "precondition": {"type": "string"},
                    "effect": {"type": "string"},
                    "postcondition": {"type": "string"},
                    "exposed_from_turn": {"type": "integer", "minimum": 0},
                    "whole_arrays": {"type": "boolean"},
                    "conversation_gives": {"type": "boolean"},
                },
            },
        },
    },
    "$defs": {
        "given": {"type": "object", "additionalProperties": {"type": "array"}},
        # true/false, or {KIND: true/false} (kinds not named: true); see envs.custom.session.CustomEnvironment.gives
        "conversation_gives": {"type": ["boolean", "object"], "additionalProperties": {"type": "boolean"}},
    },
}

_OPENAI_FUNCTION: JsonObject = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": ["string", "null"]},
        "parameters": {"type": ["object", "null"]},
        "input_schema": {"type": ["object", "null"]},
        "strict": {"type": ["boolean", "null"]},
    },
}
_MCP_RESULT: JsonObject = {
    "type": "object",
    "required": ["tools"],
    "properties": {
        "tools": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "inputSchema"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "title": {"type": "string"},
                    "description": {"type": "string"},
                    "inputSchema": {
                        "type": "object",
                        "required": ["type"],
                        "properties": {"type": {"const": "object"}},
                    },
                    "outputSchema": {"type": "object"},
                    "annotations": {"type": "object"},
                },
            },
        },
        "nextCursor": {"type": ["string", "null"]},
    },
}


#: The keys of an MCP tools/list result (``_meta`` is the protocol's own metadata).
_MCP_RESULT_KEYS = frozenset({"tools", "nextCursor", "_meta"})


class _Where:
    """Where a document came from (file, line of a JSONL file, JSON path of the list in it), for errors."""

    def __init__(self, path: str | Path, line: int | None, prefix: str, form: str) -> None:
        self.path, self.line, self.prefix, self.form = path, line, prefix, form

    def fail(self, message: str, parts: Sequence[Any] = (), hint: str | None = None) -> InputError:
        field = self.prefix + json_path(parts, leading=bool(self.prefix))
        hint = hint or f"read as {FORM_NAMES[self.form]}: {_FORM_HINTS[self.form]}"
        return InputError(message, path=self.path, line=self.line, field=field or None, hint=hint)

    def validate(self, schema: JsonMapping, data: Any, parts: Sequence[Any] = ()) -> None:
        errors = compile_schema(schema).errors(data, bounded=False)
        if errors:
            raise self.fail(schema_message(errors[0]), [*parts, *errors[0].absolute_path])


def schema_message(error: ValidationError) -> str:
    """A validation error in one short line: jsonschema's own message quotes the whole offending value."""
    if error.validator == "type":
        wanted = error.validator_value
        names = " or ".join(wanted) if isinstance(wanted, list) else str(wanted)
        return f"expected {names}, got {_json_type(error.instance)}"
    text = str(error.message)
    return text if len(text) <= 200 else text[:197] + "..."


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object" if isinstance(value, Mapping) else type(value).__name__


def read_document(path: Path, *, what: str) -> Any:
    """A JSON (``.json``) or YAML document from a regular file; an :class:`InputError` when unreadable."""
    check_regular_file(path)
    try:
        with path.open(encoding="utf-8") as fh:
            text = fh.read(MAX_SPEC_CHARS + 1)
    except UnicodeDecodeError as exc:  # the decoder's offsets are its chunk's: find the byte in the file
        with path.open("rb") as fh:
            raw = fh.read(4 * (MAX_SPEC_CHARS + 1))
        bad = next((i for i, line in enumerate(raw.split(b"\n"), 1) if not _utf8(line)), None)
        raise InputError(
            f"the {what} is not UTF-8 text ({exc.reason})", path=path, line=bad, hint="save it as UTF-8"
        ) from None
    if len(text) > MAX_SPEC_CHARS:
        raise InputError(f"the {what} is larger than {MAX_SPEC_CHARS:,} characters", path=path)
    other = _other_file_kind(text)
    if other:
        raise InputError(
            f"this is {other}, not a {what}",
            path=path,
            hint="--tools takes the tool list (our JSON/YAML spec, an OpenAI tools array or an MCP tools/list "
            "result, as examples/ticketing/tools.yaml); the file to score goes last, without an option"
            if what == "tool spec"
            else None,
        )
    try:
        document = json.loads(text) if path.suffix == ".json" else _yaml_document(text, what, path)
    except json.JSONDecodeError as exc:
        message = f"cannot parse the {what}: {json_problem(exc)}"
        raise InputError(message, path=path, line=exc.lineno) from None
    except (RecursionError, ValueError) as exc:  # nesting past the recursion limit, an over-long integer
        reason = str(exc).split(";")[0] or "nested too deeply"
        raise InputError(f"cannot parse the {what}: {reason}", path=path) from None
    # The same bound as every reader (a run's workers pickle what a spec's state and hooks build from it).
    problem = depth_problem(document)
    if problem is not None:
        raise InputError(f"the {what} is {problem}", path=path, hint="a spec's values are a few levels deep")
    return document


def _yaml_document(text: str, what: str, path: Path) -> Any:
    """The YAML document ``text`` (:func:`~prefix_exec.envs.custom.yaml_document.read_yaml`), a parse error as an
    input error naming its line. PyYAML is imported here: a JSON tools list, the most common, never needs it, and
    its import is 20 ms of every command's start."""
    import yaml

    from prefix_exec.envs.custom.yaml_document import read_yaml

    try:
        return read_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"cannot parse the {what}: {problem}", path=path, line=line) from None


def _other_file_kind(text: str) -> str:
    """What a file passed where a spec belongs is instead, judged by its first line when that line is a whole
    JSON object: ``a rollouts file (...)``, ``a scored records file`` or, for JSON Lines of two or more
    conversations, ``a transcripts file`` (one conversation with ``tools`` is a request body, which is a spec);
    "" otherwise."""
    lines = [line for line in text.splitlines() if line.strip()]
    rows = []
    for line in lines[:2]:
        try:
            rows.append(json.loads(line))
        except (ValueError, RecursionError):
            break
    if not rows or not isinstance(rows[0], Mapping):
        return ""
    row = rows[0]
    if row.get("kind") == "record" or {"T", "fed"} <= row.keys():
        return "a scored records file (JSON Lines of replayed rollouts)"
    if row.get("kind") == "rollout" or "actions" in row:
        return "a rollouts file (JSON Lines of tool calls to score)"
    conversation = "messages" in row or "traj" in row or {"input", "output"} <= row.keys()
    if conversation and len(rows) == 2 and isinstance(rows[1], Mapping):
        return "a transcripts file (JSON Lines of conversations)"
    return ""


def detect_form(data: Any) -> str:
    """``spec``, ``openai`` or ``mcp`` by the document's shape (see the module docstring)."""
    if isinstance(data, list):
        return "openai"
    if not isinstance(data, Mapping):
        return "spec"
    if "jsonrpc" in data or ("result" in data and "tools" not in data):
        return "mcp"
    tools = data.get("tools")
    if tools == [] and set(data) <= _MCP_RESULT_KEYS:
        return "mcp"  # an empty tools/list result: nothing but the (empty) list
    if isinstance(tools, list):
        items = [t for t in tools if isinstance(t, Mapping)]
        if any("inputSchema" in t for t in items):
            return "mcp"
        if any(t.get("type") == "function" or "function" in t or "input_schema" in t for t in items):
            return "openai"
    return "spec"


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def to_spec(data: Any, *, path: str | Path, line: int | None = None, prefix: str = "") -> tuple[JsonObject, str]:
    """The document as a validated spec dict of our format, and the form it was read as.

    ``path``, ``line`` and ``prefix`` (the JSON path of ``data`` inside its file) locate errors.
    """
    form = detect_form(data)
    where = _Where(path, line, prefix, form)
    if form == "openai":
        tools = data if isinstance(data, list) else data["tools"]
        return openai_spec(tools, where, [] if isinstance(data, list) else ["tools"]), form
    if form == "mcp":
        return _mcp_spec(data, where), form
    where.validate(SPEC_SCHEMA, data)
    return dict(data), form


def tools_list_spec(tools: Any, *, path: str | Path, line: int | None = None, prefix: str = "") -> JsonObject:
    """A transcript's own ``tools`` list, found at ``{prefix}tools`` in record ``line`` of ``path``, as a spec
    dict: OpenAI function tools, or MCP tools (items with an ``inputSchema``)."""
    if isinstance(tools, list) and any(isinstance(t, Mapping) and "inputSchema" in t for t in tools):
        return _mcp_spec({"tools": tools}, _Where(path, line, prefix.rstrip("."), "mcp"))
    return openai_spec(tools, _Where(path, line, prefix + "tools", "openai"), [])


def openai_spec(tools: Any, where: _Where, parts: list[Any]) -> JsonObject:
    if not isinstance(tools, list):
        raise where.fail(f"expected a list of tools, got {type(tools).__name__}", parts)
    converted: list[JsonObject] = []
    seen: set[str] = set()
    for i, item in enumerate(tools):
        at = [*parts, i]
        if not isinstance(item, Mapping):
            raise where.fail(f"expected a tool object, got {type(item).__name__}", at)
        kind = item.get("type", "function")
        # Anthropic's tools name their schema input_schema; a user-defined one may say type "custom".
        key = "input_schema" if "input_schema" in item and "function" not in item else "parameters"
        if kind != "function" and not (key == "input_schema" and kind == "custom"):
            raise where.fail(
                f"only function tools can be replayed, this is a {kind!r} tool",
                [*at, "type"],
                hint="drop the built-in tools from the list: replay checks calls of declared functions",
            )
        nested = "function" in item
        function = item["function"] if nested else item
        fn_at = [*at, "function"] if nested else at
        where.validate(_OPENAI_FUNCTION, function, fn_at)
        converted.append(_tool(function, function.get(key), where, fn_at, key, seen))
    return {"tools": converted}


def _mcp_spec(data: JsonMapping, where: _Where) -> JsonObject:
    parts: list[Any] = []
    if "jsonrpc" in data or ("result" in data and "tools" not in data):
        if "error" in data:
            error = data["error"] if isinstance(data["error"], Mapping) else {}
            raise where.fail(
                f"a JSON-RPC error response ({error.get('code')}: {error.get('message')}), not a tools/list result",
                ["error"],
                hint="save the response to a successful tools/list request",
            )
        if not isinstance(data.get("result"), Mapping):
            raise where.fail("a JSON-RPC response without a 'result' object", ["result"])
        data, parts = data["result"], ["result"]
    where.validate(_MCP_RESULT, data, parts)
    if data.get("nextCursor") is not None:
        raise where.fail(
            "one page of a paginated tools/list (nextCursor is set): tools on later pages would be unknown",
            [*parts, "nextCursor"],
            hint="request the later pages (params.cursor) and put all their tools in one 'tools' list",
        )
    converted: list[JsonObject] = []
    seen: set[str] = set()
    for i, tool in enumerate(data["tools"]):
        converted.append(_tool(tool, tool["inputSchema"], where, [*parts, "tools", i], "inputSchema", seen))
    return {"tools": converted}


def _tool(raw: JsonMapping, schema: Any, where: _Where, at: list[Any], key: str, seen: set[str]) -> JsonObject:
    """One converted tool: name, description, and its argument schema (checked here, with the path)."""
    if raw["name"] in seen:
        raise where.fail(f"tool {raw['name']!r} is declared twice", [*at, "name"])
    seen.add(raw["name"])
    tool: JsonObject = {"name": raw["name"]}
    if isinstance(raw.get("description"), str):
        tool["description"] = raw["description"]
    if schema is not None:
        if schema.get("type", "object") != "object":
            message = f"arguments are an object, but the schema's type is {schema['type']!r}"
            raise where.fail(message, [*at, key, "type"])
        problem = schema_problem(schema)
        if problem is not None:
            raise where.fail(problem, [*at, key])
        tool["parameters"] = dict(schema)
    return tool
