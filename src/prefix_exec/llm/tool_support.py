"""What ``tool_mode = "auto"`` learns about a model's tool support, shared by every backend of the process.

A server that rejects the ``tools`` field outright (:func:`rejects_tools` reads its error message) switches the
model at that URL to text mode for the rest of the process: :func:`tool_support` holds that per (URL, model).
Each worker process learns it from its own first rejected request, which is asked again at once in text, so every
request that reaches the model is in text mode in every process.
"""

from __future__ import annotations

import re
import threading

_TOOL_SUPPORT: dict[tuple[str, str], ToolSupport] = {}
_LOCK = threading.Lock()

# An error that says the server cannot take ``tools`` at all (Ollama, llama.cpp without --jinja, vLLM without
# --enable-auto-tool-choice, Azure's "unrecognized argument"), as opposed to a 400 about one tool message
# or one schema, which text mode would not fix. Most servers say it with a 400; llama-server with a 500.
_REJECTS_TOOLS = re.compile(
    r"(does not|doesn't|do not|don't|cannot|can't) (support|accept) (function calling|tool calling|tool use|tools)\b"
    r"|\b(tools|tool calling|function calling|tool use) (is |are )?(not supported|unsupported|not enabled|disabled)"
    r"|(unrecognized|unknown|unexpected|extra) [^.]{0,60}\btools\b"
    r"|enable-auto-tool-choice|tools param requires --jinja",
    re.IGNORECASE,
)


class ToolSupport:
    """What ``tool_mode = "auto"`` learned about one model on one endpoint, shared process-wide.

    ``rejection`` is the server's message that rejected the ``tools`` field, or ``None`` while native calls work.
    """

    def __init__(self) -> None:
        self.rejection: str | None = None


def tool_support(base_url: str, model: str) -> ToolSupport:
    """The process-wide :class:`ToolSupport` of ``model`` at ``base_url``."""
    with _LOCK:
        return _TOOL_SUPPORT.setdefault((base_url, model), ToolSupport())


def rejects_tools(message: str) -> bool:
    """Whether an error message says the server does not take the ``tools`` field at all."""
    return _REJECTS_TOOLS.search(message) is not None


class ToolsRejected(Exception):
    """The server rejected the ``tools`` field of an ``auto`` request; ``message`` is its words."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def error_message(exc: Exception) -> str:
    """The server's error message: the ``message`` of the error object it sent as JSON, else the exception's text."""
    body = getattr(exc, "body", None)
    return body["message"] if isinstance(body, dict) and isinstance(body.get("message"), str) else str(exc)
