"""Credentials in URLs, removed from anything written to disk or shown.

A URL's ``user:pass@`` becomes ``***@``, and the values of query or fragment parameters whose names look like
secrets (``api_key=``, ``access_token=``, ``sig=``...) become ``***``. :func:`redact_url` takes one URL,
:func:`redact_text` every URL inside a free text (a message, a log line, a model name), and
:func:`redact_json` every string of a parsed JSON value (keys included). Records written before redaction
existed, or by other tools, can hold such URLs in their metadata; ``report`` and ``metrics`` read them through
these functions, so the user's files stay as they are and no output repeats a secret.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

#: Parameter names holding a secret when any of these words is part of them (case-insensitive).
SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "sig", "auth", "credential")
#: What a removed secret is replaced by; a URL holding it is one this module wrote.
MARK = "***"

# A URL in text is a scheme (a letter, then letters, digits, ``+``, ``.``, ``-``), ``://``, then at least one
# character up to a blank, a quote, an angle bracket or a backquote. It is found by :func:`_url_spans` from each
# ``://`` rather than by one regular expression: the expression ``[A-Za-z][A-Za-z0-9+.-]*://`` retries from every
# letter of a long run with no ``://`` after it, which is quadratic (153 s on a 200,000-character message).
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_URL_END = re.compile(r"[\s\"'<>`]")
# Fallback for a text urlsplit refuses (``http://u:p@[::1/v1``): the userinfo after ``//``, up to the last ``@``
# before the path.
_USERINFO = re.compile(r"//[^/?#]*@")


def _parameters(text: str) -> str:
    pairs = []
    for item in text.split("&"):
        name, sep, _ = item.partition("=")
        secret = sep and _secret_name(name)
        pairs.append(f"{name}={MARK}" if secret else item)
    return "&".join(pairs)


def redact_url(url: str) -> str:
    """``url`` without credentials: ``user:pass@`` becomes ``***@``, secret-looking query and fragment
    parameters become ``name=***``. A string that is not a URL, or holds no credentials, comes back unchanged
    (the same object)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not parseable (a broken IPv6 host): cut any userinfo by text
        return _USERINFO.sub(f"//{MARK}@", url, count=1)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MARK}@" + netloc.rpartition("@")[2]
    query = _parameters(parts.query) if parts.query else parts.query
    fragment = _parameters(parts.fragment) if "=" in parts.fragment else parts.fragment
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _url_spans(text: str) -> Iterator[tuple[int, int]]:
    """The ``(start, end)`` of every URL in ``text``, left to right, not overlapping: what
    ``re.finditer(r"[A-Za-z][A-Za-z0-9+.\\-]*://[^\\s\"'<>`]+", text)`` finds, in time linear in ``len(text)``.
    Each character is looked at a bounded number of times: the walk back from a ``://`` stops at the previous
    one (``/`` is not a scheme character) or at the end of the previous URL."""
    pos = 0
    while (sep := text.find("://", pos)) >= 0:
        run = sep
        while run > pos and text[run - 1] in _SCHEME_CHARS:
            run -= 1
        # The leftmost letter of the run starts the scheme (the characters before it are digits or + . -).
        start = next((i for i in range(run, sep) if text[i].isascii() and text[i].isalpha()), sep)
        body = sep + 3
        if start == sep or body >= len(text) or _URL_END.match(text, body):
            pos = sep + 1
            continue
        stop = _URL_END.search(text, body)
        end = stop.start() if stop else len(text)
        yield start, end
        pos = end


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`; text without ``://`` is returned at
    once (the common case costs one substring search). Linear in ``len(text)``."""
    if "://" not in text:
        return text
    pieces: list[str] = []
    done = 0
    for start, end in _url_spans(text):
        pieces += (text[done:start], redact_url(text[start:end]))
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def redact_json(value: Any) -> Any:
    """``value``, a parsed JSON value, with :func:`redact_text` applied to every string, dictionary keys
    included. Its lists and dictionaries are changed in place (pass freshly parsed data, as the readers do) and
    returned; a string is returned redacted. The walk keeps its own stack, so any nesting the JSON parser
    accepted is fine (no RecursionError)."""
    if isinstance(value, str):
        return redact_text(value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i] = redact_text(item)
                elif isinstance(item, dict | list):
                    stack.append(item)
        elif isinstance(node, dict):
            if any(isinstance(k, str) and "://" in k for k in node):
                items = list(node.items())
                node.clear()
                node.update((redact_text(k) if isinstance(k, str) else k, v) for k, v in items)
            for key, item in node.items():
                if isinstance(item, str):
                    node[key] = redact_text(item)
                elif isinstance(item, dict | list):
                    stack.append(item)
    return value


def _secret_name(name: str) -> bool:
    return any(word in name.lower() for word in SECRET_WORDS)


def redact_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """A command line without its secrets, and the secret values removed from it.

    A value is secret when its option or variable name holds one of :data:`SECRET_WORDS`: ``--api-key VALUE``,
    ``--token=VALUE``, ``GITHUB_TOKEN=VALUE`` (as ``env`` takes it); each becomes :data:`MARK`. URLs lose their
    credentials (:func:`redact_url`), which count as removed values too.
    """
    shown: list[str] = []
    removed: list[str] = []
    secret_next = False
    for arg in argv:
        if secret_next and not arg.startswith("-"):
            shown.append(MARK)
            removed.append(arg)
            secret_next = False
            continue
        secret_next = False
        name, sep, value = arg.partition("=")
        if "://" in name:  # a URL (its query may hold '=')
            sep = value = ""
        if sep and value and _secret_name(name.lstrip("-")):
            shown.append(f"{name}={MARK}")
            removed.append(value)
        elif arg.startswith("-") and not sep and _secret_name(arg.lstrip("-")):
            shown.append(arg)
            secret_next = True
        else:
            redacted = redact_text(arg)
            if redacted != arg:
                removed.extend(_url_secrets(arg))
            shown.append(redacted)
    return shown, removed


def _url_secrets(text: str) -> list[str]:
    """The credentials :func:`redact_text` takes out of ``text``: userinfo and secret parameter values."""
    found: list[str] = []
    for start, end in _url_spans(text):
        try:
            parts = urlsplit(text[start:end])
        except ValueError:
            continue
        if "@" in parts.netloc:
            found.append(parts.netloc.rpartition("@")[0])
        for chunk in (parts.query, parts.fragment):
            for item in chunk.split("&"):
                name, sep, value = item.partition("=")
                if sep and value and _secret_name(name):
                    found.append(value)
    return found


def secret_environment(environ: Mapping[str, str]) -> list[str]:
    """The values of the environment variables whose names hold one of :data:`SECRET_WORDS` (``API_KEY``,
    ``GITHUB_TOKEN``, ``DB_PASSWORD``...): what a record must never contain."""
    return [value for name, value in environ.items() if value and _secret_name(name)]
