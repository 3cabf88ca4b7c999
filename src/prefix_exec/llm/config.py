"""Settings of one OpenAI-compatible endpoint and model, as read from a grid file.

The API key is never stored in a grid: ``api_key_env`` names the environment variable holding it. Every
setting is type-checked, so a grid's ``max_concurrency = "8"`` is an :class:`InputError` naming the field, not a
traceback (and ``max_retries = 2.5`` does not slip through).
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection
from dataclasses import dataclass, fields, replace
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.llm.textcalls import TEXT_FORMATS
from prefix_exec.records.redaction import redact_url

TOOL_MODES = ("native", "text", "auto")
#: ``null_content``: ``keep`` sends an assistant message's ``content: null`` as the server gave it, ``empty``
#: sends ``""`` in assistant messages that carry tool calls (servers that reject null, llama-cpp-python's).
NULL_CONTENTS = ("keep", "empty")

#: The grid spelling of ``temperature = None`` (TOML has no null): the request carries no temperature.
OMIT = "omit"

#: Endpoint settings that shape a model's answers (the seed is set apart: a grid's, plus the trial).
DECODING_KEYS = (
    "model",
    "base_url",
    "temperature",
    "reasoning_effort",
    "max_tokens",
    "max_completion_tokens",
    "tool_mode",
    "text_format",
    "null_content",
)


@dataclass(frozen=True)
class EndpointConfig:
    """One model behind one endpoint.

    ``tool_mode``: ``native`` sends OpenAI ``tools``; ``text`` describes the tools in the system prompt and
    reads the calls from the answer's text (for servers without tool calling); ``auto`` sends ``tools``, reads
    calls from the text of an answer that has none in ``tool_calls``, and switches to text when the server
    rejects the ``tools`` field. ``text_format`` is the format of calls in text (:data:`TEXT_FORMATS`;
    ``auto`` asks for ``hermes`` and reads any). ``null_content = "empty"`` sends ``""`` instead of ``null`` as
    the content of assistant messages with tool calls. ``temperature`` ``None`` (``"omit"``
    in a grid) sends none, for reasoning models that refuse it; the default 0.0 keeps runs reproducible.
    ``reasoning_effort``, ``max_tokens`` and ``max_completion_tokens`` are sent only when set (at most one of
    the two token caps; reasoning models take ``max_completion_tokens``). ``max_concurrency`` caps requests in
    flight to ``base_url``: per process by default; the runner holds it for the whole run (all workers, all
    Ray nodes), with the smallest cap of the models sharing a URL. Times are seconds. A server's
    ``Retry-After`` is honoured up to ``retry_after_max_s``; a longer one fails the request at once.
    ``stream = true`` asks for the answer streamed and puts it back together (:mod:`prefix_exec.llm.stream`):
    the same answer and cache entry, and the progress line counts its tokens as they arrive; it shapes no
    answer, so it is not among the decoding settings (a run may switch it on ``--resume``).
    """

    model: str
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float | None = 0.0
    seed: int | None = None
    reasoning_effort: str | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    tool_mode: str = "native"
    text_format: str = "auto"
    null_content: str = "keep"
    timeout_s: float = 60.0
    max_retries: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 120.0
    max_concurrency: int = 8
    stream: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):
            _check(f.name, getattr(self, f.name), f.name)
        if self.max_tokens is not None and self.max_completion_tokens is not None:
            raise InputError(
                "set max_tokens or max_completion_tokens, not both",
                field="max_completion_tokens",
                hint="reasoning models take max_completion_tokens; older servers take max_tokens",
            )

    def api_key(self) -> str:
        """The key from ``api_key_env``; local servers that need none use ``api_key_env = ""`` in the grid."""
        if not self.api_key_env:
            return "not-needed"
        key = os.environ.get(self.api_key_env)
        if not key:
            raise InputError(
                f"the environment variable {self.api_key_env} holding the API key for {self.model!r} is not set",
                hint=f'export {self.api_key_env}=..., or set api_key_env = "" for a server that needs no key',
            )
        return key

    def with_seed(self, seed: int | None) -> EndpointConfig:
        return replace(self, seed=seed)

    def decoding(self) -> JsonObject:
        """The settings that shape the answers (:data:`DECODING_KEYS`) as JSON; unset ones (``None``: not sent)
        are left out. The URL is written without credentials (``user:pass@``, ``?api_key=``): these settings
        go into a run's settings.json and every rollout and record."""
        found = {k: getattr(self, k) for k in DECODING_KEYS if getattr(self, k) is not None}
        if isinstance(found.get("base_url"), str):
            found["base_url"] = redact_url(found["base_url"])
        return found

    @classmethod
    def from_mapping(
        cls,
        data: JsonMapping,
        *,
        where: str = "model",
        caller_keys: Collection[str] = (),
        refused_keys: Collection[str] = (),
    ) -> EndpointConfig:
        """Build from a grid table; an unknown key or a wrong type is an error naming ``<where>.<key>``.

        ``caller_keys`` are keys of the same table the caller reads itself (a grid's ``name``, prices): they are
        ignored here but listed as known in the hint. ``refused_keys`` are settings the caller owns (a grid sets
        ``seed`` per trial): setting one is an error and the hint leaves them out.
        """
        own = {f.name for f in fields(cls)} - set(refused_keys)
        known = ", ".join(sorted(own | set(caller_keys)))
        settings = {k: v for k, v in data.items() if k not in caller_keys}
        for key in sorted(settings):
            if key in refused_keys:
                raise InputError("cannot be set here", field=f"{where}.{key}", hint="known settings: " + known)
            if key not in own:
                raise InputError(f"unknown setting {key!r}", field=f"{where}.{key}", hint="known settings: " + known)
        if "model" not in settings:
            raise InputError(
                "missing", field=f"{where}.model", hint='the id the endpoint serves, e.g. model = "gpt-4o"'
            )
        if settings.get("temperature") == OMIT:
            settings["temperature"] = None
        elif settings.get("temperature", 0.0) is None:  # only "omit" spells it in a grid
            raise InputError('must be a number >= 0 or "omit"', field=f"{where}.temperature")
        for key, value in settings.items():
            _check(key, value, f"{where}.{key}")
        try:
            return cls(**settings)
        except InputError as exc:  # a rule across fields: name it under ``where`` too
            raise InputError(exc.message, field=f"{where}.{exc.field}", hint=exc.hint) from None


# ------------------------------------------------------------------------------------------- type checks


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _integer(minimum: int, example: str) -> tuple[Any, str, str]:
    return (lambda v: _is_int(v) and v >= minimum, f"must be an integer >= {minimum}", f"for example {example}")


def _seconds(positive: bool, example: str) -> tuple[Any, str, str]:
    if positive:
        return (lambda v: _is_number(v) and v > 0, "must be a number of seconds > 0", f"for example {example}")
    return (lambda v: _is_number(v) and v >= 0, "must be a number of seconds >= 0", f"for example {example}")


def _text(example: str) -> tuple[Any, str, str]:
    return (lambda v: isinstance(v, str) and v != "", "must be a non-empty string", f"for example {example}")


# name -> (accepts the value, what it must be, hint); ``None`` is accepted where the default is ``None``.
_RULES: dict[str, tuple[Any, str, str]] = {
    "model": _text('model = "gpt-4o"'),
    "base_url": (
        lambda v: isinstance(v, str) and v.startswith(("http://", "https://")),
        "must be an http:// or https:// URL",
        'for example base_url = "http://localhost:8000/v1"',
    ),
    "api_key_env": (
        lambda v: isinstance(v, str),
        "must be a string (an environment variable name)",
        'api_key_env = "" for a server that needs no key',
    ),
    "temperature": (
        lambda v: _is_number(v) and v >= 0,
        'must be a number >= 0 or "omit"',
        'for example temperature = 0.0; temperature = "omit" sends none (reasoning models)',
    ),
    "seed": (_is_int, "must be an integer", "for example seed = 1"),
    "reasoning_effort": _text('reasoning_effort = "low"'),
    "max_tokens": _integer(1, "max_tokens = 4096"),
    "max_completion_tokens": _integer(1, "max_completion_tokens = 16384"),
    "tool_mode": (
        lambda v: v in TOOL_MODES,
        "must be one of " + ", ".join(TOOL_MODES),
        'tool_mode = "auto" starts native and falls back to text',
    ),
    "text_format": (
        lambda v: v in TEXT_FORMATS,
        "must be one of " + ", ".join(TEXT_FORMATS),
        'text_format = "json" for answers like {"name": ..., "arguments": {...}}; "auto" reads every format',
    ),
    "null_content": (
        lambda v: v in NULL_CONTENTS,
        "must be one of " + ", ".join(NULL_CONTENTS),
        'null_content = "empty" sends content "" with tool calls, for servers that answer 500 to null',
    ),
    "timeout_s": _seconds(True, "timeout_s = 60"),
    "max_retries": _integer(0, "max_retries = 6"),
    "backoff_base_s": _seconds(False, "backoff_base_s = 1.0"),
    "backoff_max_s": _seconds(False, "backoff_max_s = 60"),
    "retry_after_max_s": _seconds(False, "retry_after_max_s = 120"),
    "max_concurrency": _integer(1, "max_concurrency = 8"),
    "stream": (
        lambda v: isinstance(v, bool),
        "must be true or false",
        "stream = true shows a local model's tokens as they arrive (the answers are the same)",
    ),
}
_OPTIONAL = {"api_key_env", "temperature", "seed", "reasoning_effort", "max_tokens", "max_completion_tokens"}


def _check(name: str, value: Any, field: str) -> None:
    if value is None and name in _OPTIONAL:
        return
    accepts, must, hint = _RULES[name]
    if not accepts(value):
        raise InputError(f"{must}, got {value!r}", field=field, hint=hint)
