"""The spans of one trace as one conversation: a record the transcripts decoder reads (OpenAI Chat form).

The rule, for the spans of one trace ordered by start time (ties: the order read):

1. **The messages** are the last model span's input messages and its output (a model call is sent the whole
   conversation so far); when model spans carry no input (content capture off), each model span's output in
   turn. A model span's parallel calls are one assistant message, so they stay one turn;
2. **each tool span** is matched to the model's call it executed: by the call id when the tool span has one,
   else the first call not yet matched with the same tool name (positional). Its recorded outcome is the
   reply's evidence: an error (status ERROR, an exception event, ``error.type``, an ``error`` field) flags the
   reply, and a reply the messages lack (the trace ended after the tool ran) is taken from the span's result or
   error text;
3. **a tool span no model call names** (no model spans in the trace, or content capture off) is a call of its
   own, in start order; tool spans with the same parent that overlap in time are one assistant message
   (parallel calls), with the span's call id, else ``span-<span id>``;
4. **several conversations in one trace** (:func:`conversations`): a span belongs to the conversation its
   outermost ancestor naming one (``gen_ai.conversation.id``, ``session.id``) names; when a trace's spans name
   several, each is a rollout of its own, its task id that conversation's id (a root naming the conversation,
   as one wrapping several agent runs, keeps them one);
5. **identity**: the task id from ``--task-id-field`` (an attribute name), else the
   first of :data:`TASK_ATTRIBUTES` carried by a root span, then by any span, else the trace id; the model from
   the first model span that names one; Y from ``--success-field`` (an attribute: true/false, 0/1, "0"/"1");
6. **the system's failure**: when the trace's last model span recorded a failure (status ERROR, an exception
   event, an ``error`` field: :attr:`Span.model_error`), its text is the record's ``error``, which marks the
   rollout as an infrastructure failure when it says the system failed (a 5xx, a timeout, a lost connection:
   :func:`prefix_exec.records.infrastructure.system_failure`), as for any transcript. A failed model call that a
   later one retried ends nothing and marks nothing. A GenAI details log event read as the last model span is
   the same call as the span it was logged in (its parent): that span's failure, with its status text, counts.

Parent links are read only to find root spans (a span with no parent, or whose parent is not in the trace): a
cycle in them makes no root, and identity is then read from every span, so no walk can loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from prefix_exec.importers.traces.spans import Span, ToolUse
from prefix_exec.importers.transcripts.decoder import Fail, Message
from prefix_exec.importers.transcripts.openai_chat import read_messages
from prefix_exec.json_types import JsonMapping, JsonObject, JsonValue

#: Attributes that name a conversation, the task id's default, in order.
TASK_ATTRIBUTES = (
    "gen_ai.conversation.id",
    "session.id",
    "conversation.id",
    "group_id",
    "metadata.task_id",
    "task_id",
    "thread_id",
)
#: Attributes that name a conversation, for splitting a trace that holds several (:func:`conversations`).
CONVERSATION_ATTRIBUTES = ("gen_ai.conversation.id", "session.id")
#: Attributes that name the model, when no model span does.
MODEL_ATTRIBUTES = ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name")
_TRUE = (True, 1, "1", "true", "True", "TRUE")
_FALSE = (False, 0, "0", "false", "False", "FALSE")


def conversation(spans: Sequence[Span]) -> JsonObject:
    """``{"messages", "errors", "tools"}`` of one trace (module docstring): Chat messages, the recorded outcome
    ``[error, error_type]`` of each call id a tool span executed, and the tools list a model span offered; with
    ``"error"``, the failure the last model call recorded (rule 6)."""
    ordered = sorted(enumerate(spans), key=lambda pair: (pair[1].start, pair[0]))
    llms = [s for _, s in ordered if s.kind == "llm" and (s.inputs is not None or s.outputs is not None)]
    history = _history(llms)
    calls = _calls(history)
    errors: dict[str, list[JsonValue]] = {}
    orphans: list[Span] = []
    taken: set[int] = set()
    for _, span in ordered:
        if span.kind != "tool" or span.tool is None:
            continue
        index = _match(span.tool, calls, taken)
        if index is None:
            orphans.append(span)
            continue
        taken.add(index)
        message_index, call_id = calls[index][0], calls[index][1]
        _answer(history, message_index, call_id, span.tool, errors)
    for group in _parallel(orphans):
        _append(history, group, errors, len(calls))
    tools = next((s.tools for s in llms if s.tools), None)
    found: JsonObject = {"messages": history, "errors": errors, "tools": list(tools) if tools else None}
    last_call = next((s for _, s in reversed(ordered) if s.kind == "llm"), None)
    if last_call is not None and (failure := _failure(last_call, spans)):
        found["error"] = failure  # rule 6: the decoder marks a system failure
    return found


def _failure(call: Span, spans: Sequence[Span]) -> str | None:
    """The failure the model call ``call`` recorded (rule 6): a log event's (no span id of its own) is the one of
    the model span it was logged in, when that span recorded one, else its own."""
    if call.span_id is None and call.parent_id is not None:
        owner = next((s for s in spans if s.kind == "llm" and s.span_id == call.parent_id), None)
        if owner is not None and owner.model_error:
            return owner.model_error
    return call.model_error


def conversations(spans: Sequence[Span]) -> list[tuple[str | None, list[Span]]]:
    """The trace's spans split by conversation, when they name several: each span belongs to the conversation its
    outermost ancestor (itself included) that carries one of :data:`CONVERSATION_ATTRIBUTES` names. Spans under none
    go with every conversation when they are neither model nor tool spans (a batch root's attributes), else form a
    group of their own (``None``). A trace naming at most one conversation (the usual case) is one group. Parent
    links are walked with a memo and a visited set, so a cycle ends the walk."""
    by_id = {s.span_id: s for s in spans if s.span_id is not None}
    memo: dict[int, str | None] = {}
    groups: dict[str | None, list[Span]] = {}
    for span in spans:
        groups.setdefault(_outermost(span, by_id, memo), []).append(span)
    named = [name for name in groups if name is not None]
    if len(named) <= 1:
        return [(named[0] if named else None, list(spans))]
    context = [s for s in groups.pop(None, []) if s.kind == "other"]
    steps = [s for s in spans if s.kind != "other" and memo[id(s)] is None]
    found: list[tuple[str | None, list[Span]]] = [(name, [*context, *group]) for name, group in groups.items()]
    return found + ([(None, [*context, *steps])] if steps else [])


def _outermost(span: Span, by_id: dict[str, Span], memo: dict[int, str | None]) -> str | None:
    chain: list[Span] = []
    seen: set[int] = set()
    node: Span | None = span
    while node is not None and id(node) not in memo and id(node) not in seen:
        seen.add(id(node))
        chain.append(node)
        node = by_id.get(node.parent_id) if node.parent_id is not None else None
    above = memo.get(id(node)) if node is not None else None
    for item in reversed(chain):  # outermost first: an ancestor's conversation wins over the span's own
        if above is None:
            own = next((item.attributes[a] for a in CONVERSATION_ATTRIBUTES if item.attributes.get(a)), None)
            above = str(own) if isinstance(own, (str, int)) and not isinstance(own, bool) else None
        memo[id(item)] = above
    return memo[id(span)]


def _history(llms: Sequence[Span]) -> list[JsonObject]:
    if not llms:
        return []
    last = llms[-1]
    if last.inputs is not None:
        return [dict(m) for m in (*last.inputs, *(last.outputs or ()))]
    return [dict(m) for span in llms for m in (span.outputs or ())]


def _calls(history: list[JsonObject]) -> list[tuple[int, str, JsonValue]]:
    """``(message index, call id, name)`` of each call in the messages; a call without an id gets ``call-<n>``."""
    found: list[tuple[int, str, JsonValue]] = []
    for index, message in enumerate(history):
        items = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not isinstance(items, list):
            continue
        for call in items:
            if not isinstance(call, dict):
                continue
            if not isinstance(call.get("id"), str) or not call["id"]:
                call["id"] = f"call-{len(found)}"
            function = call.get("function")
            found.append((index, call["id"], function.get("name") if isinstance(function, dict) else None))
    return found


def _match(tool: ToolUse, calls: list[tuple[int, str, JsonValue]], taken: set[int]) -> int | None:
    if tool.call_id is not None:
        by_id = next((i for i, c in enumerate(calls) if c[1] == tool.call_id and i not in taken), None)
        if by_id is not None:
            return by_id
    return next((i for i, c in enumerate(calls) if c[2] == tool.name and i not in taken), None)


def _answer(
    history: list[JsonObject], at: int, call_id: str, tool: ToolUse, errors: dict[str, list[JsonValue]]
) -> None:
    """Record the tool span's outcome for ``call_id``, and add its reply when the messages lack one."""
    errors[call_id] = [tool.error, tool.error_type]
    if any(m.get("role") == "tool" and m.get("tool_call_id") == call_id for m in history[at + 1 :]):
        return
    end = at + 1
    while end < len(history) and history[end].get("role") == "tool":
        end += 1
    history.insert(end, _reply(call_id, tool))


def _reply(call_id: str, tool: ToolUse) -> JsonObject:
    content = tool.result if tool.result is not None or not tool.error else tool.error_text
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _parallel(orphans: list[Span]) -> list[list[Span]]:
    """Tool spans as assistant messages: a span joins the previous message when it has the same parent and
    starts before a span of that message ends (parallel calls)."""
    groups: list[list[Span]] = []
    for span in orphans:
        last = groups[-1] if groups else None
        if last and span.parent_id == last[0].parent_id and any(span.start < (s.end or s.start) for s in last):
            last.append(span)
        else:
            groups.append([span])
    return groups


def _append(history: list[JsonObject], group: list[Span], errors: dict[str, list[JsonValue]], base: int) -> None:
    calls, replies = [], []
    for offset, span in enumerate(group):
        tool = span.tool
        assert tool is not None
        call_id = tool.call_id or (f"span-{span.span_id}" if span.span_id else f"call-{base + len(history) + offset}")
        calls.append({"id": call_id, "type": "function", "function": {"name": tool.name, "arguments": tool.arguments}})
        replies.append(_reply(call_id, tool))
        errors[call_id] = [tool.error, tool.error_type]
    history.append({"role": "assistant", "content": None, "tool_calls": calls})
    history.extend(replies)


def read(record: JsonMapping, fail: Fail) -> list[Message]:
    """A conversation record's messages in the decoder's common form, each reply flagged with the outcome its
    tool span recorded (``errors``): the transcripts reader of traces."""
    found = read_messages(record, fail, key="messages")
    errors = record.get("errors")
    if not isinstance(errors, dict) or not errors:
        return found
    out = []
    for message in found:
        replies = tuple(
            replace(r, error=errors[r.call_id][0], error_type=errors[r.call_id][1]) if r.call_id in errors else r
            for r in message.replies
        )
        out.append(replace(message, replies=replies))
    return out


def roots(spans: Sequence[Span]) -> list[Span]:
    """Spans with no parent, or whose parent is not in the trace."""
    ids = {s.span_id for s in spans if s.span_id is not None}
    return [s for s in spans if s.parent_id is None or s.parent_id not in ids]


def attribute(spans: Sequence[Span], names: Iterable[str]) -> JsonValue:
    """The first of ``names`` a root span carries, else any span (in order), else ``None``."""
    names = tuple(names)
    for group in (roots(spans), spans):
        for name in names:
            for span in group:
                if span.attributes.get(name) not in (None, ""):
                    return span.attributes[name]
    return None


def success_value(value: JsonValue) -> int | None:
    """Y from an attribute's value: true/false, 0/1 or their text; ``None`` for anything else."""
    if isinstance(value, float) and value in (0.0, 1.0):
        return int(value)
    if value in _TRUE and not isinstance(value, float):
        return 1
    if value in _FALSE and not isinstance(value, float):
        return 0
    return None
