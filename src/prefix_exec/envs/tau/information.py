"""Information availability: an identifier argument must come from something the agent had seen.

An id the agent passes must appear in an earlier user message, an earlier tool result, or the system context
(the domain policy). An id that exists in the DB but that the agent never saw is a guess, and an
``information`` failure.

Only identifier arguments are checked, named in :data:`ID_ARGUMENTS`, at any nesting depth (so
``flights[].flight_number`` and ``payment_methods[].payment_id`` count). Everything else is left alone on
purpose, because agents legitimately normalise or compute it and a textual check would misfire: names,
addresses, emails, zip codes, dates (the user says "May 20", the call says ``2024-05-20``), airport codes
("from SF" becomes ``SFO``), cabins, amounts and totals (computed), free-text reasons and summaries.

What a call may have seen is a :class:`Timeline`: the conversation's texts up to the assistant message issuing
the call, and the results of accepted calls of earlier assistant messages (never a parallel sibling's).

Matching is case-insensitive on the value's characters with a leading ``#`` dropped (users say ``W2378156`` for
order ``#W2378156``), and the value must stand as a whole token: not preceded or followed by a letter or
digit, so ``1234`` is not found inside ``12345``. Numbers are compared through their decimal text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from copy import copy as shallow_copy
from dataclasses import dataclass, field
from typing import Any

from prefix_exec.json_types import JsonMapping

#: Argument names whose values are identifiers that must have been seen before use.
ID_ARGUMENTS: frozenset[str] = frozenset(
    {
        "user_id",
        "reservation_id",
        "flight_number",
        "payment_id",
        "order_id",
        "item_ids",
        "new_item_ids",
        "product_id",
        "payment_method_id",
    }
)


def normalize(value: Any) -> str:
    """The comparable form of an id: lower-cased text with surrounding space and a leading ``#`` dropped."""
    text = str(value).strip().lower()
    return text[1:] if text.startswith("#") else text


def identifier_arguments(arguments: JsonMapping, prefix: str = "") -> Iterator[tuple[str, str]]:
    """``(path, value)`` for every identifier argument in ``arguments``, nested lists and objects included.

    A list under an id name (``item_ids``) yields one entry per element, path ``item_ids[i]``.
    """
    for name, value in arguments.items():
        path = f"{prefix}{name}"
        if name in ID_ARGUMENTS:
            items = value if isinstance(value, list) else [value]
            for index, item in enumerate(items):
                if isinstance(item, (str, int)) and not isinstance(item, bool) and str(item).strip():
                    yield (f"{path}[{index}]" if isinstance(value, list) else path), str(item)
        elif isinstance(value, Mapping):
            yield from identifier_arguments(value, prefix=f"{path}.")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, Mapping):
                    yield from identifier_arguments(item, prefix=f"{path}[{index}].")


@dataclass
class Evidence:
    """Everything the agent had seen so far, as normalised text. Grows as the conversation goes on."""

    texts: list[str] = field(default_factory=list)

    def add(self, text: Any) -> None:
        if text is None:
            return
        self.texts.append(str(text).lower().replace("#", " "))

    def extend(self, texts: Iterable[Any]) -> None:
        for text in texts:
            self.add(text)

    def contains(self, value: Any) -> bool:
        """Whether ``value`` stands as a whole token in some text seen so far."""
        needle = normalize(value)
        if not needle:
            return True
        pattern = re.compile(r"(?<![a-z0-9])" + re.escape(needle) + r"(?![a-z0-9])")
        return any(needle in text and pattern.search(text) for text in self.texts)

    def copy(self) -> Evidence:
        return Evidence(list(self.texts))


def unseen(arguments: JsonMapping, evidence: Evidence) -> list[tuple[str, str]]:
    """The identifier arguments whose value appears in no text of ``evidence``."""
    return [(path, value) for path, value in identifier_arguments(arguments) if not evidence.contains(value)]


def conversation_timeline(transcript: Sequence[JsonMapping]) -> tuple[tuple[int, str], ...]:
    """``(calls_before, text)`` for every non-assistant message text, in order.

    ``calls_before`` counts the assistant tool calls in messages *strictly before* the message holding the
    text's first following call; a text is visible to call k (0-based) when ``calls_before <= k``.
    """
    timeline: list[tuple[int, str]] = []
    calls = 0
    for message in transcript:
        role = message.get("role")
        if role == "assistant":
            calls += len(message.get("tool_calls") or ())
            continue
        content = message.get("content")
        if content:
            timeline.append((calls, content if isinstance(content, str) else json.dumps(content)))
    return tuple(timeline)


def call_messages(transcript: Sequence[JsonMapping]) -> tuple[int, ...]:
    """For every assistant tool call (0-based, counted like :func:`conversation_timeline`), the 0-based index
    in ``transcript`` of the assistant message issuing it. Calls sharing an index are parallel calls."""
    return tuple(
        index
        for index, message in enumerate(transcript)
        if message.get("role") == "assistant"
        for _ in message.get("tool_calls") or ()
    )


class Timeline:
    """The evidence of one session, fed call by call; ``evidence`` ``None`` turns the information check off.

    ``texts`` (:func:`conversation_timeline`) and ``messages`` (:func:`call_messages`) come from a bound
    rollout's transcript; both are empty for a session driven online, where the driver adds what the agent sees
    (:meth:`observe`) and, with :meth:`begin_message`, marks where one model answer's calls begin. Before each
    call (:meth:`before_call`) the evidence gains every transcript text visible to it, and the results of
    accepted calls (:meth:`accepted`) of earlier assistant messages.
    """

    def __init__(
        self,
        evidence: Evidence | None,
        texts: tuple[tuple[int, str], ...] = (),
        messages: tuple[int, ...] = (),
    ) -> None:
        self.evidence = evidence
        self.texts = texts
        self.messages = messages
        self.calls = 0  # calls checked so far: the 0-based index of the next one
        self._seen_upto = 0
        self._pending: list[str] = []  # accepted results not yet visible (the current message's calls)
        self._online = False  # begin_message() was called: the driver marks answer boundaries

    def copy(self) -> Timeline:
        """An independent twin (a session's fork): the evidence and the pending results are copied, the
        rest (immutable) shared."""
        twin = shallow_copy(self)
        twin.evidence = self.evidence.copy() if self.evidence is not None else None
        twin._pending = list(self._pending)
        return twin

    def observe(self, text: Any) -> None:
        """Add a text the agent has now seen (a user turn, for online use)."""
        if self.evidence is not None:
            self.evidence.add(text)

    def begin_message(self) -> None:
        """Online use: the next calls form one assistant message; results of earlier calls become evidence."""
        self._online = True
        if self.evidence is not None:
            self.evidence.extend(self._pending)
        self._pending.clear()

    def before_call(self) -> None:
        """Feed the evidence every transcript text visible to the call about to be checked, and the results of
        accepted calls of earlier assistant messages; then count the call."""
        if self.evidence is not None:
            if self._pending and self._new_message(self.calls):
                self.evidence.extend(self._pending)
                self._pending.clear()
            while self._seen_upto < len(self.texts) and self.texts[self._seen_upto][0] <= self.calls:
                self.evidence.add(self.texts[self._seen_upto][1])
                self._seen_upto += 1
        self.calls += 1

    def accepted(self, result: str) -> None:
        """An accepted call's result: seen by the calls of later assistant messages only. Without a transcript
        or answer boundaries (online, one call at a time) it is seen at once."""
        if self.evidence is None:
            return
        self._pending.append(result)
        if not self.messages and not self._online:
            self.evidence.extend(self._pending)
            self._pending.clear()

    def _new_message(self, index: int) -> bool:
        """Whether call ``index`` (0-based) opens an assistant message, so earlier calls' results are visible.

        Without message boundaries (a session driven online, one call at a time) every call is its own message,
        unless the driver marks them (:meth:`begin_message`), which then releases results itself.
        """
        if self._online:
            return False
        if index == 0 or index >= len(self.messages):
            return True
        return self.messages[index] != self.messages[index - 1]
