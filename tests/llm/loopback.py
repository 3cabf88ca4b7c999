"""What the backend tests share: one login tool, a two-message chat, and an endpoint on the loopback server.

The endpoint retries fast (10 ms backoff, 50 ms cap) and gives up after 5 s, so fault tests take
milliseconds; a test overrides any field by keyword (``endpoint(server, max_retries=0)``).
"""

from __future__ import annotations

from typing import Any

from fakes.openai_server import ScriptedServer, tool_message
from prefix_exec.llm import EndpointConfig, ToolSchema

TOOLS = (ToolSchema("login", "log in", {"type": "object", "properties": {"username": {"type": "string"}}}),)
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "log in as sam"}]


def endpoint(server: ScriptedServer, **overrides: Any) -> EndpointConfig:
    """Model ``m`` at ``server`` with no key and test-speed timing; ``overrides`` replace any field."""
    fields: dict[str, Any] = {
        "model": "m",
        "base_url": server.base_url,
        "api_key_env": "",
        "timeout_s": 5.0,
        "max_retries": 4,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
    }
    return EndpointConfig(**{**fields, **overrides})


def login(_: dict[str, Any]) -> dict[str, Any]:
    """The scripted answer to any request: one ``login`` call for user sam."""
    return tool_message([("login", {"username": "sam"})])
