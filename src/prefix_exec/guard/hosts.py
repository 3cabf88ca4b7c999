"""Which ``Host`` and ``Origin`` headers ``guard --listen`` answers: the MCP specification's defence against DNS
rebinding (its transport section: servers "MUST validate the Origin header", and a local server should bind to
loopback only).

A web page on ``http://evil.example`` can make the browser resolve ``evil.example`` to 127.0.0.1 and post to
the guard; the request then carries ``Host: evil.example`` (and ``Origin: http://evil.example``). So:

- **Host** must name the listener: ``localhost``, ``127.0.0.1`` or ``[::1]`` (any port: a tunnel may change
  it) for every listener, the literal address it listens on when that is not a wildcard (``0.0.0.0``, ``::``),
  and each ``--allowed-host`` (``NAME`` for any port, ``NAME:PORT`` for that port, ``NAME:*`` the same as
  ``NAME``). Anything else, a missing or empty Host included, gets **421 Misdirected Request**, as the MCP
  SDK's own server answers.
- **Origin**, when present (browsers send it; the SDK's clients do not), must be one given with
  ``--allowed-origin`` (``SCHEME://HOST[:PORT]``, or ``SCHEME://HOST:*`` for any port; compared without
  case). Anything else, ``Origin: null`` included, gets **403 Forbidden**. No origin is allowed by default,
  loopback ones neither: another local web app must not drive the guard either.

A refused request is answered here, before the body is read or any connection is looked up, so it never reaches
the upstream. Hosts and origins are compared after lower-casing; a name with a trailing dot is another name.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from prefix_exec.errors import InputError

#: Host names every listener answers to.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
#: Listen addresses that stand for every interface: no Host names them.
WILDCARDS = ("0.0.0.0", "[::]", "::", "")


@dataclass(frozen=True)
class HostPolicy:
    """``hosts``: (name, port) pairs a Host header may hold (port None: any port). ``origins``: (scheme, host,
    port) triples an Origin header may hold (port None: any port); a request without Origin passes."""

    hosts: frozenset[tuple[str, int | None]]
    origins: frozenset[tuple[str, str, int | None]]

    def refusal(self, host: str | None, origin: str | None) -> tuple[int, str] | None:
        """None when a request with these headers may pass; else its (HTTP status, reason)."""
        name_port = _host_port(host or "")
        if name_port is None or not self._host_allowed(*name_port):
            return 421, f"the Host header {host!r} does not name this guard (--allowed-host to accept it)"
        if origin is not None and not self._origin_allowed(origin):
            return 403, f"the Origin {origin!r} is not allowed (--allowed-origin to accept it)"
        return None

    def _host_allowed(self, name: str, port: int | None) -> bool:
        return (name, None) in self.hosts or (port is not None and (name, port) in self.hosts)

    def _origin_allowed(self, origin: str) -> bool:
        parsed = _origin(origin)
        if parsed is None:
            return False
        scheme, name, port = parsed
        return (scheme, name, None) in self.origins or (scheme, name, port) in self.origins


def _host_port(text: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a ``Host`` value (``name``, ``name:port``, ``[v6]``, ``[v6]:port``), lower-cased;
    None when it is not of that form (empty, a bad port, an unclosed bracket, blanks)."""
    text = text.strip().lower()
    if not text or any(c.isspace() or c in "/@?#\\" for c in text):
        return None
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            return None
        name, rest = text[: close + 1], text[close + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, sep, port_text_ = text.partition(":")
        port_text = port_text_ if sep else None
        if ":" in port_text_:
            return None
    if port_text is None:
        return name, None
    if not (port_text.isascii() and port_text.isdecimal() and len(port_text) <= 5 and int(port_text) <= 65535):
        return None
    return name, int(port_text)


def _origin(text: str) -> tuple[str, str, int | None] | None:
    """``(scheme, host, port)`` of an ``Origin`` value; the default port of http (80) and https (443) is
    written out, so ``http://a`` and ``http://a:80`` are one origin. None for ``null`` and anything that is
    not ``scheme://host[:port]``."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname or parts.path not in ("", "/") or parts.query or parts.username:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), host.lower(), port if port is not None else default


def parse_allowed_host(text: str) -> tuple[str, int | None] | None:
    """An ``--allowed-host`` value as a (name, port) pair (``NAME:*``: any port); None when malformed."""
    stripped = text.removesuffix(":*")
    found = _host_port(stripped)
    if found is None or (stripped != text and found[1] is not None):
        return None
    return found


def parse_allowed_origin(text: str) -> tuple[str, str, int | None] | None:
    """An ``--allowed-origin`` value as a (scheme, host, port) triple (``SCHEME://HOST:*``: any port); None when
    malformed."""
    if text.endswith(":*"):
        found = _origin(text[:-2])
        return None if found is None or text[:-2].rstrip("/").rsplit(":", 1)[-1].isdecimal() else (*found[:2], None)
    return _origin(text)


def policy_for(
    listen_host: str, hosts: list[tuple[str, int | None]], origins: list[tuple[str, str, int | None]]
) -> HostPolicy:
    """The policy of a listener on ``listen_host`` (as given to ``--listen``), widened by the parsed
    ``--allowed-host`` and ``--allowed-origin`` values."""
    allowed = {(name, None) for name in LOOPBACK_NAMES}
    own = listen_host.strip().lower()
    if own not in WILDCARDS:
        allowed.add((f"[{own.strip('[]')}]" if ":" in own else own, None))
    return HostPolicy(frozenset(allowed | set(hosts)), frozenset(origins))


class HostCheck:
    """ASGI middleware: a request whose Host or Origin the policy refuses is answered (421 or 403, a JSON-RPC
    error body) and goes no further; lifespan and allowed requests pass to ``app`` unchanged."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app, self.policy = app, policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", [])]
            hosts = [v for k, v in headers if k == "host"]
            origins = [v for k, v in headers if k == "origin"]
            # Two Host (or Origin) headers are ambiguous: which one a proxy used is unknowable, so refuse.
            host = hosts[0] if len(hosts) == 1 else None
            origin = origins[0] if len(origins) == 1 else (None if not origins else "")
            refused = self.policy.refusal(host, origin)
            if refused is not None:
                await _refuse(*refused)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def allowed_policy(host: str, hosts: list[str], origins: list[str]) -> HostPolicy:
    """The Host and Origin headers ``--listen HOST:PORT`` answers, with ``--allowed-host`` ``hosts`` and
    ``--allowed-origin`` ``origins``; a malformed value is an :class:`InputError` naming the option."""
    parsed_hosts = []
    for text in hosts:
        found = parse_allowed_host(text)
        if found is None:
            raise InputError(
                f"--allowed-host {text!r}: expected NAME, NAME:PORT or NAME:*", hint="--allowed-host mcp.local:8765"
            )
        parsed_hosts.append(found)
    parsed_origins = []
    for text in origins:
        parsed = parse_allowed_origin(text)
        if parsed is None:
            raise InputError(
                f"--allowed-origin {text!r}: expected SCHEME://HOST[:PORT] (no path)",
                hint="--allowed-origin http://localhost:6274",
            )
        parsed_origins.append(parsed)
    return policy_for(host, parsed_hosts, parsed_origins)


def _refuse(status: int, text: str) -> Response:
    from mcp.types import ErrorData, JSONRPCError

    body = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=-32600, message=f"prefix-exec guard: {text}"))
    return Response(body.model_dump_json(by_alias=True, exclude_unset=True), status, media_type="application/json")
