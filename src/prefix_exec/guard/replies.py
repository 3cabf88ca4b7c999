"""What the pump reads from, and makes of, single messages: the tools a listing shows the client, a tools/call
result bounded in size, the answer to a call whose result failed its postcondition, and the client's and
server's names noted for the record."""

from __future__ import annotations

from mcp.types import (
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    JSONRPCError,
    JSONRPCResponse,
)

from prefix_exec.guard.messages import PREFIX, identity
from prefix_exec.guard.options import GuardOptions
from prefix_exec.guard.shadow import observation_of
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.trajectory import Observation, Verdict


def offered(message: JSONRPCResponse | JSONRPCError, options: GuardOptions) -> JSONRPCResponse | JSONRPCError:
    """A tools/list answer without the tools ``--allow-tools``/``--deny-tools`` hide (the shadow saw them all,
    so a side file naming one still fits)."""
    if not isinstance(message, JSONRPCResponse) or not isinstance(message.result.get("tools"), list):
        return message
    tools = message.result["tools"]
    shown = [t for t in tools if not isinstance(t, dict) or options.offered(str(t.get("name")))]
    if len(shown) == len(tools):
        return message
    return JSONRPCResponse(jsonrpc="2.0", id=message.id, result={**message.result, "tools": shown})


def bounded(message: JSONRPCResponse, limit: int) -> tuple[Observation, JSONRPCResponse]:
    """The result's observation, or an error result in its place when its text is over ``limit`` characters."""
    blocks = message.result.get("content")
    size = sum(len(b.get("text") or "") for b in blocks if isinstance(b, dict)) if isinstance(blocks, list) else 0
    if size <= limit:
        return observation_of(message.result), message
    text = (
        f"{PREFIX}the server's result ({size:,} characters) is larger than the bound "
        f"({limit:,}); the call ran, its result was not passed on"
    )
    result: JsonObject = {"content": [{"type": "text", "text": text}], "isError": True}
    return Observation(text, error=True), JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)


def after_result(request_id: int | str, tool: str, verdict: Verdict) -> JSONRPCResponse:
    """What the client gets, in enforce mode, for a call whose result failed its postcondition: a tool error
    saying so (the call did run on the server; the record keeps its real result)."""
    label = verdict.label.value if verdict.label else "rejected"
    text = (
        f"{PREFIX}{tool} ran, but its result fails the postcondition: {label}: {verdict.reason}. "
        "What to do: check the result of this call before going on (it may need undoing or repeating)."
    )
    meta = {"prefix-exec/guard": {"refused": True, "after": True, "label": label, "reason": verdict.reason}}
    result: JsonObject = {"content": [{"type": "text", "text": text}], "isError": True, "_meta": meta}
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)


def note_client(info: JsonObject, method: str, params: JsonMapping) -> None:
    """The client's name, version and protocol version, from ``initialize`` or a 2026 request's ``_meta``."""
    if method == "initialize":
        info.setdefault("client", identity(params.get("clientInfo")))
        info.setdefault("protocol_version", params.get("protocolVersion"))
    meta = params.get("_meta")
    if isinstance(meta, dict) and CLIENT_INFO_META_KEY in meta and "client" not in info:
        info["client"] = identity(meta[CLIENT_INFO_META_KEY])
        info["protocol_version"] = meta.get(PROTOCOL_VERSION_META_KEY)


def note_unlisted(info: JsonObject, unlisted: tuple[str, ...]) -> str | None:
    """Note in ``info`` (``side_file_unlisted``) the tools the side file names that the server's listing lacks
    (``unlisted``), once each per connection; the warning to print when a name is new, else None."""
    said = info.get("side_file_unlisted")
    known = list(said) if isinstance(said, list) else []
    new = [name for name in unlisted if name not in known]
    if not new:
        return None
    info["side_file_unlisted"] = [*known, *new]
    return (
        f"the side file names tools the server does not list to this client: {', '.join(map(repr, new))}; their "
        "rules wait for a listing that has them, and a call to them meanwhile is refused as an unknown tool (schema)"
    )


def note_server(info: JsonObject, method: str, result: JsonMapping) -> None:
    """The server's name, version and protocol version, from its ``initialize`` or ``server/discover`` answer."""
    if method == "initialize":
        info["server"] = identity(result.get("serverInfo"))
        info["protocol_version"] = result.get("protocolVersion")
    elif method == "server/discover" and isinstance(result.get("_meta"), dict):
        info.setdefault("server", identity(result["_meta"].get(SERVER_INFO_META_KEY)))
