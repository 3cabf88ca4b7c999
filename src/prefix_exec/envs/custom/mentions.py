"""Values a conversation's messages mention: the tokenization that decides which argument values a user or
system message gave, and the record of them for one conversation (:class:`Mentions`).

A ``refs`` argument is satisfied by a value an earlier call produced, or by a value an earlier user or system
message of the conversation gave (:mod:`prefix_exec.envs.custom.session`). Which values a message gave is this
rule, exact and case as written:

1. **Text.** The message's text is its ``content`` when that is a string, or the ``text`` of each part of a list of
   content parts (OpenAI's ``{"type": "text", "text": ...}``, Anthropic's text blocks; a string item counts as
   text), joined by newlines (:func:`message_text`). Any other content (images, objects, numbers) gives nothing.
   Only the first :data:`MAX_TEXT_CHARS` characters of a message are read.
2. **Words.** The text splits at whitespace and at en and em dashes (``\u2013 \u2014``) into words (maximal runs
   of other characters): a dash joins no id (``#W7209932\u2014pretty`` is the words ``#W7209932`` and ``pretty``,
   ``M20IZO\u2014I'd`` is ``M20IZO`` and ``I'd``), while the hyphen ``-`` is part of ids and never splits.
3. **Tokens.** A word gives the word stripped of the :data:`EDGE` characters at both ends (quotes, brackets,
   sentence punctuation and Markdown's ``*``: ``"8JK2LM".`` and ``**sophia_silva_7557**.`` give ``8JK2LM`` and
   ``sophia_silva_7557``; ``_`` and ``-`` are part of ids and never strip), and each piece of the word between
   :data:`SEPARATORS` (those but ``.``, and ``= / \\ # |`` and currency signs), stripped the same way
   (``id=8JK2LM`` gives ``id=8JK2LM``, ``id`` and ``8JK2LM``; ``#W2378156`` gives itself and ``W2378156``;
   ``$120`` gives ``$120`` and ``120``). A ``.`` inside a word does not separate (``file.txt``, ``1.5``,
   ``a@b.com`` stay whole), nor do ``-``, ``_``, ``@``, ``+``; but an e-mail address (one ``@`` before a dotted
   domain) also gives its local part (``sophia_silva_7557@example.com`` gives itself and ``sophia_silva_7557``:
   systems such as tau-bench's airline name their users by the address's local part, and the user said it).
   Empty tokens and tokens longer than :data:`MAX_TOKEN_CHARS` are not kept. Case is kept as written: ``8jk2lm``
   does not give ``8JK2LM``.
4. **Values.** A JSON argument value compares to tokens through its :func:`forms`: a string is its own text
   exactly (``"8JK2LM"`` matches the token ``8JK2LM``), and a string that begins with ``#`` also its text without
   that ``#`` (``"#W2378156"`` matches ``#W2378156`` and ``W2378156``: a system such as tau2's retail writes its
   order ids with a leading ``#`` that users leave out when they type one, "order W5061109", so the id the agent
   passes on is the one the user gave; only one leading ``#`` is dropped, and ``"#"`` alone is only itself); an
   integer its decimal text (``123`` matches ``123``, not ``0123`` or
   ``123.0``); a float its shortest repr (``1.5`` matches ``1.5``) and, when integral, the integer's text too
   (``5.0`` matches ``5``). Booleans, ``null``, objects, empty strings and strings that hold whitespace or are
   longer than :data:`MAX_TOKEN_CHARS` are never given by a message (no single token can hold them). A list
   argument is compared element by element where the tool reads lists element-wise (``ToolSpec.values``).

So a value stands as a whole token: ``1234`` is not given by ``12345``, nor ``ABC`` by ``ABCD``, and every token
is a substring of the message's text (the identities tests/envs/test_custom_mentions.py checks).

Bounds (a hostile message of any size): a message is read up to :data:`MAX_TEXT_CHARS` characters, keeps at most
:data:`MAX_MESSAGE_TOKENS` distinct tokens, and a conversation reads at most :data:`MAX_CONVERSATION_CHARS`
characters and keeps at most :data:`MAX_CONVERSATION_TOKENS` tokens; a message cut by a bound is noted
(:attr:`Mentions.cut`), and what was not read gives nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

#: Characters of a message read, per message: text beyond it gives nothing.
MAX_TEXT_CHARS = 1_000_000
#: The longest token kept, in characters: an id is short; a longer run is no value a message gave.
MAX_TOKEN_CHARS = 128
#: Distinct tokens kept from one message, in the order they first appear.
MAX_MESSAGE_TOKENS = 20_000
#: Distinct tokens kept from one conversation (all its user and system messages together).
MAX_CONVERSATION_TOKENS = 100_000
#: Characters read from one conversation's messages together (about 1.5 s of tokenizing on one core).
MAX_CONVERSATION_CHARS = 10_000_000
#: Stripped from both ends of a word and of each piece: quotes, brackets, sentence punctuation and Markdown's
#: emphasis ``*`` (``**mia_li_3668**.`` gives ``mia_li_3668``; ``_`` and the hyphen ``-`` are part of ids and never
#: strip or split).
EDGE = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb()[]{}<>.,;:!?\u2026*"
#: Characters that split the text into words besides whitespace: the en and em dashes (rule 2).
DASHES = "\u2013\u2014"
#: Characters that separate the pieces of a word (each piece is a token too): :data:`EDGE` but ``.``, and
#: ``= / \\ # |`` and currency signs.
SEPARATORS = EDGE.replace(".", "") + "=/\\#|$\u20ac\u00a3\u00a5"
_WORD = re.compile(r"[^\s" + DASHES + "]+")
_SPLIT = re.compile("[" + re.escape(SEPARATORS) + "]")
#: An e-mail address (one ``@``, a dotted domain): its local part is a token too (rule 3).
_EMAIL = re.compile(r"([^@]+)@[^@.]+(?:\.[^@.]+)+")


def message_text(content: Any, limit: int = MAX_TEXT_CHARS) -> str:
    """The text of a message's ``content`` (rule 1 of the module docstring), at most ``limit`` characters."""
    if isinstance(content, str):
        return content[:limit]
    parts: list[str] = []
    size = 0
    items = content if isinstance(content, list) else [content] if isinstance(content, Mapping) else []
    for item in items:
        if size >= limit:
            break
        text = item if isinstance(item, str) else item.get("text") if isinstance(item, Mapping) else None
        if isinstance(text, str):
            parts.append(text[: limit - size])
            size += len(parts[-1]) + 1
    return "\n".join(parts)[:limit]


def tokens(text: str, limit: int = MAX_MESSAGE_TOKENS) -> list[str]:
    """The distinct tokens of ``text`` (rules 2 and 3), in the order they first appear, at most ``limit`` of them;
    only the first :data:`MAX_TEXT_CHARS` characters are read."""
    found: dict[str, None] = {}
    if limit <= 0:
        return []
    for match in _WORD.finditer(text, 0, MAX_TEXT_CHARS):
        word = match.group()
        for token in _word_tokens(word):
            if token not in found:
                found[token] = None
                if len(found) >= limit:
                    return list(found)
    return list(found)


def _word_tokens(word: str) -> list[str]:
    """The tokens of one word: itself stripped, an e-mail address's local part, and its pieces between
    separators, stripped (rule 3)."""
    whole = word.strip(EDGE)
    kept = [whole] if whole and len(whole) <= MAX_TOKEN_CHARS else []
    if kept and (address := _EMAIL.fullmatch(whole)) is not None:
        kept.append(address.group(1))
    if _SPLIT.search(word) is None:
        return kept
    for piece in _SPLIT.split(word):
        stripped = piece.strip(EDGE)
        if stripped and len(stripped) <= MAX_TOKEN_CHARS and stripped != whole:
            kept.append(stripped)
    return kept


def forms(value: Any) -> tuple[str, ...]:
    """The tokens that would give ``value`` (rule 4): ``()`` for a value no message can give."""
    if isinstance(value, bool) or value is None:
        return ()
    if isinstance(value, int):
        text = str(value)
        return (text,) if len(text) <= MAX_TOKEN_CHARS else ()
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return ()
        shown = repr(value)
        return (shown, str(int(value))) if value.is_integer() and abs(value) < 1e16 else (shown,)
    if isinstance(value, str) and value and len(value) <= MAX_TOKEN_CHARS and not any(c.isspace() for c in value):
        bare = value[1:]  # "#W5061109" is also given by "W5061109" (rule 4: the users' form of the id)
        return (value, bare) if value.startswith("#") and bare else (value,)
    return ()


class Mentions:
    """The tokens the conversation's user and system messages gave so far, each with the index of the first
    message that gave it (the caller's numbering: a transcript's 0-based message index).

    :meth:`fork` is cheap (copy on write): a fork shares the tokens until either side hears another message.
    """

    def __init__(self, first: dict[str, int] | None = None, cut: tuple[int, ...] = (), read: int = 0) -> None:
        self._first: dict[str, int] = first if first is not None else {}
        self._shared = first is not None
        #: The indices of messages a bound cut (text past :data:`MAX_TEXT_CHARS`, more tokens than a bound keeps).
        self.cut = cut
        #: Characters read so far (at most :data:`MAX_CONVERSATION_CHARS`).
        self.read = read

    def __len__(self) -> int:
        return len(self._first)

    def hear(self, index: int, content: Any) -> None:
        """Take the tokens of message ``index``'s ``content`` (rules 1 to 3) within the conversation's bound."""
        limit = min(MAX_MESSAGE_TOKENS, MAX_CONVERSATION_TOKENS - len(self._first))
        room = min(MAX_TEXT_CHARS, MAX_CONVERSATION_CHARS - self.read)
        text = message_text(content, room + 1)  # one more than read: whether the message was cut
        longer, text = len(text) > room, text[:room]
        self.read += len(text)
        said = tokens(text, limit)
        new = [t for t in said if t not in self._first]  # at most ``limit``: the bound holds
        if new:
            if self._shared:
                self._first, self._shared = dict(self._first), False
            for token in new:
                self._first[token] = index
        if (len(said) >= limit and text) or longer:
            self.cut = (*self.cut, index)[-64:]  # the last ones: a note, not a list of every message

    def heard(self) -> dict[str, int]:
        """Every token heard so far, with the index of the first message that gave it (a copy)."""
        return dict(self._first)

    def given_at(self, value: Any) -> int | None:
        """The index of the first message that gave ``value`` (any of its :func:`forms`), or ``None``."""
        found = [self._first[f] for f in forms(value) if f in self._first]
        return min(found) if found else None

    def fork(self) -> Mentions:
        self._shared = True
        return Mentions(self._first, self.cut, self.read)


def given_tokens(contents: Iterable[Any]) -> dict[str, int]:
    """Every token the ``contents`` (messages' contents, in order, numbered from 0) gave, with the index of the
    first one that gave it, within :class:`Mentions`' bounds: for a corpus scan (spec inference)."""
    mentions = Mentions()
    for index, content in enumerate(contents):
        mentions.hear(index, content)
    return mentions.heard()
