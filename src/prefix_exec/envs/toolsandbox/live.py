"""Live ToolSandbox sessions: each call runs on the scenario's own execution context.

A :class:`ToolSandboxSession` holds one scenario's ``ExecutionContext`` (ToolSandbox keeps the current one in a
process-global, so a session makes its own context current only while it steps: sessions and forks of one
process never share state, but they are not thread-safe; run one scenario per process). ``step``:

1. rejects without running anything a call whose arguments did not parse (``JSONDecodeError``), whose name is
   not one of the scenario's agent-facing tools (``KeyError ... is not a known allowed tool``, as ToolSandbox's
   own agent raises), or whose arguments cannot be rendered as safe literals (``TypeError``); all three are
   schema failures by :mod:`~.semantics`. The call and its error are still written to the context's SANDBOX
   rows (the call row holds a comment, not code), so the run files show every action;
2. otherwise hands ToolSandbox's ``ExecutionEnvironment`` the code :func:`~.calls.call_code` builds (our id,
   the execution-facing name, literal arguments) and judges its reply with :func:`~.semantics.judge`: the
   exception text it recorded gives the label, and a depth listed in the scenario's minefield facts is an
   information failure.

``fork`` deep-copies the context (ToolSandbox's own ``__deepcopy__``, through ``dill``). The first
``import tool_sandbox`` happens on first use, never at import of this module; ``tool_sandbox.cli`` is never
imported (it pulls in every model provider).
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import importlib
import os
import pickle
import random
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from prefix_exec.envs.toolsandbox.calls import UnsafeCall, call_code
from prefix_exec.envs.toolsandbox.semantics import DATASET, ScenarioFacts, judge, judge_finish
from prefix_exec.errors import InputError
from prefix_exec.extras import install_hint
from prefix_exec.json_types import JsonObject
from prefix_exec.records.outputs import write_new
from prefix_exec.trajectory import ToolCall, Verdict

INSTALL_HINT = install_hint("tool_sandbox")
#: The seed ToolSandbox's CLI gives the global RNG before building scenarios (their tool order is shuffled).
SCENARIO_SEED = 42
_MODULES = {
    "context": "tool_sandbox.common.execution_context",
    "scenarios": "tool_sandbox.scenarios",
    "discovery": "tool_sandbox.common.tool_discovery",
    "environment": "tool_sandbox.roles.execution_environment",
    "messages": "tool_sandbox.common.message_conversion",
    "tools": "tool_sandbox.common.tool_conversion",
    "base": "tool_sandbox.roles.base_role",
    "user": "tool_sandbox.roles.openai_api_user",
}
#: A file the built scenarios are kept in (a pickle: name only a folder you own), read instead of building them
#: again. Building takes 15 to 50 s and every spawned worker or Ray actor builds its own; the test suite points
#: this at its session's temporary folder so the workers of all its runs share one build. Unset: no cache.
SCENARIO_CACHE_ENV = "PREFIX_EXEC_TOOLSANDBOX_SCENARIO_CACHE"
_SCENARIOS: JsonObject | None = None


def toolsandbox(part: str) -> ModuleType:
    """One of ToolSandbox's core modules; raises :class:`InputError` (exit 2) saying how to install it."""
    try:
        return importlib.import_module(_MODULES[part])
    except ImportError as exc:
        raise InputError(f"ToolSandbox is not installed ({exc})", hint=INSTALL_HINT) from None


def toolsandbox_module(name: str) -> ModuleType:
    """Any ``tool_sandbox`` module by its full name, with the same install message as :func:`toolsandbox`."""
    if not name.startswith("tool_sandbox.") or name.startswith("tool_sandbox.cli"):
        raise ValueError(f"not a ToolSandbox core module: {name}")
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise InputError(f"ToolSandbox is not installed ({exc})", hint=INSTALL_HINT) from None


def named_scenarios() -> JsonObject:
    """ToolSandbox's 1032 named scenarios, built once per process with the global RNG seeded as its CLI does."""
    global _SCENARIOS
    if _SCENARIOS is None:
        cache = os.environ.get(SCENARIO_CACHE_ENV)
        _SCENARIOS = _cached_scenarios(Path(cache)) if cache else _build_scenarios()
    return _SCENARIOS


def _build_scenarios() -> JsonObject:
    backend = toolsandbox("discovery").ToolBackend.DEFAULT
    state = random.getstate()
    random.seed(SCENARIO_SEED)
    try:
        return dict(toolsandbox("scenarios").named_scenarios(preferred_tool_backend=backend))
    finally:
        random.setstate(state)  # the rest of the process keeps its own random stream


def _scenario_key() -> str:
    """What the built scenarios depend on: the seed, Python, and the text of ToolSandbox's scenario modules."""
    digest = hashlib.sha256(f"{SCENARIO_SEED} {sys.version}".encode())
    folder = Path(str(toolsandbox("scenarios").__file__)).parent
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def _cached_scenarios(path: Path) -> JsonObject:
    """The scenarios from ``path`` when it holds a build of the same key, else built and written there.

    The file is replaced whole, so a reader never sees a partial one; a lock file beside it makes processes
    that start together wait for one build instead of each building its own.
    """
    key = _scenario_key()
    found = _read_cache(path, key)
    if found is not None:
        return found
    path.parent.mkdir(parents=True, exist_ok=True)
    # "a": a link planted at the lock's name is locked, never truncated (the lock file holds nothing)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _read_cache(path, key)  # built by another process while this one waited
        if found is not None:
            return found
        scenarios = _build_scenarios()
        # A new file of a random name (O_EXCL|O_NOFOLLOW) renamed over the cache: never written through a link.
        write_new(path, pickle.dumps((key, scenarios), protocol=pickle.HIGHEST_PROTOCOL))
        return scenarios


def _read_cache(path: Path, key: str) -> JsonObject | None:
    if not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            found_key, scenarios = pickle.load(handle)
    except Exception:  # a damaged or foreign file is built again, never trusted in part
        return None
    return dict(scenarios) if found_key == key else None


class ToolSandboxSession:
    """The live state of one scenario. ``rows`` are the SANDBOX row indices of the agent calls so far."""

    def __init__(self, context: Any, facts: ScenarioFacts, *, depth: int = 0, rows: tuple[int, ...] = ()) -> None:
        self.context = context
        self.facts = facts
        self.depth = depth
        self.rows = list(rows)

    def fork(self) -> ToolSandboxSession:
        return ToolSandboxSession(copy.deepcopy(self.context), self.facts, depth=self.depth, rows=tuple(self.rows))

    def finish_without_tools(self) -> Verdict:
        return judge_finish(self.facts)

    def agent_tools(self) -> dict[str, Callable[..., Any]]:
        """Agent-facing name -> tool, as ToolSandbox's agent roles see them (scrambled names included)."""
        tools = self.context.get_available_tools(scrambling_allowed=True)
        agent = toolsandbox("context").RoleType.AGENT
        return {name: tool for name, tool in tools.items() if agent in getattr(tool, "visible_to", (agent,))}

    def step(self, call: ToolCall) -> Verdict:
        self.depth += 1
        call_id = f"call_{self.depth}"
        problem: str | None = None
        code = ""
        if call.parse_error is not None:
            problem = f"JSONDecodeError: the arguments are not JSON: {_clip(call.parse_error)}"
        elif call.name not in self.agent_tools():
            problem = (
                f"KeyError: Agent tool call agent_facing_tool_name={_clip(call.name)!r} is not a known allowed tool."
            )
        else:
            try:
                code = call_code(call_id, self.context.get_execution_facing_tool_name(call.name), call.arguments)
            except UnsafeCall as exc:
                problem = f"TypeError: {exc}"
        name = call.name if problem is None else _clip(call.name)
        if problem is not None:
            self._write(call_id, name, "# not executed: rejected before execution", reply=problem)
            return judge(problem, problem, self.depth, self.facts)
        content, exception = self._execute(call_id, name, code)
        return judge(exception, content if exception is None else exception, self.depth, self.facts)

    def _execute(self, call_id: str, name: str, code: str) -> tuple[str, str | None]:
        context_module = toolsandbox("context")
        environment = toolsandbox("environment").ExecutionEnvironment()
        self._write(call_id, name, code)
        with context_module.new_context(self.context):
            environment.respond()
        reply = self.context.get_database(context_module.DatabaseNamespace.SANDBOX)
        row = reply.row(-1, named=True)
        exception = row.get("tool_call_exception")
        return str(row.get("content") or ""), None if exception is None else str(exception)

    def _write(self, call_id: str, name: str, code: str, *, reply: str | None = None) -> None:
        """Add the agent's call row (and, for a call that never runs, its error reply) to the SANDBOX rows."""
        ctx = toolsandbox("context")
        role = ctx.RoleType
        message = toolsandbox("messages").Message

        def add(sender: Any, recipient: Any, content: str, **extra: Any) -> None:
            row = message(
                sender=sender,
                recipient=recipient,
                content=content,
                openai_tool_call_id=call_id,
                openai_function_name=name,
                **extra,
            )
            self.context.add_to_database(namespace=ctx.DatabaseNamespace.SANDBOX, rows=[_asdict(row)])

        add(role.AGENT, role.EXECUTION_ENVIRONMENT, code)
        self.rows.append(self.context.max_sandbox_message_index)
        if reply is not None:
            add(role.EXECUTION_ENVIRONMENT, role.AGENT, reply, tool_call_exception=reply)


class ToolSandboxEnvironment:
    """Sessions on ToolSandbox's named scenarios. ``facts`` gives each scenario's facts (default: from the
    scenario's categories, with no minefield hits known yet)."""

    name = DATASET

    def __init__(self, facts: Callable[[str], ScenarioFacts] | None = None) -> None:
        self.scenarios = named_scenarios()
        self._facts = facts

    def facts(self, task_id: str) -> ScenarioFacts:
        if self._facts is not None:
            return self._facts(task_id)
        return ScenarioFacts.of_scenario([str(c) for c in self.scenario(task_id).categories], [])

    def scenario(self, task_id: str) -> Any:
        return self.scenarios[task_id]

    def start(self, task_id: str) -> ToolSandboxSession:
        """A session in the scenario's starting state, its console prepared as ``Scenario.play`` prepares it
        (the SYSTEM -> EXECUTION_ENVIRONMENT rows run). Raises ``KeyError`` for an unknown scenario."""
        return ToolSandboxSession(prepared_context(self.scenario(task_id)), self.facts(task_id))


def prepared_context(scenario: Any) -> Any:
    """A copy of the scenario's starting context with its system code run, as ``Scenario.play`` does first."""
    ctx = toolsandbox("context")
    context = copy.deepcopy(scenario.starting_context)
    environment = toolsandbox("environment").ExecutionEnvironment()
    rows = context.get_database(
        ctx.DatabaseNamespace.SANDBOX, drop_sandbox_message_index=False, get_all_history_snapshots=True
    )
    with ctx.new_context(context):
        for index in range(context.max_sandbox_message_index + 1):
            if (
                rows["recipient"][index] == ctx.RoleType.EXECUTION_ENVIRONMENT
                and rows["sender"][index] == ctx.RoleType.SYSTEM
            ):
                environment.respond(ending_index=index)
    return context


def _asdict(message: Any) -> JsonObject:
    import attrs

    return dict(attrs.asdict(message))


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
