"""Which failed requests are retried, and after how long: the policy :class:`~prefix_exec.llm.backend.ChatBackend`
follows (its docstring lists it), as :func:`retry_event`, with the server's own ``retry-after-ms``/``Retry-After``
(:func:`server_delay`) and what to check when retrying cannot help (:func:`fatal_message`).
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping
from typing import Any

from prefix_exec.llm.config import EndpointConfig
from prefix_exec.llm.tool_support import error_message, rejects_tools
from prefix_exec.llm.types import RetryEvent


class BadAnswer(Exception):
    """A 2xx whose body is no chat completion; ``retryable`` unless it is not JSON at all (not the API)."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


def retry_event(
    exc: Exception, attempt: int, elapsed: float, config: EndpointConfig, rng: random.Random, openai: Any
) -> RetryEvent | str:
    """The retry event of a transient error (``attempt`` failed after ``elapsed`` seconds), with its backoff drawn
    from ``rng``, or why retrying cannot help. ``openai`` is the client's module (its error classes)."""
    status: int | None = getattr(exc, "status_code", None)
    if isinstance(exc, BadAnswer):
        if not exc.retryable:
            return str(exc)
        kind = "bad_response"
    elif isinstance(exc, openai.APITimeoutError) or status == 408:
        kind = "timeout"
    elif isinstance(exc, openai.APIConnectionError):
        kind = "connection"
    elif status == 409:
        kind = "conflict"
    elif status == 429:
        if "insufficient_quota" in (getattr(exc, "code", None), getattr(exc, "type", None)):
            return f"no quota left (429 insufficient_quota), retrying cannot help: {exc}"
        kind = "rate_limit"
    elif status is not None and status >= 500:
        if rejects_tools(error_message(exc)):  # llama-server without --jinja answers 500, not 400
            return f'the server takes no tools ({status}); tool_mode = "auto" or "text" would fit it: {exc}'
        kind = "server"
    else:
        return fatal_message(exc, status, config)
    cap = min(config.backoff_max_s, config.backoff_base_s * 2 ** (attempt - 1))
    delay = rng.uniform(0.0, cap)
    response = getattr(exc, "response", None)
    wanted = server_delay(response.headers) if response is not None else None
    if wanted is not None:
        if wanted > config.retry_after_max_s:
            return (
                f"the server asks to wait {wanted:g} s before retrying, more than retry_after_max_s = "
                f"{config.retry_after_max_s:g}: {exc}"
            )
        delay = max(delay, wanted)
    return RetryEvent(
        attempt=attempt, kind=kind, status=status, delay_s=delay, message=str(exc)[:200], elapsed_s=elapsed
    )


def server_delay(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, else ``Retry-After`` (seconds or an HTTP date)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            parsed = email.utils.parsedate_tz(value) if name == "retry-after" else None
            if parsed is None:
                continue
            seconds = email.utils.mktime_tz(parsed) - time.time()
        if math.isnan(seconds):
            continue
        return max(0.0, seconds)
    return None


def fatal_message(exc: Exception, status: int | None, config: EndpointConfig) -> str:
    """The error text of a non-retryable status, with what to check."""
    if status == 401:
        source = f"the key in ${config.api_key_env}" if config.api_key_env else "no key (api_key_env is empty)"
        return f"the server refused {source} (401): {exc}"
    if status == 403:
        return f"the key may not use {config.model!r} (403): {exc}"
    if status == 404:
        return f"not found (404): check that base_url ends at the API root (often /v1) and the model id: {exc}"
    return str(exc)
