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
The spec may also be an OpenAI ``tools`` array or an MCP ``tools/list`` result, with a hooks side file
layered on top (:mod:`prefix_exec.envs.spec_formats`).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
from jsonschema.validators import validator_for

from prefix_exec.envs.spec_formats import SPEC_SCHEMA as SPEC_SCHEMA
from prefix_exec.envs.spec_formats import read_document, schema_problem, to_spec, tools_list_spec
from prefix_exec.envs.spec_layers import check_layer, read_side_file
from prefix_exec.errors import InputError, ReplayError
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


def read_spec(path: Path) -> tuple[dict[str, Any], str]:
    """A tool spec file as a validated spec dict of our format, and the form it was read as (see
    :func:`load_spec`)."""
    if not path.is_file():
        raise InputError("no such tool spec file", path=path, hint="pass --tools with a JSON or YAML spec")
    return to_spec(read_document(path, what="tool spec"), path=path)


def load_spec(path: str | Path, *, hooks: str | Path | None = None) -> CustomEnvironment:
    """Read and validate a tool spec file and load its hooks.

    The file (``.json``, or YAML otherwise) is our spec, an OpenAI ``tools`` array or an MCP ``tools/list``
    result (:mod:`prefix_exec.envs.spec_formats`). ``hooks`` is an optional side file that layers ``refs``,
    ``produces``, ``invalidates``, hooks, state and tasks onto it, keyed by tool name.
    """
    p = Path(path)
    data, form = read_spec(p)
    if hooks is None:
        return environment_from_spec(data, p, form=form)
    side_path = Path(hooks)
    if not side_path.is_file():
        raise InputError("no such hooks file", path=side_path, hint="pass --hooks with a YAML or JSON file")
    side = read_side_file(side_path)
    check_layer(data, p, side, side_path)
    return environment_from_spec(data, p, form=form, side=side, side_path=side_path)


def environment_from_tools(
    tools: Any, *, name: str, path: str | Path, line: int | None = None, prefix: str = ""
) -> CustomEnvironment:
    """A schema-only environment from a transcript's own ``tools`` list (OpenAI function tools or MCP tools),
    found at ``{prefix}tools`` in record ``line`` of ``path``. Raises :class:`InputError` naming that place
    when it is malformed."""
    spec = tools_list_spec(tools, path=path, line=line, prefix=prefix)
    form = "mcp" if any(isinstance(t, Mapping) and "inputSchema" in t for t in tools) else "openai"
    return environment_from_spec({**spec, "name": name}, Path(path), form=form)


def environment_from_spec(
    data: Mapping[str, Any],
    path: Path,
    *,
    form: str = "spec",
    side: Mapping[str, Any] | None = None,
    side_path: Path | None = None,
) -> CustomEnvironment:
    """The environment of a validated spec dict (``path``: where it was read, for errors and relative hooks),
    with an optional validated side file (:func:`~prefix_exec.envs.spec_formats.check_layer` passed)."""
    module = _load_hooks(data["hooks"], path) if data.get("hooks") else None
    layers: Mapping[str, Any] = {}
    side_module = None
    if side is not None and side_path is not None:
        layers = side.get("tools") or {}
        # A side file without its own module names functions of the spec's module.
        side_module = _load_hooks(side["hooks"], side_path) if side.get("hooks") else module
    tools = {}
    for i, raw in enumerate(data["tools"]):
        tool = _tool(raw, module, path, f"tools[{i}]")
        if tool.name in tools:
            raise InputError(f"tool {tool.name!r} is declared twice", path=path, field=f"tools[{i}].name")
        if tool.name in layers and side_path is not None:
            tool = _layered(tool, layers[tool.name], side_module, side_path)
        tools[tool.name] = tool
    top = {**data, **{k: v for k, v in (side or {}).items() if k != "tools"}}
    base_state = top.get("initial_state", {})
    base_allow = bool(top.get("allow_no_tool", False))
    base_given = top.get("given", {})
    tasks = {
        str(tid): TaskSpec(
            initial_state=t.get("initial_state", base_state),
            allow_no_tool=bool(t.get("allow_no_tool", base_allow)),
            given={k: tuple(v) for k, v in {**base_given, **t.get("given", {})}.items()},
        )
        for tid, t in (top.get("tasks") or {}).items()
    }
    default = TaskSpec(base_state, base_allow, {k: tuple(v) for k, v in base_given.items()})
    return CustomEnvironment(top.get("name", path.stem), tools, tasks, default if not tasks else None, form=form)


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
            hint="give a .py file relative to this file, or an importable dotted module path",
        ) from None


def _tool(raw: Mapping[str, Any], module: ModuleType | None, path: Path, where: str) -> ToolSpec:
    parameters = raw.get("parameters", {"type": "object", "properties": {}, "additionalProperties": False})
    problem = schema_problem(parameters)
    if problem is not None:
        raise InputError(problem, path=path, field=f"{where}.parameters")
    hooks = _hooks(raw, module, path, where)
    return ToolSpec(
        name=raw["name"],
        parameters=parameters,
        validator=validator_for(parameters, default=jsonschema.Draft202012Validator)(parameters),
        refs=raw.get("refs", {}),
        produces=raw.get("produces", {}),
        invalidates=raw.get("invalidates", {}),
        precondition=hooks["precondition"],
        effect=hooks["effect"],
        exposed_from_turn=raw.get("exposed_from_turn", 0),
    )


def _layered(tool: ToolSpec, layer: Mapping[str, Any], module: ModuleType | None, path: Path) -> ToolSpec:
    """``tool`` with a side file's keys for it (none of which the spec sets: check_layer refused that)."""
    hooks = _hooks(layer, module, path, f"tools.{tool.name}")
    return replace(
        tool,
        refs=layer.get("refs", tool.refs),
        produces=layer.get("produces", tool.produces),
        invalidates=layer.get("invalidates", tool.invalidates),
        precondition=hooks["precondition"] or tool.precondition,
        effect=hooks["effect"] or tool.effect,
        exposed_from_turn=layer.get("exposed_from_turn", tool.exposed_from_turn),
    )


def _hooks(raw: Mapping[str, Any], module: ModuleType | None, path: Path, where: str) -> dict[str, Hook | None]:
    """The precondition and effect functions ``raw`` names, looked up in ``module`` (an allow-list: only
    names the user's own spec gives, in the user's own hooks module)."""
    hooks: dict[str, Hook | None] = {}
    for kind in ("precondition", "effect"):
        name = raw.get(kind)
        if name is None:
            hooks[kind] = None
            continue
        fn = getattr(module, name, None) if module is not None else None
        if not callable(fn):
            raise InputError(
                f"hook {name!r} not found" + ("" if module else ": the file names no 'hooks' module"),
                path=path,
                field=f"{where}.{kind}",
            )
        hooks[kind] = fn
    return hooks


class CustomEnvironment:
    """An :class:`~prefix_exec.envs.base.Environment` over a loaded tool spec."""

    def __init__(
        self,
        name: str,
        tools: Mapping[str, ToolSpec],
        tasks: Mapping[str, TaskSpec],
        default: TaskSpec | None,
        *,
        form: str = "spec",
    ) -> None:
        self.name = name
        self.tools = dict(tools)
        self.tasks = dict(tasks)
        self.default = default
        #: The form the spec was read as: ``spec``, ``openai`` or ``mcp`` (see spec_formats.FORM_NAMES).
        self.form = form

    @property
    def schema_only(self) -> bool:
        """True when no tool declares refs, produces, invalidates or hooks: only the schema checks apply
        (names, exposure and arguments), as for an OpenAI or MCP tool list without a side file."""
        return not any(t.refs or t.produces or t.invalidates or t.precondition or t.effect for t in self.tools.values())

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
            outcome = _run_hook(tool, "precondition", tool.precondition, self.state, args)
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
        result = _run_hook(tool, "effect", tool.effect, state, args) if tool.effect is not None else None
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


def _run_hook(tool: ToolSpec, kind: str, hook: Hook, state: dict[str, Any], args: dict[str, Any]) -> Any:
    """Call a user hook; an exception in it is a :class:`ReplayError` for this rollout (a bug in the hooks
    module, named with the raising line), so it is one skipped unit under ``--keep-going``, not a traceback."""
    try:
        return hook(state, args)
    except Exception as exc:  # the user's code may raise anything; budgets (BaseException) pass through
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
        name = getattr(hook, "__name__", repr(hook))
        raise ReplayError(
            f"the {kind} hook {name!r} of tool {tool.name!r} raised {type(exc).__name__}: {exc}{where}; "
            "fix the hooks module (hooks get the task's state dict and the schema-valid arguments)"
        ) from None


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
