"""Settings of one OpenAI-compatible endpoint and model, as read from a grid file.

The API key is never stored in a grid: ``api_key_env`` names the environment variable holding it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from prefix_exec.errors import InputError

TOOL_MODES = ("native", "text", "auto")


@dataclass(frozen=True)
class EndpointConfig:
    """One model behind one endpoint.

    ``tool_mode``: ``native`` sends OpenAI ``tools``; ``text`` describes the tools in the system prompt and
    parses ``<tool_call>`` blocks from the answer (for servers without tool calling); ``auto`` starts native
    and falls back to text when the server rejects the ``tools`` field. ``reasoning_effort`` is sent only
    when set (``low``/``medium``/``high`` on models that support it). ``max_concurrency`` caps requests in
    flight to ``base_url``: per process by default; the runner holds it for the whole run (all workers,
    all Ray nodes), with the smallest cap of the models sharing a URL. Times are seconds.
    """

    model: str
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str | None = "OPENAI_API_KEY"
    temperature: float = 0.0
    seed: int | None = None
    reasoning_effort: str | None = None
    max_tokens: int | None = None
    tool_mode: str = "native"
    timeout_s: float = 60.0
    max_retries: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    max_concurrency: int = 8

    def __post_init__(self) -> None:
        if self.tool_mode not in TOOL_MODES:
            raise InputError(f"tool_mode must be one of {', '.join(TOOL_MODES)}, got {self.tool_mode!r}")
        if self.max_concurrency < 1 or self.max_retries < 0 or self.timeout_s <= 0:
            raise InputError("max_concurrency must be >= 1, max_retries >= 0 and timeout_s > 0")

    def api_key(self) -> str:
        """The key from ``api_key_env``; local servers that need none use ``api_key_env = ""`` in the grid."""
        if not self.api_key_env:
            return "not-needed"
        key = os.environ.get(self.api_key_env)
        if not key:
            raise InputError(
                f"the environment variable {self.api_key_env} holding the API key for {self.model!r} is not set",
                hint=f"export {self.api_key_env}=..., or set api_key_env = \"\" for a server that needs no key",
            )
        return key

    def with_seed(self, seed: int | None) -> EndpointConfig:
        return replace(self, seed=seed)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, where: str = "model") -> EndpointConfig:
        """Build from a grid table; unknown keys are an error naming the key."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"unknown setting {unknown[0]!r}", field=f"{where}.{unknown[0]}",
                             hint="known settings: " + ", ".join(sorted(known)))
        if "model" not in data:
            raise InputError("missing", field=f"{where}.model")
        return cls(**dict(data))
