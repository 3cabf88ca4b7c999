"""What the guard hears of the conversation: values the user gave, so that ``refs`` accept them as replay of a log
accepts values an earlier user message said (docs/custom.md, "Values the conversation gave"; docs/guard.md).

A proxy sees MCP traffic, never the chat between the user and the model. It hears, in order, each as one message
(numbered from 0 in the connection, the ``N`` of ``given by the conversation at message N``):

- ``--given FILE``: text the user or the harness gives the guard at start (the task's prompt, the user's first
  message): message 0 of every connection;
- each elicitation the user accepted: the server's ``elicitation/create`` request passes through the guard to the
  client, the client's answer with ``action: "accept"`` passes back, and its ``content`` values are what the user
  typed (one line each: a string as it is, a number as JSON writes it, each string of a list; booleans say nothing).

Not heard: a declined or cancelled elicitation; the messages of a ``sampling/createMessage`` request, whose
``user`` turns the server wrote (a server vouching for ids would make its own values given, the dependency check
moot); the model's text; tool results (they count through ``produces`` only). A heard text is cut at
:data:`MAX_HEARD_CHARS`, and a connection hears at most :data:`MAX_HEARD_MESSAGES` messages. What is heard is kept
in the record (``metadata.guard.heard``) and becomes the rollout's transcript, so that ``score custom`` on the
record hears the same messages before the same calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonObject
from prefix_exec.records.jsonl import check_regular_file

#: Longest text heard from one message, in characters (what a record keeps of it, too).
MAX_HEARD_CHARS = 100_000
#: Most messages one connection (or episode) hears; later ones are not heard, and ``metadata.guard.unheard``
#: counts them (each heard text is kept in the record, rewritten per call).
MAX_HEARD_MESSAGES = 100
#: Most elicitations awaiting the user's answer at once; past it the oldest is forgotten (its answer not heard).
MAX_OPEN_ELICITATIONS = 64
ELICIT = "elicitation/create"


def read_given(path: Path) -> str:
    """``--given FILE``'s text (UTF-8, at most :data:`MAX_HEARD_CHARS` characters read); an :class:`InputError`
    naming the file when it cannot be read."""
    check_regular_file(path)
    try:
        with path.open(encoding="utf-8") as handle:
            text = handle.read(MAX_HEARD_CHARS + 1)
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", path=path, hint="--given takes a text file") from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None
    if len(text) > MAX_HEARD_CHARS:
        raise InputError(
            f"longer than {MAX_HEARD_CHARS:,} characters",
            path=path,
            hint="--given takes what the user said (the task's prompt), not a document",
        )
    return text


def elicited_text(result: Any) -> str | None:
    """The text of an elicitation's answer (``ElicitResult``): its ``content`` values one per line when the user
    accepted, else ``None``."""
    if not isinstance(result, Mapping) or result.get("action") != "accept":
        return None
    content = result.get("content")
    if not isinstance(content, Mapping):
        return None
    lines: list[str] = []
    for value in content.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                lines.append(item)
            elif isinstance(item, int | float) and not isinstance(item, bool):
                lines.append(json.dumps(item))
    return "\n".join(lines)[:MAX_HEARD_CHARS] if lines else None


class Elicitations:
    """The server's elicitation requests awaiting the client's answer, by JSON-RPC id (bounded). Messages are the
    SDK's JSON-RPC models, read by their fields (this module does not import the SDK: the CLI imports it at start)."""

    def __init__(self) -> None:
        self.open: dict[int | str, None] = {}

    def asked(self, message: Any) -> None:
        """Note a server->client message: an ``elicitation/create`` request now awaits its answer."""
        request_id = getattr(message, "id", None)
        if getattr(message, "method", None) == ELICIT and isinstance(request_id, int | str):
            self.open[request_id] = None
            while len(self.open) > MAX_OPEN_ELICITATIONS:
                del self.open[next(iter(self.open))]

    def answered(self, message: Any) -> str | None:
        """A client->server message: the text the user gave when it answers an open elicitation (a response, not a
        request of the client's own), else ``None``."""
        request_id = getattr(message, "id", None)
        if hasattr(message, "method") or not isinstance(request_id, int | str) or request_id not in self.open:
            return None
        del self.open[request_id]
        return elicited_text(getattr(message, "result", None))


def heard_entry(text: str, source: str, after_calls: int) -> JsonObject:
    """One entry of ``metadata.guard.heard``: what was heard, from where, after how many recorded calls."""
    return {"after_calls": after_calls, "from": source, "text": text[:MAX_HEARD_CHARS]}


def heard_transcript(heard: Any, calls: int) -> tuple[JsonObject, ...] | None:
    """The rollout transcript of a connection's ``calls`` recorded calls and its ``heard`` entries: a user message
    per entry, placed before the calls recorded after it (an assistant message listing those calls, in order);
    ``None`` when nothing was heard."""
    if not isinstance(heard, list) or not heard:
        return None
    transcript: list[JsonObject] = []
    placed = 0
    for entry in heard:
        if not isinstance(entry, Mapping):
            continue
        after = min(max(int(entry.get("after_calls") or 0), placed), calls)
        if after > placed:
            transcript.append({"role": "assistant", "tool_calls": [{}] * (after - placed)})
            placed = after
        transcript.append({"role": "user", "content": str(entry.get("text", ""))})
    if calls > placed:
        transcript.append({"role": "assistant", "tool_calls": [{}] * (calls - placed)})
    return tuple(transcript)
