"""TOML text of the grids the runner tests write: ``[[datasets]]`` and ``[[models]]`` tables from Python values.

Values are written as JSON, which for the kinds a grid holds (strings, integers, floats, booleans and lists of
them) is also TOML: a string is a TOML basic string with the same escapes, ``true``/``false`` are TOML booleans.
"""

from __future__ import annotations

import json

#: The kinds of value a grid field takes here; JSON text of each is TOML text of the same value.
Value = str | int | float | bool | list[str] | list[int]


def table(header: str, **fields: Value) -> str:
    """One entry of the array of tables ``[[header]]``, a line per field, ending in a newline."""
    return "".join([f"[[{header}]]\n", *(f"{key} = {json.dumps(value)}\n" for key, value in fields.items())])


def served_model(name: str, base_url: str, *, model: str | None = None, **fields: Value) -> str:
    """A ``[[models]]`` entry served at ``base_url`` with no API key (the tests' loopback servers need none);
    ``model`` (the name sent to the server) defaults to ``name``."""
    return table("models", name=name, model=model or name, base_url=base_url, api_key_env="", **fields)
