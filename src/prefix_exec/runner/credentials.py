"""Credentials in a grid: where an endpoint's URL comes from, and the run directory's copy that holds none.

A model's ``base_url`` may carry credentials (``http://user:pass@host/v1``, ``?api_key=...``). They reach the
endpoint, and nothing on disk: settings, rollouts and records hold the URL redacted
(:mod:`prefix_exec.records.redaction`), and so does the run directory's ``grid.toml`` (:func:`write_grid_copy`). That
copy cannot call the endpoint, so a grid whose ``base_url`` carries the redaction mark is refused with what to
do (:func:`endpoint_url`): resume with the grid file the run was started with, or keep the URL in an
environment variable named by ``base_url_env`` (as ``api_key_env`` names the key's), which the copy keeps
as a name only and which then works from the copy too.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import tomllib
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.records.outputs import write_new
from prefix_exec.records.redaction import MARK, redact_json, redact_text

#: The model key naming the environment variable that holds the endpoint URL.
URL_ENV = "base_url_env"


def is_redacted(url: str) -> bool:
    """True when ``url`` has had credentials removed by :func:`~prefix_exec.records.redaction.redact_url`."""
    return f"{MARK}@" in url or f"={MARK}" in url


def endpoint_url(raw: JsonMapping, where: str) -> JsonObject:
    """A grid's model table with ``base_url_env`` resolved into ``base_url`` (the variable must be set and
    hold a URL), and a ``base_url`` whose credentials were removed refused. Raises :class:`InputError` naming
    ``<where>.<key>``."""
    out = dict(raw)
    if URL_ENV in out:
        name = out.pop(URL_ENV)
        if not isinstance(name, str) or not name:
            raise InputError("must be the name of an environment variable", field=f"{where}.{URL_ENV}")
        if "base_url" in out:
            raise InputError(
                f"set base_url or {URL_ENV}, not both",
                field=f"{where}.{URL_ENV}",
                hint=f"{URL_ENV} names an environment variable that holds the whole URL",
            )
        value = os.environ.get(name)
        if not value:
            raise InputError(
                f"the environment variable {name} holding the base URL is not set",
                field=f"{where}.{URL_ENV}",
                hint=f"export {name}=http://user:password@host:8000/v1 (the URL with its credentials)",
            )
        out["base_url"] = value
    url = out.get("base_url")
    if isinstance(url, str) and is_redacted(url):
        raise InputError(
            f"the credentials of this URL were removed ({url}): a run directory's grid.toml keeps none",
            field=f"{where}.base_url",
            hint=f"resume with the grid file the run was started with, or put the URL in an environment "
            f'variable and name it with {URL_ENV} = "NAME" instead of base_url (docs/runner.md)',
        )
    return out


def write_grid_copy(source: Path, base_dir: Path, target: Path) -> None:
    """Write ``target``: the grid file ``source`` with ``base_dir`` pinned (so it resolves relative paths as
    the original does) and every URL in it redacted, comments included.

    The copy keeps the original's text and comments when redacting its text gives the same grid as
    redacting its values; otherwise (a URL spelled with TOML escapes) the redacted values are written as
    generated TOML. Either way the copy parses to the original grid with its URLs redacted. A symlink or hard
    link at ``target`` is replaced by the new file (:func:`prefix_exec.records.outputs.write_new`), so the file it
    named keeps its text."""
    text = source.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    if "base_dir" not in data:
        data["base_dir"] = str(base_dir)
        text = f"base_dir = {json.dumps(str(base_dir))}  # added by prefix-exec run: paths resolve here\n{text}"
    expected = redact_json(data)
    copy = redact_text(text)
    try:
        same = tomllib.loads(copy) == expected
    except tomllib.TOMLDecodeError:
        same = False
    if not same:
        copy = "# written by prefix-exec run: the grid with its URLs' credentials removed\n" + to_toml(expected)
    # Renamed into place: a link at ``target`` (to the user's own grid, say) is replaced, never written through.
    write_new(target, copy.encode("utf-8"))


def needs_redaction(path: Path) -> bool:
    """True when the file at ``path`` (an earlier version's grid copy) holds a URL with credentials."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return redact_text(text) != text


def to_toml(data: JsonMapping) -> str:
    """``data`` (as :func:`tomllib.loads` returns it) as TOML: one ``key = value`` line per top-level key,
    tables and arrays of tables inline, so that ``tomllib.loads(to_toml(d)) == d``."""
    return "".join(f"{_key(k)} = {_value(v)}\n" for k, v in data.items())


def _key(key: str) -> str:
    return _string(key)


def _string(text: str) -> str:
    # JSON's escapes are TOML's, except that TOML also wants DEL escaped; non-ASCII stays as it is, since
    # TOML has no surrogate-pair escapes.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a TOML value: {type(value).__name__}")
