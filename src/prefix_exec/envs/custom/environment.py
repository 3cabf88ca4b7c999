"""Score rollouts on your own tools: a tool spec file (JSON or YAML) plus optional Python hooks.

The spec declares each tool's arguments as JSON Schema, which values it produces and consumes, and hooks
for preconditions and state effects. ``docs/custom.md`` documents the format; ``examples/ticketing`` is a
complete example. Per action the session checks, collecting every cause that applies:

1. the tool exists and is exposed at the call's turn (``exposed_from_turn``) -> ``schema``;
2. the arguments validate against the tool's JSON Schema -> ``schema``;
3. each argument named in ``refs`` holds a value an earlier accepted call produced, the task gave, or an earlier
   user or system message of the conversation gave (:mod:`prefix_exec.envs.custom.mentions`; off where
   ``conversation_gives`` says so) -> ``dependency``, and that value is still current (not consumed by an
   ``invalidates``) -> ``state_consistency``;
4. the ``precondition`` hook accepts -> ``precondition`` (or the label the hook returns);
5. the ``effect`` hook applies the call -> it may reject with a label of its own;
6. when all of ours accept, the call's recorded outcome, if the log says the tool refused it (an error flag, or
   a reply the error pattern matches) -> the classifier's label (:mod:`prefix_exec.envs.custom.evidence`).

Checks 3 to 5 run only when the arguments are schema-valid, since hooks may rely on the schema. Hooks are
the user's trusted code, loaded from the spec; model output only ever reaches them as validated JSON values.
An accepted call's ``produces`` read the effect hook's result, or the recorded result when no effect hook
simulates the tool. The spec may also be an OpenAI ``tools`` array or an MCP ``tools/list`` result, with a hooks
side file layered on top (:mod:`prefix_exec.envs.custom.spec_formats`). The environment and its sessions are in
:mod:`prefix_exec.envs.custom.session` (re-exported here); this module reads specs and builds them.
"""

from __future__ import annotations

import importlib
import importlib.util
import traceback
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from prefix_exec.envs.custom.evidence import DEFAULT_POLICY, EvidencePolicy
from prefix_exec.envs.custom.json_schema import compile_schema
from prefix_exec.envs.custom.schema_keywords import SchemaProblem
from prefix_exec.envs.custom.session import CustomEnvironment, Hook, TaskSpec, ToolSpec, argument_of
from prefix_exec.envs.custom.spec_formats import FORM_NAMES, read_document, to_spec, tools_list_spec
from prefix_exec.envs.custom.spec_layers import check_layer, read_side_file, split_unlisted
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.trajectory import Rollout


def read_spec(path: Path) -> tuple[JsonObject, str]:
    """A tool spec file as a validated spec dict of our format, and the form it was read as (see
    :func:`load_spec`)."""
    if not path.is_file():
        raise InputError("no such tool spec file", path=path, hint="pass --tools with a JSON or YAML spec")
    return to_spec(read_document(path, what="tool spec"), path=path)


def load_spec(
    path: str | Path, *, hooks: str | Path | None = None, policy: EvidencePolicy = DEFAULT_POLICY
) -> CustomEnvironment:
    """Read and validate a tool spec file and load its hooks.

    The file (``.json``, or YAML otherwise) is our spec, an OpenAI ``tools`` array or an MCP ``tools/list``
    result (:mod:`prefix_exec.envs.custom.spec_formats`). ``hooks`` is an optional side file that layers ``refs``,
    ``produces``, ``invalidates``, hooks, state and tasks onto it, keyed by tool name. ``policy`` says how
    recorded outcomes count (:mod:`prefix_exec.envs.custom.evidence`).
    """
    p = Path(path)
    data, form = read_spec(p)
    return layered_environment(data, p, form=form, hooks=hooks, policy=policy)


def layered_environment(
    data: JsonMapping,
    path: Path,
    *,
    form: str = "spec",
    hooks: str | Path | None = None,
    policy: EvidencePolicy = DEFAULT_POLICY,
) -> CustomEnvironment:
    """The environment of a validated spec dict, read from ``path`` as ``form``, with the hooks side file
    ``hooks`` (when given) layered on: the one way ``score custom --tools SPEC --hooks SIDE`` and the guard
    (``prefix-exec guard``, on a server's ``tools/list`` result) build an environment from a spec and a side file.
    On an MCP listing (``form`` ``mcp``) the side file's entries for tools the listing lacks wait, named in the
    environment's ``unlisted`` (:func:`~prefix_exec.envs.custom.spec_layers.split_unlisted`); on any other spec
    such an entry is an :class:`InputError`.
    """
    if hooks is None:
        return environment_from_spec(data, path, form=form, policy=policy)
    side_path = Path(hooks)
    if not side_path.is_file():
        raise InputError("no such hooks file", path=side_path, hint="pass --hooks with a YAML or JSON file")
    side = read_side_file(side_path)
    unlisted: tuple[str, ...] = ()
    if form == "mcp":
        side, unlisted = split_unlisted(data, side)
    check_layer(data, path, side, side_path)
    env = environment_from_spec(data, path, form=form, side=side, side_path=side_path, policy=policy)
    env.unlisted = unlisted
    return env


def environment_from_tools(
    tools: Any,
    *,
    name: str,
    path: str | Path,
    line: int | None = None,
    prefix: str = "",
    origin: str = "the conversation's own tools list",
    policy: EvidencePolicy = DEFAULT_POLICY,
) -> CustomEnvironment:
    """A schema-only environment from a transcript's own ``tools`` list (OpenAI function tools or MCP tools;
    an empty list declares no tool), found at ``{prefix}tools`` in record ``line`` of ``path``. Raises
    :class:`InputError` naming that place when it is malformed. ``origin`` names the list in the no-tool rule
    the records quote (a tools list alone allows a rollout without a tool call)."""
    spec = tools_list_spec(tools, path=path, line=line, prefix=prefix)
    form = "mcp" if any(isinstance(t, Mapping) and "inputSchema" in t for t in tools) else "openai"
    return environment_from_spec({**spec, "name": name}, Path(path), form=form, origin=origin, policy=policy)


def environment_from_spec(
    data: JsonMapping,
    path: Path,
    *,
    form: str = "spec",
    side: JsonMapping | None = None,
    side_path: Path | None = None,
    origin: str | None = None,
    policy: EvidencePolicy = DEFAULT_POLICY,
) -> CustomEnvironment:
    """The environment of a validated spec dict (``path``: where it was read, for errors and relative hooks),
    with an optional validated side file (:func:`~prefix_exec.envs.custom.spec_layers.check_layer` passed).

    ``allow_no_tool`` is what a task, the side file or the spec sets; unset, it is false for our spec form and
    true for a tools list alone (``form`` ``openai`` or ``mcp``; ``origin`` names the list), which says nothing
    about whether a task needs a tool. Each task keeps the rule that decided it (:attr:`TaskSpec.no_tool_rule`).
    """
    if data.get("hooks") and not names_code(path, form):
        raise InputError(
            f"{FORM_NAMES[form]} in a {path.suffix or 'suffix-less'} file names a hooks module; only a YAML "
            "spec (.yaml/.yml) may, so a JSON file shaped like a tool list never runs code",
            path=path,
            field="hooks",
            hint="name the module in a --hooks side file, or write the spec as YAML (docs/security.md)",
        )
    module = _load_hooks(data["hooks"], path) if data.get("hooks") else None
    layers: JsonMapping = {}
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
    tasks, default = _tasks(top, _no_tool_default(data, side, form, origin))
    switch = _conversation_switch(top, tools, side_path if side and "conversation_gives" in side else path)
    return CustomEnvironment(
        top.get("name", path.stem),
        tools,
        tasks,
        None if tasks else default,
        form=form,
        policy=policy,
        conversation=switch,
    )


def _tasks(top: JsonMapping, no_tool: tuple[bool, str]) -> tuple[dict[str, TaskSpec], TaskSpec]:
    """The spec's tasks (with the side file's keys laid over: ``top``) and its default task, with the
    ``allow_no_tool`` default and its rule (:func:`_no_tool_default`)."""
    base_state = top.get("initial_state", {})
    base_allow, base_rule = no_tool
    base_given = top.get("given", {})
    tasks = {
        str(tid): TaskSpec(
            initial_state=t.get("initial_state", base_state),
            allow_no_tool=bool(t.get("allow_no_tool", base_allow)),
            given={k: tuple(v) for k, v in {**base_given, **t.get("given", {})}.items()},
            no_tool_rule=f"task {tid!r} sets allow_no_tool: {_flag(t['allow_no_tool'])}"
            if "allow_no_tool" in t
            else base_rule,
        )
        for tid, t in (top.get("tasks") or {}).items()
    }
    return tasks, TaskSpec(base_state, base_allow, {k: tuple(v) for k, v in base_given.items()}, base_rule)


def _conversation_switch(top: JsonMapping, tools: Mapping[str, ToolSpec], path: Path | None) -> Any:
    """The spec's ``conversation_gives`` (default true); a mapping that names a kind no tool's ``refs`` uses is
    refused (a switch that could never act would hide a typo)."""
    switch = top.get("conversation_gives", True)
    if not isinstance(switch, Mapping):
        return switch
    used = sorted({kind for tool in tools.values() for kind in tool.refs.values()})
    for kind in switch:
        if kind not in used:
            raise InputError(
                f"conversation_gives names the kind {kind!r}, which no tool's refs use",
                path=path,
                field=f"conversation_gives.{kind}",
                hint=f"the kinds refs use: {', '.join(used[:12]) or 'none'}; or set conversation_gives: true/false",
            )
    return switch


def _no_tool_default(data: JsonMapping, side: JsonMapping | None, form: str, origin: str | None) -> tuple[bool, str]:
    """The spec's ``allow_no_tool`` for tasks that do not set their own, and the rule that decided it."""
    for document, name in ((side or {}, "the hooks file"), (data, "the spec")):
        if "allow_no_tool" in document:
            return bool(document["allow_no_tool"]), f"{name} sets allow_no_tool: {_flag(document['allow_no_tool'])}"
    if form == "spec":
        return False, "the spec does not set allow_no_tool (default: false)"
    what = origin or f"only a tools list ({FORM_NAMES[form]})"
    return True, f"the spec is {what}, which does not say that a task needs a tool"


def _flag(value: Any) -> str:
    return "true" if value else "false"


#: Suffixes of the spec files that may name a hooks module (trusted code; docs/security.md).
CODE_SPEC_SUFFIXES = (".yaml", ".yml")


def names_code(path: Path, form: str) -> bool:
    """Whether a spec read from ``path`` as ``form`` may name a hooks module: only our own spec form in a YAML
    file the user passed (``--tools``). A JSON file (a tool list from OpenAI, MCP or a transcript, or anything
    shaped like one) never loads Python; hooks then come from a ``--hooks`` side file only."""
    return form == "spec" and path.suffix.lower() in CODE_SPEC_SUFFIXES


def _load_hooks(ref: str, spec_path: Path) -> ModuleType:
    """A hooks module, from a ``.py`` path relative to the spec or a dotted module path.

    Anything the module raises while it loads (a syntax error, ``SystemExit``, an exception at import) is an
    :class:`InputError` naming the hooks file and, where known, its line: the run ends with exit 2, never
    with the module's own exit code or a traceback."""
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
            f"cannot load hooks {ref!r}: {exc}", path=spec_path, field="hooks", hint=_hooks_hint(exc)
        ) from None
    except SyntaxError as exc:
        raise InputError(
            f"the hooks module {ref!r} is not valid Python: {exc.msg}",
            path=exc.filename or ref,
            line=exc.lineno,
            hint="fix the hooks module",
        ) from None
    except (Exception, SystemExit) as exc:  # the user's module ran and failed; budgets and ^C pass through
        frames = traceback.extract_tb(exc.__traceback__)
        inside = [f for f in frames if f.filename != __file__ and "importlib" not in f.filename]
        where = inside[-1] if inside else None
        raise InputError(
            f"the hooks module {ref!r} raised {type(exc).__name__} while loading: {exc}",
            path=where.filename if where is not None else spec_path,
            line=where.lineno if where is not None else None,
            hint="fix the hooks module: loading it must only define functions",
        ) from None


def _hooks_hint(exc: ImportError | FileNotFoundError) -> str:
    """What to do about a hooks module that does not load; a name prefix-exec 0.1.0 offered elsewhere gets its new
    import (``Reject`` moved with the generic environment's modules, and the package's face offers it)."""
    if isinstance(exc, ImportError) and exc.name is not None and exc.name.startswith("prefix_exec"):
        return (
            "a name this hooks module imports from prefix-exec moved: write 'from prefix_exec import Reject' "
            "(docs/architecture.md, Public API, lists what 'prefix_exec' offers)"
        )
    return "give a .py file relative to this file, or an importable dotted module path"


def _tool(raw: JsonMapping, module: ModuleType | None, path: Path, where: str) -> ToolSpec:
    parameters = raw.get("parameters", {"type": "object", "properties": {}, "additionalProperties": False})
    try:
        validator = compile_schema(parameters)
    except SchemaProblem as exc:
        raise InputError(str(exc), path=path, field=f"{where}.parameters") from None
    hooks = _hooks(raw, module, path, where)
    _check_arguments(parameters, raw, path, where)
    return ToolSpec(
        name=raw["name"],
        parameters=parameters,
        validator=validator,
        refs=raw.get("refs", {}),
        produces=raw.get("produces", {}),
        invalidates=raw.get("invalidates", {}),
        precondition=hooks["precondition"],
        effect=hooks["effect"],
        postcondition=hooks["postcondition"],
        exposed_from_turn=raw.get("exposed_from_turn", 0),
        whole_arrays=bool(raw.get("whole_arrays", False)),
        conversation_gives=raw.get("conversation_gives"),
    )


def _layered(tool: ToolSpec, layer: JsonMapping, module: ModuleType | None, path: Path) -> ToolSpec:
    """``tool`` with a side file's keys for it (none of which the spec sets: check_layer refused that)."""
    hooks = _hooks(layer, module, path, f"tools.{tool.name}")
    _check_arguments(tool.parameters, layer, path, f"tools.{tool.name}")
    return replace(
        tool,
        refs=layer.get("refs", tool.refs),
        produces=layer.get("produces", tool.produces),
        invalidates=layer.get("invalidates", tool.invalidates),
        precondition=hooks["precondition"] or tool.precondition,
        effect=hooks["effect"] or tool.effect,
        postcondition=hooks["postcondition"] or tool.postcondition,
        exposed_from_turn=layer.get("exposed_from_turn", tool.exposed_from_turn),
        whole_arrays=bool(layer.get("whole_arrays", tool.whole_arrays)),
        conversation_gives=layer.get("conversation_gives", tool.conversation_gives),
    )


def _check_arguments(parameters: JsonMapping, layer: JsonMapping, path: Path, where: str) -> None:
    """Refuse ``refs`` keys and ``invalidates`` values that name no argument of the tool's schema (a check that
    could never run would fail open; a ``refs`` key that is a path, ``flights[*].flight_number``, by its first
    name). A schema that declares no ``properties`` cannot say, and is trusted."""
    declared = parameters.get("properties")
    if not isinstance(declared, dict):
        return
    named = [(f"{where}.refs.{k}", argument_of(k)) for k in layer.get("refs") or {}]
    named += [(f"{where}.invalidates.{kind}", v) for kind, v in (layer.get("invalidates") or {}).items()]
    for field_name, argument in named:
        if argument not in declared:
            raise InputError(
                f"{argument!r} is no argument of the tool (its schema has {', '.join(sorted(declared)) or 'none'})",
                path=path,
                field=field_name,
                hint="name an argument the server's tools/list declares for this tool; a check on an argument "
                "that is never passed would never run",
            )


def _hooks(raw: JsonMapping, module: ModuleType | None, path: Path, where: str) -> dict[str, Hook | None]:
    """The precondition and effect functions ``raw`` names, looked up in ``module`` (an allow-list: only
    names the user's own spec gives, in the user's own hooks module)."""
    hooks: dict[str, Hook | None] = {}
    for kind in ("precondition", "effect", "postcondition"):
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


class OwnTools:
    """The environment of a conversation's own tools list, built when a rollout is first replayed on it, so inside
    its budget (compiling the list's schemas is bounded work, but the budget bounds it too); a list that cannot be
    built is that conversation's input error. Pickles as the list (:mod:`scoring.pool.dispatch`): each worker
    process builds its own."""

    def __init__(self, tools: Any, where: JsonObject, policy: EvidencePolicy) -> None:
        self.tools, self.where, self.policy = tools, where, policy
        self.built: CustomEnvironment | None = None

    def __call__(self, rollout: Rollout) -> CustomEnvironment:
        if self.built is None:
            self.built = environment_from_tools(self.tools, **self.where, policy=self.policy)
        return self.built

    def __getstate__(self) -> JsonObject:
        return {**self.__dict__, "built": None}
