"""The common form every transcript reader maps its format onto, and the one decoder that builds rollouts.

A reader (one module per format in this package) turns a record's messages into a list of :class:`Message`:
a role, what was said, the tool calls it makes (:class:`Call`) and the tool replies it carries
(:class:`Reply`), each with the field it came from for errors. :func:`decode` walks that list once:

- each call is one action, in order; its ``turn`` is the number of user turns before it, less one (0 before
  the first). A user message that only carries tool replies (Anthropic's ``tool_result`` blocks) is no turn;
- arguments go through :func:`prefix_exec.importers.arguments.decode_arguments`: text that is not a JSON object is the
  model's error (``parse_error`` and ``raw`` kept, a ``schema`` failure in replay), never bad input;
- a reply answers the pending call with its id, in order, as harnesses write them: an id may be reused once
  its earlier call is answered. A reply that matches no pending call, or that could answer two pending calls
  with one id, is an :class:`~prefix_exec.errors.InputError`;
- positional pairing: a reply without an id (``null`` or ``""``: Cohere's and Gemini's runs, the legacy
  OpenAI ``function`` role) answers the oldest call without an id still waiting, as replies follow their
  calls in order. When the reply echoes its call (``echo``: name and arguments), the echo must be that call;
  if it is not, the one waiting call the echo names is answered, and an echo that names none of the waiting
  calls, or several alike, is an InputError (the pairing is then really ambiguous). A reply without an id
  while no call without an id waits is an InputError too;
- the reply becomes the call's :class:`~prefix_exec.trajectory.Observation`: content as the log holds it,
  and the log's own error flag and kind. Nothing here reads a reply's text to decide anything.

The decoder also keeps a transcript: one ``{"role", "content"}`` entry per message (``tool_calls`` on the
assistant's, one ``{"role": "tool", "tool_call_id", "content", "error"}`` entry per reply).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.importers.arguments import decode_arguments
from prefix_exec.json_types import JsonMapping, JsonObject, JsonValue
from prefix_exec.trajectory import Observation, ToolCall

#: ``fail(field, message, hint=None)``: an InputError at a field of the record being read.
Fail = Callable[..., InputError]
#: Longest ``raw`` kept for arguments that were an object but not a valid one, in characters.
MAX_RAW_CHARS = 10_000
#: ``(name, arguments)`` of the call a reply echoes; ``arguments`` ``None`` when the echo has none.
Echo = tuple[str, JsonValue]


@dataclass(frozen=True)
class Call:
    """One tool call as a log holds it: ``arguments`` are the log's (JSON text, an object or ``None``);
    ``parse_error`` is the log's own when it says the model's call could not be read (LangChain's
    ``invalid_tool_calls``); ``where`` is the call's field for messages."""

    name: str
    arguments: JsonValue
    call_id: str | None
    where: str
    parse_error: str | None = None


@dataclass(frozen=True)
class Reply:
    """One tool reply: the ``call_id`` it answers (``None``: paired by position, see the module docstring), its
    content as the log holds it, the log's error flag (``None`` when the format has none) and error kind;
    ``where`` is the field that names the call (its id), for messages; ``echo`` the call it repeats, if any."""

    call_id: str | None
    content: JsonValue
    where: str
    error: bool | None = None
    error_type: str | None = None
    echo: Echo | None = None


@dataclass(frozen=True)
class Message:
    """One message in the common form. ``role`` is the log's (``user``, ``assistant``, ``system``,
    ``tool``...); ``content`` what was said, ``None`` when the message only calls or replies."""

    role: str
    content: JsonValue = None
    calls: tuple[Call, ...] = ()
    replies: tuple[Reply, ...] = ()
    where: str = ""


@dataclass
class _Pending:
    """Calls awaiting a reply: by id (oldest first), and those without an id."""

    by_id: dict[str, list[int]] = field(default_factory=dict)
    unnamed: list[int] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)


def decode(messages: Sequence[Message], fail: Fail) -> tuple[tuple[ToolCall, ...], tuple[JsonObject, ...]]:
    """The actions and the transcript of one conversation (see the module docstring)."""
    calls: list[ToolCall] = []
    transcript: list[JsonObject] = []
    pending = _Pending()
    users = 0
    for message in messages:
        for reply in message.replies:
            index = _answered(reply, pending, calls, fail)
            observation = Observation(reply.content, reply.error, reply.error_type)
            calls[index] = replace(calls[index], observation=observation)
            entry: JsonObject = {"role": "tool", "tool_call_id": reply.call_id, "content": reply.content}
            transcript.append(entry | ({"error": reply.error} if reply.error is not None else {}))
        if message.role == "user" and (message.content is not None or not message.replies):
            users += 1
        for call in message.calls:
            if call.call_id is None:
                pending.unnamed.append(len(calls))
            else:
                pending.by_id.setdefault(call.call_id, []).append(len(calls))
            calls.append(_action(call, turn=max(users - 1, 0)))
        if message.replies and message.content is None and not message.calls:
            continue
        said: JsonObject = {"role": message.role, "content": message.content}
        if message.calls:
            said["tool_calls"] = [{"id": c.call_id, "name": c.name, "arguments": c.arguments} for c in message.calls]
        transcript.append(said)
    return tuple(calls), tuple(transcript)


def _answered(reply: Reply, pending: _Pending, calls: list[ToolCall], fail: Fail) -> int:
    """The index of the call ``reply`` answers, taken off the pending calls; an InputError when none or
    several could be meant."""
    if reply.call_id is None:
        return _positional(reply, pending, calls, fail)
    waiting = pending.by_id.get(reply.call_id, [])
    if not waiting:
        if reply.call_id in pending.answered:
            raise fail(reply.where, f"the call with the id {reply.call_id!r:.60} was already answered")
        raise fail(reply.where, f"no earlier tool call has the id {reply.call_id!r:.60}")
    if len(waiting) > 1:
        steps = ", ".join(str(i + 1) for i in waiting)
        raise fail(
            reply.where,
            f"the reply could answer {len(waiting)} calls with the id {reply.call_id!r:.60} (actions {steps})",
            hint="a reused id is read when each call is answered before the id is used again; here two calls "
            "with this id were both waiting, so which one this reply answers is unknown",
        )
    pending.answered.add(reply.call_id)
    del pending.by_id[reply.call_id]
    return waiting[0]


def _positional(reply: Reply, pending: _Pending, calls: list[ToolCall], fail: Fail) -> int:
    """The call a reply without an id answers: the oldest waiting call without an id, or the one its echo
    names (module docstring)."""
    waiting = pending.unnamed
    if not waiting:
        named = sum(len(v) for v in pending.by_id.values())
        raise fail(
            reply.where,
            "a reply without a call id, but no call without an id is waiting for one"
            + (
                f" ({named} call{'s' if named != 1 else ''} with an id {'are' if named != 1 else 'is'})"
                if named
                else ""
            ),
            hint='replies are paired with calls by id, or in order when both sides have none (null or "")',
        )
    if reply.echo is None or _echoes(reply.echo, calls[waiting[0]]):
        return waiting.pop(0)
    alike = [i for i in waiting if _echoes(reply.echo, calls[i])]
    if len(alike) != 1:
        shown = ", ".join(f"{calls[i].name} (action {i + 1})" for i in waiting[:5])
        raise fail(
            reply.where,
            f"the reply echoes a call of {reply.echo[0]!r:.60}, which "
            + ("none" if not alike else f"{len(alike)}")
            + f" of the calls waiting without an id {'is' if not alike else 'are'} ({shown})",
            hint="a reply without an id answers the oldest waiting call; its echoed tool_call must name that "
            "call, or exactly one other waiting call",
        )
    waiting.remove(alike[0])
    return alike[0]


def _echoes(echo: Echo, call: ToolCall) -> bool:
    """Whether ``echo`` names ``call``: the same name, and the same arguments when both are known."""
    name, arguments = echo
    if name != call.name:
        return False
    if arguments is None or call.parse_error is not None:
        return True
    decoded, problem = decode_arguments(arguments)
    return problem is not None or decoded == call.arguments


def _action(call: Call, *, turn: int) -> ToolCall:
    arguments, problem = decode_arguments(call.arguments)
    parse_error = call.parse_error or problem
    raw = None
    if parse_error is not None:
        raw = (
            call.arguments
            if isinstance(call.arguments, str)
            else json.dumps(call.arguments, default=str)[:MAX_RAW_CHARS]
        )
        arguments = {}
    return ToolCall(
        name=call.name, arguments=arguments, call_id=call.call_id, turn=turn, raw=raw, parse_error=parse_error
    )


def message_objects(record: JsonMapping, fail: Fail) -> Iterator[tuple[str, JsonMapping]]:
    """Each item of ``record["messages"]`` with its field path (``messages[i]``); a missing or non-list
    ``messages``, or an item that is not an object, raises through ``fail``."""
    raw = record.get("messages")
    if not isinstance(raw, list):
        raise fail("messages", "missing" if raw is None else f"expected a list, got {type(raw).__name__}")
    for index, item in enumerate(raw):
        at = f"messages[{index}]"
        if not isinstance(item, Mapping):
            raise fail(at, f"expected a message object, got {type(item).__name__}")
        yield at, item


def text_field(value: Any, where: str, fail: Fail, *, what: str) -> str:
    """``value`` when it is a non-empty string; an InputError naming ``where`` otherwise (names and ids)."""
    if not isinstance(value, str) or not value:
        raise fail(where, f"{what} must be a non-empty string, got {_shown(value)}")
    return value


def optional_text_field(value: Any, where: str, fail: Fail, *, what: str) -> str | None:
    """:func:`text_field`, or ``None`` when ``value`` is absent (``None``)."""
    return None if value is None else text_field(value, where, fail, what=what)


def flag_field(value: Any, where: str, fail: Fail) -> bool | None:
    """A log's boolean error flag: ``None`` when absent, else it must be ``true`` or ``false``."""
    if value is None or isinstance(value, bool):
        return value
    raise fail(where, f"expected true or false, got {_shown(value)}")


def _shown(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return f"{'an object' if isinstance(value, dict) else 'a list'}"
    return f"{value!r:.60}"
