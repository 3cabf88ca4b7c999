"""The agent calls of one ToolSandbox scenario folder, read from its JSON files with every value checked.

Both readers raise :class:`~prefix_exec.errors.InputError` naming the file and the field (``rows[12].visible_to``)
for a value of the wrong shape, so one malformed scenario is one skipped scenario, never a crashed import:

- :func:`calls_from_execution_context`: every ``AGENT -> EXECUTION_ENVIRONMENT`` row of ``_dbs.SANDBOX``, paired
  with its reply by ``openai_tool_call_id`` (parallel calls can come back reordered);
- :func:`calls_from_conversation`: the heuristic fallback over ``conversation.json`` messages, and
  :func:`minefields_from_conversation` for its ``*_details.minefield_matches``.

JSON is read by :func:`load_json`: a file too deep to parse, an integer past Python's digit limit or a file
too large for memory is an input error like any other malformed file. Call code is read by
:func:`~prefix_exec.envs.toolsandbox.calls.parse_call_code` (linear, never executed).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_exec.envs.toolsandbox.calls import literal_arguments, parse_call_code
from prefix_exec.errors import InputError
from prefix_exec.importers.arguments import decode_arguments
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.records.jsonl import check_regular_file
from prefix_exec.trajectory import Observation, ToolCall

_ERROR_TEXT = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)(: |$)")


@dataclass(frozen=True)
class RecordedCalls:
    """A scenario's agent calls, the SANDBOX row index of each (``None`` in the conversation fallback), and
    the ``(depth, minefield index, similarity)`` of minefield hits found alongside them."""

    calls: tuple[ToolCall, ...] = ()
    rows: tuple[int | None, ...] = ()
    minefields: tuple[tuple[int, int, float], ...] = ()


def load_json(path: Path) -> Any:
    """The parsed file; raises :class:`InputError` for unreadable, undecodable, too deep or too large JSON."""
    check_regular_file(path)  # a FIFO would block, /dev/zero fill memory
    try:
        with path.open(encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=path) from None
    except ValueError as exc:  # an integer past Python's int-digit limit
        raise InputError(f"not readable JSON: {exc}", path=path) from None
    except RecursionError:
        raise InputError("JSON nested too deeply to read", path=path) from None
    except MemoryError:
        raise InputError("too large to read into memory", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None


def calls_from_execution_context(path: Path) -> RecordedCalls:
    """The agent's calls from the SANDBOX rows, each with its recorded reply paired by call id."""
    data = load_json(path)
    sandbox = (
        data.get("_dbs", {}).get("SANDBOX") if isinstance(data, dict) and isinstance(data.get("_dbs"), dict) else None
    )
    if not isinstance(sandbox, list):
        raise InputError("expected _dbs.SANDBOX rows", path=path)
    rows = [(number, row) for number, row in enumerate(sandbox) if isinstance(row, dict)]
    replies: dict[str | None, deque[JsonObject]] = defaultdict(deque)
    for number, row in rows:
        if row.get("sender") == "EXECUTION_ENVIRONMENT" and row.get("recipient") == "AGENT":
            replies[_call_id(row, path, number)].append(row)
    calls: list[ToolCall] = []
    indices: list[int | None] = []
    turn = -1
    for number, row in rows:
        sender, recipient = row.get("sender"), row.get("recipient")
        if sender == "USER" and recipient == "AGENT" and _agent_sees(row, path, number):
            turn += 1
        if sender != "AGENT" or recipient != "EXECUTION_ENVIRONMENT":
            continue
        code = _text(row, "content", path, number)
        call_id = _call_id(row, path, number)
        queue = replies.get(call_id)
        reply = queue.popleft() if queue else None
        traces = _traces(reply, path)
        calls.append(
            ToolCall(
                name=_real_name(code, traces, row.get("openai_function_name")),
                arguments=_arguments(code, traces),
                call_id=call_id,
                turn=max(turn, 0),
                observation=_observation(reply),
                raw=code,
            )
        )
        index = row.get("sandbox_message_index")
        if index is not None and type(index) is not int:
            raise InputError(
                f"expected an integer, got {type(index).__name__}",
                path=path,
                field=f"_dbs.SANDBOX[{number}].sandbox_message_index",
            )
        indices.append(index)
    return RecordedCalls(tuple(calls), tuple(indices))


def calls_from_conversation(path: Path) -> RecordedCalls:
    """Heuristic fallback: calls from OpenAI-style messages; rejections from exception-like tool text."""
    messages = load_json(path)
    if not isinstance(messages, list):
        raise InputError("expected a list of messages", path=path)
    replies: dict[str | None, JsonMapping] = {}
    for number, m in enumerate(messages):
        if isinstance(m, dict) and m.get("role") == "tool":
            replies[_call_id(m, path, number, key="tool_call_id")] = m
    calls: list[ToolCall] = []
    turn = -1
    for number, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            turn += 1
        for call in _tool_calls(message, path, number):
            call_id = _call_id(call, path, number, key="id")
            function = call.get("function")
            if not isinstance(function, dict):
                raise InputError(
                    f"tool call {call_id!r}: 'function' must be an object, got {type(function).__name__}", path=path
                )
            text = function.get("arguments") or "{}"
            if not isinstance(text, str):
                raise InputError(
                    f"tool call {call_id!r}: 'function.arguments' must be a JSON string, got {type(text).__name__}",
                    path=path,
                )
            arguments, problem = decode_arguments(text)
            reply = replies.get(call_id)
            content = None if reply is None else reply.get("content")
            error = None if reply is None else bool(_ERROR_TEXT.match(str(content or "")[:4096]))
            calls.append(
                ToolCall(
                    name=str(function.get("name") or ""),
                    arguments=arguments,
                    call_id=call_id,
                    turn=max(turn, 0),
                    observation=None if reply is None else Observation(content, error),
                    raw=text,
                    parse_error=problem,
                )
            )
    hits = tuple(minefields_from_conversation(path, messages))
    return RecordedCalls(tuple(calls), (None,) * len(calls), hits)


def minefields_from_conversation(path: Path, messages: list[Any] | None = None) -> list[tuple[int, int, float]]:
    """``(depth, minefield index, similarity)`` of every minefield match with similarity > 0."""
    messages = messages if messages is not None else load_json(path)
    hits: list[tuple[int, int, float]] = []
    ids: list[str | None] = []
    for number, message in enumerate(messages if isinstance(messages, list) else ()):
        if not isinstance(message, dict):
            continue
        calls = _tool_calls(message, path, number)
        first_depth = len(ids) + 1
        ids.extend(_call_id(call, path, number, key="id") for call in calls)
        role = message.get("role")
        field = f"messages[{number}].{role}_details"
        details = message.get(f"{role}_details") if isinstance(role, str) else None
        if details is None:
            continue
        if not isinstance(details, dict):
            raise InputError(f"expected an object, got {type(details).__name__}", path=path, field=field)
        matches = details.get("minefield_matches") or []
        if not isinstance(matches, list):
            raise InputError("expected a list", path=path, field=f"{field}.minefield_matches")
        for k, match in enumerate(matches):
            where = f"{field}.minefield_matches[{k}]"
            similarity = _number(match, "minefield_similarity", 0.0, path, where)
            if similarity <= 0:
                continue
            index = _number(match, "minefield_index", -1, path, where)
            tool_call_id = message.get("tool_call_id")
            if role == "tool" and isinstance(tool_call_id, str) and tool_call_id in ids:
                depth = ids.index(tool_call_id) + 1
            elif calls:
                depth = first_depth
            else:
                depth = len(ids)
            hits.append((depth, int(index), similarity))
    return hits


def _call_id(row: JsonMapping, path: Path, number: int, key: str = "openai_tool_call_id") -> str | None:
    value = row.get(key)
    if value is None or isinstance(value, str):
        return value
    raise InputError(f"a call id must be a string, got {type(value).__name__}", path=path, field=f"[{number}].{key}")


def _text(row: JsonMapping, key: str, path: Path, number: int) -> str:
    value = row.get(key)
    if value is None or isinstance(value, str):
        return value or ""
    raise InputError(f"expected text, got {type(value).__name__}", path=path, field=f"_dbs.SANDBOX[{number}].{key}")


def _agent_sees(row: JsonMapping, path: Path, number: int) -> bool:
    visible = row.get("visible_to")
    if visible is None:
        return True
    if not isinstance(visible, list):
        raise InputError(
            f"expected a list of roles, got {type(visible).__name__}",
            path=path,
            field=f"_dbs.SANDBOX[{number}].visible_to",
        )
    return "AGENT" in visible


def _tool_calls(message: JsonMapping, path: Path, number: int) -> list[JsonMapping]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise InputError(
            f"expected a list, got {type(calls).__name__}", path=path, field=f"messages[{number}].tool_calls"
        )
    return [call for call in calls if isinstance(call, dict)]


def _traces(reply: JsonMapping | None, path: Path) -> list[Any]:
    traces = (reply or {}).get("tool_trace") or []
    if not isinstance(traces, list):
        raise InputError(f"tool_trace must be a list, got {type(traces).__name__}", path=path)
    decoded = []
    for trace in traces:
        try:
            value = json.loads(trace) if isinstance(trace, str) and len(trace) <= 1_000_000 else None
        except (ValueError, RecursionError):
            value = None
        decoded.append(value)
    return decoded


def _number(match: Any, key: str, default: float, path: Path, where: str) -> float:
    if not isinstance(match, dict):
        raise InputError(f"expected an object, got {type(match).__name__}", path=path, field=where)
    value = match.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"expected a number, got {type(value).__name__}", path=path, field=f"{where}.{key}")
    return float(value)


def _real_name(code: str, traces: list[Any], agent_facing: Any) -> str:
    parsed = parse_call_code(code)
    if parsed is not None:
        return parsed[2]
    for trace in traces:
        if isinstance(trace, dict) and "tool_name" in trace:
            return str(trace["tool_name"])
    return str(agent_facing or "")


def _arguments(code: str, traces: list[Any]) -> JsonObject:
    parsed = parse_call_code(code)
    value = literal_arguments(parsed[1]) if parsed is not None else None
    if value is not None and all(isinstance(k, str) for k in value):
        return value
    for trace in traces:
        arguments = trace.get("arguments") if isinstance(trace, dict) else None
        if isinstance(arguments, dict):
            return arguments
    return {}


def _observation(reply: JsonMapping | None) -> Observation | None:
    if reply is None:
        return None
    exception = reply.get("tool_call_exception")
    if exception:
        return Observation(str(exception), True)
    return Observation(reply.get("content"), False)
