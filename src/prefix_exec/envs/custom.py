"""Score rollouts on your own tools: a tool spec file (JSON or YAML) plus optional Python hooks.

The spec declares each tool's arguments as JSON Schema, which values it produces and consumes, and hooks
for preconditions and state effects. ``docs/custom.md`` documents the format; ``examples/ticketing`` is a
complete example. Per action the session checks, collecting every cause that applies:

1. the tool exists and is exposed at the call's turn (``exposed_from_turn``) -> ``schema``;
2. the arguments validate against the tool's JSON Schema -> ``schema``;
3. each argument named in ``refs`` holds a value an earlier accepted call produced (or the task gave)
   -> ``dependency``, and that value is still current (not consumed by an ``invalidates``)
   -> ``state_consistency``;
4. the ``precondition`` hook accepts -> ``precondition`` (or the label the hook returns);
5. the ``effect`` hook applies the call -> it may reject with a label of its own.

Checks 3 to 5 run only when the arguments are schema-valid, since hooks may rely on the schema. Hooks are
the user's trusted code, loaded from the spec; model output only ever reaches them as validated JSON values.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import yaml

from prefix_exec.errors import InputError
from prefix_exec.trajectory import FailureLabel, ToolCall, Verdict

Hook = Callable[[dict[str, Any], dict[str, Any]], Any]


@dataclass(frozen=True)
class Reject:
    """Returned by a hook to reject the action: the benchmark does not accept the transition."""

    label: FailureLabel | str
    reason: str

    @property
    def cause(self) -> FailureLabel:
        return self.label if isinstance(self.label, FailureLabel) else FailureLabel.parse(self.label)


@dataclass(frozen=True)
class ToolSpec:
    """One declared tool. ``produces`` maps a value kind to a result path (``id``, ``items[*].id``, ``$``)."""

    name: str
    parameters: Mapping[str, Any]
    validator: Any = field(repr=False, compare=False)
    refs: Mapping[str, str] = field(default_factory=dict)
    produces: Mapping[str, str] = field(default_factory=dict)
    invalidates: Mapping[str, str] = field(default_factory=dict)
    precondition: Hook | None = None
    effect: Hook | None = None
    exposed_from_turn: int = 0


@dataclass(frozen=True)
class TaskSpec:
    initial_state: Mapping[str, Any]
    allow_no_tool: bool
    given: Mapping[str, tuple[Any, ...]]


SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["tools"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "hooks": {"type": "string"},
        "allow_no_tool": {"type": "boolean"},
        "initial_state": {"type": "object"},
        "given": {"$ref": "#/$defs/given"},
        "tasks": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "description": {"type": "string"},
                    "initial_state": {"type": "object"},
                    "allow_no_tool": {"type": "boolean"},
                    "given": {"$ref": "#/$defs/given"},
                },
            },
        },
        "tools": {
            "type": "array",
            "minItems": 1,
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
                    "exposed_from_turn": {"type": "integer", "minimum": 0},
                },
            },
        },
    },
    "$defs": {"given": {"type": "object", "additionalProperties": {"type": "array"}}},
}


def load_spec(path: str | Path) -> CustomEnvironment:
    """Read and validate a tool spec file (``.json``, ``.yaml`` or ``.yml``) and load its hooks."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such tool spec file", path=p, hint="pass --tools with a JSON or YAML spec")
    try:
        text = p.read_text(encoding="utf-8")
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot parse the tool spec: {exc}", path=p) from None
    errors = sorted(jsonschema.Draft202012Validator(SPEC_SCHEMA).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        raise InputError(
            e.message, path=p, field=_json_path(e.absolute_path) or None, hint="see docs/custom.md for the format"
        )
    module = _load_hooks(data.get("hooks"), p) if data.get("hooks") else None
    tools = {}
    for i, raw in enumerate(data["tools"]):
        tool = _tool(raw, module, p, f"tools[{i}]")
        if tool.name in tools:
            raise InputError(f"tool {tool.name!r} is declared twice", path=p, field=f"tools[{i}].name")
        tools[tool.name] = tool
    base_state = data.get("initial_state", {})
    base_allow = bool(data.get("allow_no_tool", False))
    base_given = data.get("given", {})
    tasks = {
        str(tid): TaskSpec(
            initial_state=t.get("initial_state", base_state),
            allow_no_tool=bool(t.get("allow_no_tool", base_allow)),
            given={k: tuple(v) for k, v in {**base_given, **t.get("given", {})}.items()},
        )
        for tid, t in (data.get("tasks") or {}).items()
    }
    default = TaskSpec(base_state, base_allow, {k: tuple(v) for k, v in base_given.items()})
    return CustomEnvironment(data.get("name", p.stem), tools, tasks, default if not tasks else None)


def _json_path(parts: Any) -> str:
    return "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in parts).lstrip(".")


def _load_hooks(ref: str, spec_path: Path) -> ModuleType:
    """A hooks module, from a ``.py`` path relative to the spec or a dotted module path."""
    try:
        if ref.endswith(".py"):
            file = (spec_path.parent / ref).resolve()
            module_spec = importlib.util.spec_from_file_location(f"prefix_exec_hooks_{file.stem}", file)
            if module_spec is None or module_spec.loader is None or not file.is_file():
                raise FileNotFoundError(file)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            return module
        return importlib.import_module(ref)
    except (ImportError, FileNotFoundError) as exc:
        raise InputError(
            f"cannot load hooks {ref!r}: {exc}",
            path=spec_path,
            field="hooks",
            hint="give a .py file relative to the spec, or an importable dotted module path",
        ) from None


def _tool(raw: Mapping[str, Any], module: ModuleType | None, path: Path, where: str) -> ToolSpec:
    parameters = raw.get("parameters", {"type": "object", "properties": {}, "additionalProperties": False})
    try:
        jsonschema.Draft202012Validator.check_schema(parameters)
    except jsonschema.SchemaError as exc:
        raise InputError(f"not a valid JSON Schema: {exc.message}", path=path, field=f"{where}.parameters") from None
    hooks: dict[str, Hook | None] = {}
    for kind in ("precondition", "effect"):
        name = raw.get(kind)
        if name is None:
            hooks[kind] = None
            continue
        fn = getattr(module, name, None) if module is not None else None
        if not callable(fn):
            raise InputError(
                f"hook {name!r} not found" + ("" if module else ": the spec names no 'hooks' module"),
                path=path,
                field=f"{where}.{kind}",
            )
        hooks[kind] = fn
    return ToolSpec(
        name=raw["name"],
        parameters=parameters,
        validator=jsonschema.Draft202012Validator(parameters),
        refs=raw.get("refs", {}),
        produces=raw.get("produces", {}),
        invalidates=raw.get("invalidates", {}),
        precondition=hooks["precondition"],
        effect=hooks["effect"],
        exposed_from_turn=raw.get("exposed_from_turn", 0),
    )


class CustomEnvironment:
    """An :class:`~prefix_exec.envs.base.Environment` over a loaded tool spec."""

    def __init__(
        self, name: str, tools: Mapping[str, ToolSpec], tasks: Mapping[str, TaskSpec], default: TaskSpec | None
    ) -> None:
        self.name = name
        self.tools = dict(tools)
        self.tasks = dict(tasks)
        self.default = default

    def start(self, task_id: str) -> CustomSession:
        task = self.tasks.get(task_id, self.default)
        if task is None:
            raise KeyError(task_id)
        produced: dict[str, dict[str, bool]] = {
            kind: {_key(v): True for v in values} for kind, values in task.given.items()
        }
        return CustomSession(self, task, copy.deepcopy(dict(task.initial_state)), produced)


class CustomSession:
    """State of one task: the hooks' state dict and the produced-value registry per kind."""

    def __init__(
        self, env: CustomEnvironment, task: TaskSpec, state: dict[str, Any], produced: dict[str, dict[str, bool]]
    ) -> None:
        self.env, self.task, self.state, self.produced = env, task, state, produced

    def fork(self) -> CustomSession:
        return CustomSession(
            self.env, self.task, copy.deepcopy(self.state), {k: dict(v) for k, v in self.produced.items()}
        )

    def finish_without_tools(self) -> Verdict:
        if self.task.allow_no_tool:
            return Verdict.accept(notes=("the task allows finishing without a tool call",))
        return Verdict.reject(
            FailureLabel.PRECONDITION, "the task needs tool use, but the agent stopped before any tool call"
        )

    def step(self, call: ToolCall) -> Verdict:
        tool = self.env.tools.get(call.name)
        if tool is None:
            return Verdict.reject(FailureLabel.SCHEMA, f"unknown tool {call.name!r}")
        causes: list[FailureLabel] = []
        reasons: list[str] = []
        if call.turn < tool.exposed_from_turn:
            causes.append(FailureLabel.SCHEMA)
            reasons.append(f"tool {tool.name!r} is not exposed before turn {tool.exposed_from_turn}")
        args = dict(call.arguments)
        errors = sorted(tool.validator.iter_errors(args), key=lambda e: list(e.path))
        if errors:
            causes.append(FailureLabel.SCHEMA)
            reasons.extend(f"argument {_json_path(e.absolute_path) or '(object)'}: {e.message}" for e in errors)
            return Verdict.reject(causes, "; ".join(reasons))
        for param, kind in tool.refs.items():
            if param not in args:
                continue
            current = self.produced.get(kind, {}).get(_key(args[param]))
            if current is None:
                causes.append(FailureLabel.DEPENDENCY)
                reasons.append(f"{param}={args[param]!r} is no {kind} that an earlier call produced or the task gave")
            elif not current:
                causes.append(FailureLabel.STATE_CONSISTENCY)
                reasons.append(f"{param}={args[param]!r} refers to a {kind} that is no longer current")
        if tool.precondition is not None:
            outcome = tool.precondition(self.state, args)
            if isinstance(outcome, Reject):
                causes.append(outcome.cause)
                reasons.append(outcome.reason)
            elif outcome:
                causes.append(FailureLabel.PRECONDITION)
                reasons.append(str(outcome))
        if causes:
            return Verdict.reject(causes, "; ".join(reasons))
        # Effects run on a copy so a rejected transition leaves the state as it was.
        state = copy.deepcopy(self.state) if tool.effect is not None else self.state
        result = tool.effect(state, args) if tool.effect is not None else None
        if isinstance(result, Reject):
            return Verdict.reject(result.cause, result.reason)
        self.state = state
        self._register(tool, args, result)
        return Verdict.accept(result)

    def _register(self, tool: ToolSpec, args: Mapping[str, Any], result: Any) -> None:
        for kind, param in tool.invalidates.items():
            if param in args:
                self.produced.setdefault(kind, {})[_key(args[param])] = False
        for kind, path in tool.produces.items():
            for value in _select(result, path):
                self.produced.setdefault(kind, {})[_key(value)] = True


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _select(value: Any, path: str) -> list[Any]:
    """Values at a dotted path; ``[*]`` fans out over a list and ``$`` is the whole value."""
    found = [value]
    for part in [p for p in path.split(".") if p and p != "$"]:
        fan = part.endswith("[*]")
        name = part[:-3] if fan else part
        nxt: list[Any] = []
        for item in found:
            if name:
                item = item.get(name) if isinstance(item, Mapping) else None
            if fan and isinstance(item, list):
                nxt.extend(item)
            elif item is not None and not fan:
                nxt.append(item)
        found = nxt
    return [v for v in found if v is not None]
