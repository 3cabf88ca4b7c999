"""Information availability: an identifier argument must come from something the agent had seen.

An id the agent passes must appear in an earlier user message, an earlier tool result, or the system context
(the domain policy). An id that exists in the DB but that the agent never saw is a guess, and an
``information`` failure.

Only identifier arguments are checked, named in :data:`ID_ARGUMENTS`, at any nesting depth (so
``flights[].flight_number`` and ``payment_methods[].payment_id`` count). Everything else is left alone on
purpose, because agents legitimately normalise or compute it and a textual check would misfire: names,
addresses, emails, zip codes, dates (the user says "May 20", the call says ``2024-05-20``), airport codes
("from SF" becomes ``SFO``), cabins, amounts and totals (computed), free-text reasons and summaries.

Matching is case-insensitive on the value's characters with a leading ``#`` dropped (users say ``W2378156`` for
order ``#W2378156``), and the value must stand as a whole token: not preceded or followed by a letter or
digit, so ``1234`` is not found inside ``12345``. Numbers are compared through their decimal text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

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


def identifier_arguments(arguments: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
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


def unseen(arguments: Mapping[str, Any], evidence: Evidence) -> list[tuple[str, str]]:
    """The identifier arguments whose value appears in no text of ``evidence``."""
    return [(path, value) for path, value in identifier_arguments(arguments) if not evidence.contains(value)]
