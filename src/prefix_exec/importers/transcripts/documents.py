"""The records of a transcript file: JSONL, a JSON list, or a JSON object that wraps lists.

- Any file but ``.json`` is JSONL: one record per line (a ``.json`` file holding several lines of JSON
  is read as JSONL too, since that is what it is);
- a ``.json`` file holding a list: each item is a record (``[3].`` in field names);
- a ``.json`` file holding one record (an object of a transcript shape): that record;
- a ``.json`` file holding an object that wraps lists, such as ``{"data": [...]}`` or
  ``{"splits": {"train": [...], "test": [...]}}``: each list (up to :data:`WRAP_DEPTH` objects deep) with a
  record of a transcript shape in it is read, item by item (``splits.train[3].``); other fields are ignored.
  Another tool's file that wraps its own conversations (a tau2 results file, an inspect log) is not unwrapped.

A ``.json`` document with no record in it is an :class:`InputError` saying what was found and what is read
(:func:`~prefix_exec.importers.transcripts.formats.unknown_shape`).

A header or trailer record that holds only metadata (:func:`metadata_only`: Invariant's export begins with
``{"metadata": {...}}``) is no conversation: the reader skips it and its file's note says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.importers.transcripts.formats import detect, foreign, unknown_shape
from prefix_exec.json_types import JsonMapping, depth_problem, loads
from prefix_exec.records.jsonl import MAX_LINE_CHARS, check_regular_file, iter_json_lines

#: Largest ``.json`` transcript file read whole, in characters: the bound of one JSONL line, since parsing it costs
#: the same (a file of many tiny lists takes ~20 bytes of memory per character); JSONL files are read line by line.
MAX_JSON_CHARS = MAX_LINE_CHARS
#: How many objects deep a wrapper's record lists are looked for.
WRAP_DEPTH = 3

#: ``(line, prefix, record)``: the line of a JSONL file (``None`` in a JSON file), the record's place in a
#: JSON document (``[3].``, ``data[3].``, ``""``) and the parsed record, or the InputError of a bad line.
Record = tuple[int | None, str, Any]


#: The keys a record that holds only metadata may have (every key one of these, none a conversation's).
METADATA_KEYS = frozenset({"metadata", "meta", "header", "trailer", "summary", "stats", "info", "config", "run"})


def metadata_only(data: Any) -> bool:
    """Whether ``data`` is a record of metadata only (a non-empty object whose every key is one of
    :data:`METADATA_KEYS`), which a file may carry as a header or trailer line."""
    return isinstance(data, Mapping) and bool(data) and all(key in METADATA_KEYS for key in data)


def records(path: Path, *, tolerant: bool) -> Iterator[Record]:
    """Every record of one file, in order (see the module docstring); with ``tolerant`` a line that is not
    JSON comes as its InputError."""
    if path.suffix != ".json":
        yield from _lines(path, tolerant=tolerant)
        return
    check_regular_file(path)
    try:
        with path.open(encoding="utf-8") as fh:
            text = fh.read(MAX_JSON_CHARS + 1)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text ({exc.reason})", path=path, hint="is this a binary file? JSON files are UTF-8 text"
        ) from None
    if len(text) > MAX_JSON_CHARS:
        raise InputError(
            f"larger than {MAX_JSON_CHARS:,} characters",
            path=path,
            hint="write it as JSONL, one conversation per line (jq -c '.[]' in.json > in.jsonl)",
        )
    try:
        data = loads(text, max_depth=None)  # each record's depth is checked on its own: one deep record is its error
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and exc.lineno > 1:  # JSON Lines in a .json file
            yield from _lines(path, tolerant=tolerant)
            return
        raise InputError(f"not valid JSON ({exc.msg} at column {exc.colno})", path=path, line=exc.lineno) from None
    except ValueError as exc:
        raise InputError(f"not usable JSON ({exc})", path=path) from None
    for line, place, record in _document(data, path):
        problem = depth_problem(record)
        yield line, place, record if problem is None else InputError(problem, path=path, field=place.rstrip("."))


def _lines(path: Path, *, tolerant: bool) -> Iterator[Record]:
    for number, data in iter_json_lines(path, tolerant=tolerant):
        yield number, "", data


def _document(data: Any, path: Path) -> Iterator[Record]:
    if isinstance(data, list):
        if data and not any(detect(item)[0] for item in data):
            message, hint = unknown_shape(data)
            raise InputError(message, path=path, hint=hint)
        for index, item in enumerate(data):
            yield None, f"[{index}].", item
        return
    if detect(data)[0] is not None:
        yield None, "", data
        return
    lists = list(_wrapped(data, "", WRAP_DEPTH)) if isinstance(data, Mapping) and not foreign(data) else []
    if not lists:
        message, hint = unknown_shape(data)
        raise InputError(message, path=path, hint=hint)
    for place, items in lists:
        for index, item in enumerate(items):
            yield None, f"{place}[{index}].", item


def _wrapped(data: JsonMapping, place: str, depth: int) -> Iterator[tuple[str, list[Any]]]:
    """``(place, list)`` for each list of records inside a wrapper object, in key order."""
    for key, value in data.items():
        where = f"{place}{key}"
        if isinstance(value, list) and any(detect(item)[0] for item in value):
            yield where, value
        elif isinstance(value, Mapping) and depth > 1 and detect(value)[0] is None:
            yield from _wrapped(value, f"{where}.", depth - 1)
