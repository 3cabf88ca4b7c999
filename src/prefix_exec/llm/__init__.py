"""LLM backends: OpenAI-compatible endpoints through the official client, with retries, a cap and a cache."""

from prefix_exec.llm.backend import ChatBackend
from prefix_exec.llm.cache import ResponseCache
from prefix_exec.llm.config import EndpointConfig
from prefix_exec.llm.types import BackendError, Completion, Message, RetryEvent, ToolSchema

__all__ = [
    "BackendError",
    "ChatBackend",
    "Completion",
    "EndpointConfig",
    "Message",
    "ResponseCache",
    "RetryEvent",
    "ToolSchema",
]
