"""The copy of a request the response cache keeps beside its answer, so that ``prefix-exec show`` can put each
answer next to what was asked: bounded and redacted.

- **Bounded**: each message's text is cut to :data:`MESSAGE_CHARS` (saying how much was cut), and the tools
  sent natively are kept as their names and the SHA-256 of their JSON (a BFCL tool list is about 15,000
  characters, the same in every request of a unit); in text mode the tools are in the system prompt, cut
  like any message. Whatever the conversation's length, a copy holds at most :data:`MOST_MESSAGES` messages
  (the first, then the last ones: the first is the system prompt, the last what this request adds).
- **Redacted**: credentials in URLs anywhere in it (the endpoint, a message quoting one) are removed
  (:func:`prefix_exec.records.redaction.redact_json`). API keys are never part of a request.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.records.redaction import redact_json

#: Characters of one message's text kept.
MESSAGE_CHARS = 8_000
#: Messages of one request kept (the first and the last ``MOST_MESSAGES - 1``).
MOST_MESSAGES = 40


def kept_request(request: JsonMapping) -> JsonObject:
    """``request`` (the cache key's fields: endpoint, mode, scope, model, settings, messages, tools) as kept."""
    kept: JsonObject = copy.deepcopy({k: v for k, v in request.items() if k not in ("messages", "tools")})
    messages = list(request.get("messages") or [])
    if len(messages) > MOST_MESSAGES:
        dropped = len(messages) - MOST_MESSAGES
        kept["messages_dropped"] = {"after": 1, "count": dropped}
        messages = [messages[0], *messages[-(MOST_MESSAGES - 1) :]]
    kept["messages"] = [_kept_message(m) for m in messages]
    tools = request.get("tools")
    if tools:
        text = json.dumps(tools, sort_keys=True, ensure_ascii=False, default=repr)
        kept["tools"] = [_tool_name(t) for t in tools]
        kept["tools_sha256"] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    redacted: JsonObject = redact_json(kept)
    return redacted


def _kept_message(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    out = copy.deepcopy(message)
    content = out.get("content")
    if isinstance(content, str) and len(content) > MESSAGE_CHARS:
        out["content"] = f"{content[:MESSAGE_CHARS]}... [{len(content) - MESSAGE_CHARS:,} more characters]"
    return out


def _tool_name(tool: Any) -> str:
    function = tool.get("function") if isinstance(tool, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else "?"
