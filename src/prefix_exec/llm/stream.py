"""Streamed answers (``stream = true`` in a grid's model table): the chunks of one chat completion put back together
as the body the same request gets unstreamed, so that a progress line can count what arrived while a local model
writes for minutes.

The official ``openai`` client reads the server-sent events (``Stream``); :func:`streamed_body` asks with
``"stream": true`` and ``"stream_options": {"include_usage": true}`` (for the final chunk's ``usage``) and builds
``{"id", "object": "chat.completion", "created", "model", "choices": [{"index": 0, "message", "finish_reason"}],
"usage"}`` from the chunks, as the client's own ``ChatCompletionStreamState`` does: each text of a delta is
appended (the answer, a reasoning text, a call's name and arguments, by the call's ``index``), the other fields
are kept from their first chunk, ``finish_reason`` from the last that has one. Only the first choice is kept (the
runner asks for one). The answer is the same text, so the cache entry is the same (the key is the request without
the stream fields) and a run reads the same rollout either way; a server that ignores ``stream`` and answers one
JSON body is read as such. ``on_text`` is called once per chunk that carries text (about a token each).

A text past 1,000,000 characters is cut as it arrives, as the unstreamed body's is cut before it is cached
(:func:`~prefix_exec.llm.decode.kept_body`): a runaway answer holds bounded memory. A call's arguments are kept
whole, as unstreamed.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from typing import Any

from prefix_exec.json_types import JsonObject
from prefix_exec.llm.decode import cut_text
from prefix_exec.llm.text_reading import MAX_ANSWER_CHARS

#: What a streamed request adds to the body (left out of the cache key: the answer is the same).
STREAM_FIELDS: JsonObject = {"stream": True, "stream_options": {"include_usage": True}}


def streamed_body(client: Any, stream_class: Any, request: JsonObject, on_text: Callable[[], None]) -> Any:
    """The body of ``request`` asked streamed through ``client`` (an ``openai.OpenAI``; ``stream_class`` is its
    ``Stream[object]``): the assembled chunks; from a server that answered unstreamed, its decoded JSON (or its
    text, when it did not say JSON, as the client's ``cast_to=object`` gives). Raises what the client raises
    (``APIError``...) and ``ValueError`` for an event or a body that is not JSON."""
    stream = client.post(
        "/chat/completions", body={**request, **STREAM_FIELDS}, cast_to=object, stream=True, stream_cls=stream_class
    )
    response = stream.response
    kind = response.headers.get("content-type", "")
    if "text/event-stream" not in kind:  # the server does not stream: one body, read as the client reads it
        try:
            data = response.read()
        finally:
            response.close()
        return json.loads(data) if "json" in kind else data.decode("utf-8", "replace")
    return assemble(stream, on_text)


class _Text:
    """A text of the answer as it arrives, kept to :data:`MAX_ANSWER_CHARS` (the rest counted, not kept): the same
    text :func:`~prefix_exec.llm.decode.kept_body` makes of the whole, in memory bounded whatever the length."""

    def __init__(self) -> None:
        self.head, self.kept, self.total = io.StringIO(), 0, 0

    def write(self, piece: str) -> None:
        if self.kept < MAX_ANSWER_CHARS:
            taken = piece[: MAX_ANSWER_CHARS - self.kept]
            self.head.write(taken)
            self.kept += len(taken)
        self.total += len(piece)

    def getvalue(self) -> str:
        head = self.head.getvalue()
        return head if self.total <= MAX_ANSWER_CHARS else cut_text(head, self.total)


def assemble(chunks: Iterable[Any], on_text: Callable[[], None] = lambda: None) -> JsonObject:
    """One ``chat.completion`` body from its ``chat.completion.chunk`` objects (see the module docstring). A chunk
    that is not an object, or holds no first choice, adds nothing but its ``usage``."""
    head: JsonObject = {}
    texts: dict[str, _Text] = {}
    fields: JsonObject = {}
    calls: dict[int, JsonObject] = {}
    finish: Any = None
    usage: Any = None
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        for key in ("id", "created", "model"):
            head.setdefault(key, chunk.get(key))
        if chunk.get("usage") is not None:
            usage = chunk["usage"]
        choice = _first_choice(chunk)
        if choice is None:
            continue
        finish = choice.get("finish_reason") or finish
        delta = choice.get("delta")
        if isinstance(delta, dict) and _add_delta(delta, texts, fields, calls):
            on_text()
    message: JsonObject = {"role": "assistant", **fields, **{key: text.getvalue() for key, text in texts.items()}}
    message.setdefault("content", None)
    if calls:
        message["tool_calls"] = [_call(calls[index]) for index in sorted(calls)]
    choices = [{"index": 0, "message": message, "finish_reason": finish}] if head or texts or calls else []
    return {**head, "object": "chat.completion", "choices": choices, "usage": usage}


def _first_choice(chunk: JsonObject) -> JsonObject | None:
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return None
    return next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)


def _add_delta(delta: JsonObject, texts: dict[str, _Text], fields: JsonObject, calls: dict[int, Any]) -> bool:
    """Add one delta's pieces; whether it carried text (the answer, a reasoning text, a call's arguments)."""
    carried = False
    for key, value in delta.items():
        if key == "tool_calls" and isinstance(value, list):
            carried = any(_add_call(piece, calls) for piece in value if isinstance(piece, dict)) or carried
        elif key == "role" or value is None:
            continue
        elif isinstance(value, str):
            texts.setdefault(key, _Text()).write(value)
            carried = carried or bool(value)
        else:
            fields.setdefault(key, value)
    return carried


def _add_call(piece: JsonObject, calls: dict[int, JsonObject]) -> bool:
    index = piece.get("index", 0)
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < 100_000:
        return False
    call = calls.setdefault(index, {"id": None, "type": None, "name": io.StringIO(), "arguments": io.StringIO()})
    for key in ("id", "type"):
        if call[key] is None and isinstance(piece.get(key), str):
            call[key] = piece[key]
    function = piece.get("function")
    if not isinstance(function, dict):
        return False
    for key in ("name", "arguments"):
        if isinstance(function.get(key), str):
            call[key].write(function[key])
    return bool(function.get("arguments"))


def _call(call: JsonObject) -> JsonObject:
    out: JsonObject = {"id": call["id"], "type": call["type"] or "function"}
    out["function"] = {"name": call["name"].getvalue(), "arguments": call["arguments"].getvalue()}
    return out
