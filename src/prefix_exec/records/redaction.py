"""Credentials in URLs, removed from anything written to disk or shown.

A URL's ``user:pass@`` becomes ``***@``, and the values of query or fragment parameters whose names look like
secrets (``api_key=``, ``access_token=``, ``sig=``...) become ``***``. :func:`redact_url` takes one URL,
:func:`redact_text` every URL inside a free text (a message, a log line, a model name), and
:func:`redact_json` every string of a parsed JSON value (keys included). Records written before redaction
existed, or by other tools, can hold such URLs in their metadata; ``report`` and ``metrics`` read them through
these functions, so the user's files stay as they are and no output repeats a secret.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

#: Parameter names holding a secret when any of these words is part of them (case-insensitive).
SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "sig", "auth", "credential", "bearer", "cookie")
#: Names holding a secret when one of their words (split at ``_``, ``-``, ``.`` and blanks) is one of these:
#: too short or too common to match inside other words (``PAT`` is in ``PATH``, ``session`` in ``SESSIONS_DIR``).
SECRET_SEGMENTS = frozenset({"pat", "session", "sessionid", "sid", "pass", "pwd", "jwt", "private", "cred", "creds"})
#: How deep :func:`secret_forms` escapes a secret: a value inside JSON text inside a JSON string inside a line.
ESCAPE_LEVELS = 3
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
        secret = sep and secret_name(name)
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


def secret_name(name: str) -> bool:
    """True when ``name`` (an option, a variable, a URL parameter, a header) names a secret: one of
    :data:`SECRET_WORDS` is part of it, or one of its words is in :data:`SECRET_SEGMENTS` (``GH_PAT``,
    ``SESSION_COOKIE``, ``X-Session``)."""
    lower = name.lower()
    if any(word in lower for word in SECRET_WORDS):
        return True
    return not SECRET_SEGMENTS.isdisjoint(_WORD_SPLIT.split(lower))


_WORD_SPLIT = re.compile(r"[_\-.\s]+")
# A header given as one argument (``Authorization: Bearer X``, ``X-Api-Key:X``): a token name, a colon, a value.
_HEADER = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:\s*(.+)", re.DOTALL)


def _header_secrets(arg: str) -> tuple[str, list[str]] | None:
    """``(shown, removed)`` for an argument that is a secret header (``Authorization: Bearer X`` shows as
    ``Authorization: ***`` and removes ``Bearer X`` and ``X``); None for any other argument (a URL's ``http:``
    is no header: its value starts with ``//``)."""
    found = _HEADER.fullmatch(arg)
    if found is None or found.group(2).startswith("//") or not secret_name(found.group(1)):
        return None
    value = found.group(2).strip()
    removed = [value, *value.split()[1:]]  # a scheme word (Bearer, Basic) and the credential after it
    return f"{found.group(1)}: {MARK}", removed


def redact_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """A command line without its secrets, and the secret values removed from it.

    A value is secret when its option or variable name names one (:func:`secret_name`): ``--api-key VALUE``
    (whatever VALUE starts with: ``--password -X`` hides ``-X``), ``--token=VALUE``, ``--bearer VALUE``,
    ``GITHUB_TOKEN=VALUE`` or ``GH_PAT=VALUE`` (as ``env`` takes it); each becomes :data:`MARK`. A header given as
    one argument (``--header "Authorization: Bearer X"``, ``-H "Cookie: a=b"``, ``--header=X-Api-Key:X``) keeps its
    name and loses its value. URLs lose their credentials (:func:`redact_url`), which count as removed values too.
    """
    shown: list[str] = []
    removed: list[str] = []
    secret_next = False
    for arg in argv:
        if secret_next:  # the value of a secret option, even one that looks like an option
            shown.append(MARK)
            removed.append(arg)
            secret_next = False
            continue
        secret_next = False
        name, sep, value = arg.partition("=")
        if "://" in name:  # a URL (its query may hold '=')
            sep = value = ""
        header = _header_secrets(value if sep and name.startswith("-") else arg)
        if header is not None:
            shown.append(f"{name}={header[0]}" if sep and name.startswith("-") else header[0])
            removed.extend(header[1])
        elif sep and value and secret_name(name.lstrip("-")):
            shown.append(f"{name}={MARK}")
            removed.append(value)
        elif arg.startswith("-") and not sep and secret_name(arg.lstrip("-")):
            shown.append(arg)
            secret_next = True
        elif _WHOLE_URL.fullmatch(arg):  # the argument is one URL: its userinfo may hold quotes
            shown.append(redact_url(arg))
            removed.extend(_userinfo_parts(_whole_url_secrets(arg)))
        else:
            redacted = redact_text(arg)
            if redacted != arg:
                removed.extend(_userinfo_parts(_url_secrets(arg)))
            shown.append(redacted)
    return shown, removed


_WHOLE_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")


def _whole_url_secrets(url: str) -> list[str]:
    """The credentials :func:`redact_url` takes out of ``url``, one URL whatever characters it holds."""
    try:
        parts = urlsplit(url)
    except ValueError:
        userinfo = _USERINFO.search(url)
        return [userinfo.group()[2:-1]] if userinfo else []
    return _split_secrets(parts)


def _split_secrets(parts: SplitResult) -> list[str]:
    """A split URL's credentials: its userinfo and the values of its secret query and fragment parameters."""
    found = [parts.netloc.rpartition("@")[0]] if "@" in parts.netloc else []
    for chunk in (parts.query, parts.fragment):
        for item in chunk.split("&"):
            name, sep, value = item.partition("=")
            if sep and value and secret_name(name):
                found.append(value)
    return found


def _userinfo_parts(values: list[str]) -> list[str]:
    """``values`` with, for each, its password (after the first ``:``) and the percent-decoded forms: a server
    echoes the password it was given, decoded."""
    found: list[str] = []
    for value in values:
        password = value.partition(":")[2]
        for text in (value, password):
            if text:
                found += [text, unquote(text)] if unquote(text) != text else [text]
    return found


def _url_secrets(text: str) -> list[str]:
    """The credentials :func:`redact_text` takes out of ``text``: userinfo and secret parameter values."""
    found: list[str] = []
    for start, end in _url_spans(text):
        try:
            found += _split_secrets(urlsplit(text[start:end]))
        except ValueError:
            continue
    return found


def secret_environment(environ: Mapping[str, str]) -> list[str]:
    """The values of the environment variables whose names name a secret (:func:`secret_name`: ``API_KEY``,
    ``GITHUB_TOKEN``, ``DB_PASSWORD``, ``GH_PAT``, ``SESSION_COOKIE``...): what a record must never contain."""
    return [value for name, value in environ.items() if value and secret_name(name)]


def secret_forms(secrets: Iterable[str]) -> list[str]:
    """Every spelling of each secret a written file could hold, longest first: the secret itself and the secret
    JSON-escaped up to :data:`ESCAPE_LEVELS` times (a server that echoes it inside JSON text, stored in a JSON
    string, in a line), each level escaped as writers do it (non-ASCII kept or as ``\\uXXXX``, in lower or
    upper case hex; ``/`` kept or as ``\\/``). Replacing every form, longest first, leaves no escaping of the
    secret behind. Empty secrets are dropped."""
    found: set[str] = set()
    for secret in secrets:
        if not secret:
            continue
        level = {secret}
        found.add(secret)
        for _ in range(ESCAPE_LEVELS):
            level = {form for text in level for form in _escapings(text)} - found
            found |= level
    return sorted(found, key=len, reverse=True)


_HEX = re.compile(r"\\u[0-9a-f]{4}")


def _escapings(text: str) -> set[str]:
    """``text`` as the inside of a JSON string, in each writer's spelling (the quotes left off)."""
    kept = json.dumps(text, ensure_ascii=False)[1:-1]
    ascii_ = json.dumps(text)[1:-1]
    upper = _HEX.sub(lambda m: m.group().upper().replace("\\U", "\\u"), ascii_)
    return {kept, ascii_, upper} | {form.replace("/", "\\/") for form in (kept, ascii_, upper) if "/" in form}
