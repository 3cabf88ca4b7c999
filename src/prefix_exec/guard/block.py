"""The block: what a call the guard blocks (``enforce``: its checks rejected it, so it never reaches the server)
returns to the client: what was blocked, why, and what to do, in words a model can act on.

A block is a normal tool result with ``isError: true`` (so any MCP client hands it to the model as it hands
a tool's own error), one text block, and the verdict in ``_meta`` under :data:`META_KEY` for programs. The
text starts with the label and our check's reason, then says what would make the call acceptable, from the
environment: for a ``dependency`` the tools that produce the value it needs, for a ``schema`` failure the
tools there are or the schema to follow.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prefix_exec.envs.custom.session import CustomEnvironment, CustomSession, ToolSpec, referred
from prefix_exec.json_types import JsonObject
from prefix_exec.trajectory import FailureLabel, ToolCall, Verdict

#: The ``_meta`` key of a block's verdict (``{"label", "reason", "refused": true}``: the field keeps its name).
#: The guard's log keeps a blocked call with this text as an error reply, so that replaying the log reads it as a
#: refusal.
META_KEY = "prefix-exec/guard"
_NAMES_SHOWN = 12


def block_text(verdict: Verdict, call: ToolCall, session: CustomSession | None) -> str:
    """One paragraph: ``prefix-exec guard did not run NAME: LABEL: REASON. What to do: ...``."""
    label = verdict.label or FailureLabel.SCHEMA
    head = f"prefix-exec guard did not run {call.name}: {label.value}: {verdict.reason.rstrip('.')}."
    advice = _advice(label, call, session)
    return f"{head} What to do: {advice}" if advice else head


def block_result(verdict: Verdict, call: ToolCall, session: CustomSession | None) -> JsonObject:
    """The ``tools/call`` result of a blocked call (the MCP ``CallToolResult`` JSON)."""
    label = verdict.label.value if verdict.label else None
    return {
        "content": [{"type": "text", "text": block_text(verdict, call, session)}],
        "isError": True,
        "_meta": {META_KEY: {"refused": True, "label": label, "reason": verdict.reason}},
    }


def _advice(label: FailureLabel, call: ToolCall, session: CustomSession | None) -> str:
    env = session.env if session is not None else None
    if env is None:
        return ""
    tool = env.tools.get(call.name)
    if tool is None:
        return f"call one of the tools the server lists ({_names(env.tools)}); {call.name!r} is not one of them."
    if label is FailureLabel.SCHEMA:
        return f"send arguments that match the input schema of {call.name} (see tools/list), then call it again."
    if label in (FailureLabel.DEPENDENCY, FailureLabel.STATE_CONSISTENCY) and session is not None:
        advice = [_ref_advice(env, session, param, kind, call) for param, kind in tool.refs.items()]
        found = [a for a in advice if a]
        if found:
            return " ".join(found)
    if label is FailureLabel.PRECONDITION:
        return f"first do what the reason above says is missing, then call {call.name} again."
    if label is FailureLabel.STATE_CONSISTENCY:
        return "refresh what the call relies on (an earlier call changed it), then call again."
    return f"get what the call needs from an earlier tool result, then call {call.name} again."


def _ref_advice(env: CustomEnvironment, session: CustomSession, param: str, kind: str, call: ToolCall) -> str:
    """What to do about argument ``param`` (a reference to a ``kind``), or "" when its value is fine."""
    tool = env.tools[call.name]
    states = [_current(env, session, tool, kind, value) for _, value in referred(tool, call.arguments, param)]
    if all(states):  # no value there, or every one current
        return ""
    current = None if None in states else False
    producers = [name for name, spec in env.tools.items() if kind in spec.produces]
    source = (
        f"call {_or(producers)} first and pass the {kind} it returns"
        if producers
        else f"use a {kind} the task gave or an earlier call returned"
    )
    if current is None:
        said = " (or one the user gave)" if env.gives(tool, kind) else ""
        return f"{param} must be a {kind} from an earlier result{said}; {source}, not a value made up or guessed."
    return f"that {kind} is no longer current (an earlier call used it up or removed it); {source}."


def _current(env: CustomEnvironment, session: CustomSession, tool: ToolSpec, kind: str, value: Any) -> bool | None:
    """Whether ``value`` is a current ``kind`` for ``tool``'s refs: produced or given (the task, the conversation)."""
    current = session.reference(kind, value)
    if current is None and env.gives(tool, kind) and session.heard.given_at(value) is not None:
        return True
    return current


def _names(tools: Iterable[str]) -> str:
    names = list(tools)
    shown = ", ".join(names[:_NAMES_SHOWN])
    return shown + (f", and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else "")


def _or(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " or " + names[-1]
