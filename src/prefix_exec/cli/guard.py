"""``prefix-exec guard``: an MCP proxy that checks every tool call before it runs and records the connection.

See docs/guard.md. Two transports: stdio (``-- COMMAND [ARGS...]``, the client launches the guard in place of
the server) and Streamable HTTP (``--listen HOST:PORT --upstream URL``). The MCP SDK (the ``[guard]`` extra) is
imported only when the command runs.
"""

from __future__ import annotations

import argparse
import errno
import logging
import math
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefix_exec.errors import InputError
from prefix_exec.extras import require
from prefix_exec.guard.journal import RECORDED, Journal
from prefix_exec.guard.options import (
    DEFAULT_CALL_TIMEOUT_S,
    DEFAULT_MAX_MESSAGE_BYTES,
    EPISODE_VARIABLE,
    MODES,
    GuardOptions,
    checked_side_file,
    given_text,
)
from prefix_exec.json_types import JsonObject
from prefix_exec.records import outputs
from prefix_exec.records.redaction import redact_command, redact_url, secret_environment, secret_forms

if TYPE_CHECKING:
    from prefix_exec.guard.hosts import HostPolicy


def register(commands: Any, name: str) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help="an MCP proxy that checks every tool call before it runs, and records the session for scoring",
        description=(
            "Run in place of an MCP server (stdio: prefix-exec guard [OPTIONS] -- COMMAND [ARGS...]) or in front "
            "of one (Streamable HTTP: --listen HOST:PORT --upstream URL; a stdio client to an HTTP server: --upstream "
            "URL alone). Every tools/call is checked against "
            "the session's state (argument schemas from the server's tools/list; refs, produces, invalidates, "
            "hooks and state from --hooks) before it is forwarded. See docs/guard.md."
        ),
    )
    parser.add_argument(
        "--hooks",
        metavar="HOOKS.yaml",
        help="side file layered onto the server's tools, as for score custom --hooks (docs/custom.md)",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default=MODES[0],
        help="enforce: a rejected call is answered with a refusal and never reaches the server (default); "
        "observe: it is forwarded and the verdict recorded",
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="record the sessions: an append-only journal in DIR/journal/ (one line per call, before its answer), "
        "and DIR/rollouts.jsonl, DIR/records.jsonl and DIR/tools.json derived from it when a session ends",
    )
    parser.add_argument(
        "--require-tools",
        action="store_true",
        help="a session without any tool call fails (precondition), as score custom --require-tools; give it to "
        "score custom too when you replay the record",
    )
    parser.add_argument(
        "--episode",
        metavar="KEY",
        default=os.environ.get(EPISODE_VARIABLE) or None,
        help="continue one rollout and one live state across MCP sessions and guard processes with this key "
        "(for clients that start a session per call: inspect's mcp_tools, LangChain's get_tools); rebuilt from "
        f"the --record folder, which it needs (default: ${EPISODE_VARIABLE})",
    )
    _add_gateway_options(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the MCP server to run")
    parser.set_defaults(handler=handle)


def _add_gateway_options(parser: argparse.ArgumentParser) -> None:
    """The options of what the guard offers and records, its bounds, and its transports."""
    parser.add_argument(
        "--allow-tools",
        metavar="NAMES",
        help="offer only these tools (comma-separated names or shell patterns, git_*): the others are hidden from "
        "the listing and refused if called",
    )
    parser.add_argument(
        "--deny-tools",
        metavar="NAMES",
        help="hide these tools (comma-separated names or shell patterns) from the listing and refuse them if called",
    )
    parser.add_argument("--model", help="the model name in the records (default: the MCP client's name)")
    parser.add_argument("--task", help="the hooks file's task this session plays (when it declares tasks)")
    parser.add_argument(
        "--given",
        metavar="FILE",
        help="text the user gave (the task's prompt): ids in it satisfy refs, as ids a user typed do in score "
        "transcripts; accepted elicitation answers count too (docs/guard.md, 'What the guard hears')",
    )
    parser.add_argument("--dataset", help="the dataset name of the recorded rollouts (default: the server's name)")
    parser.add_argument(
        "--call-timeout",
        type=float,
        default=DEFAULT_CALL_TIMEOUT_S,
        metavar="SECONDS",
        help="longest wait for the server's answer to one request, counted from its last progress notification "
        "(a call that reports progress is not hung); past it the client gets an error and the session ends "
        "(default: 120)",
    )
    parser.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        metavar="N",
        help="largest client message, HTTP body or tool result passed on (default: 16 MiB)",
    )
    parser.add_argument(
        "--rebuild",
        metavar="DIR",
        help="derive DIR/rollouts.jsonl, records.jsonl and tools.json from DIR/journal/ and exit (after a guard "
        "was killed; a guard that ends does it itself)",
    )
    parser.add_argument("--listen", metavar="HOST:PORT", help="serve Streamable HTTP here (with --upstream)")
    parser.add_argument(
        "--upstream",
        metavar="URL",
        help="the MCP server's Streamable HTTP endpoint: with --listen, served on HTTP; alone, to a client on stdio "
        "(a stdio client bridged to an HTTP server)",
    )
    _add_http_options(parser)


def _add_http_options(parser: argparse.ArgumentParser) -> None:
    """``--allowed-host`` and ``--allowed-origin``: what ``--listen`` answers besides loopback (DNS rebinding)."""
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="with --listen: also answer requests whose Host header is NAME (any port, or NAME:PORT); by default "
        "only localhost, 127.0.0.1, [::1] and the --listen address are answered, others get 421 (DNS rebinding); "
        "repeatable",
    )
    parser.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="SCHEME://HOST[:PORT]",
        help="with --listen: answer browser requests carrying this Origin header (SCHEME://HOST:* for any port); by "
        "default a request with any Origin gets 403; repeatable",
    )


def handle(args: argparse.Namespace) -> int:
    if args.rebuild is not None:
        return _rebuild(Path(args.rebuild))
    command = list(args.command[1:] if args.command[:1] == ["--"] else args.command)
    http = args.listen is not None
    _check_usage(args, command, http)
    require("mcp", why="prefix-exec guard speaks MCP through the official SDK")
    _quiet_sdk_logs()
    options = GuardOptions(
        mode=args.mode,
        hooks=checked_side_file(args.hooks, args.task),
        task=args.task,
        record=Path(args.record) if args.record else None,
        call_timeout_s=args.call_timeout,
        max_message_bytes=args.max_message_bytes,
        require_tools=args.require_tools,
        episode=args.episode,
        model=args.model,
        allow_tools=_names(args.allow_tools),
        deny_tools=_names(args.deny_tools) or (),
        given=given_text(args.given),
    )
    shown, secrets = record_secrets(command, args.upstream, os.environ)
    journal = Journal(options.record, secrets=secrets) if options.record is not None else None
    try:
        if http:
            return _serve_http(args, options, journal)
        if args.upstream is not None:  # a stdio client bridged to a Streamable HTTP server
            return _serve_stdio([], [], args.dataset, options, journal, upstream=args.upstream)
        return _serve_stdio(command, shown, args.dataset, options, journal)
    finally:
        if journal is not None:
            journal.close()


def _names(text: str | None) -> tuple[str, ...] | None:
    """A comma-separated list of tool names or patterns (None when the option was not given)."""
    if text is None:
        return None
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise InputError("--allow-tools and --deny-tools take comma-separated tool names", hint="e.g. read_*,list_dir")
    return names


def _rebuild(path: Path) -> int:
    from prefix_exec.guard.folder import RecordFolder
    from prefix_exec.guard.rebuild import check_folder, rebuild

    if not (path / "journal").is_dir():
        raise InputError("no guard journal here (DIR/journal/)", path=path, hint="give the folder --record wrote")
    folder = RecordFolder(path)
    try:
        check_folder(folder)
        connections, calls, warning = rebuild(folder)
    finally:
        folder.close()
    print(f"prefix-exec guard: {path}: {connections} sessions, {calls} calls rebuilt from the journal", file=sys.stderr)
    if warning is not None:
        print(f"prefix-exec guard: warning: {warning}", file=sys.stderr)
    return 0


def record_secrets(command: list[str], upstream: str | None, environ: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The server's command line as the record shows it, and every text the record must not hold: the values
    of secret-named variables, options and headers, URL credentials (the upstream's too: the server may echo
    them), each in every JSON escaping (:func:`~prefix_exec.records.redaction.secret_forms`: a server may echo
    a secret inside JSON text, which the record then escapes once more)."""
    shown, removed = redact_command(command)
    if upstream is not None:
        removed += redact_command([upstream])[1]
    return shown, secret_forms([*secret_environment(environ), *removed])


class _OneLine(logging.Formatter):
    """A log record as one line on stderr: the MCP SDK logs a server's broken line with its traceback, which
    says nothing to a user (the guard's own message says what happened)."""

    def format(self, record: logging.LogRecord) -> str:
        return f"prefix-exec guard: {record.name}: {record.getMessage()}"


def _quiet_sdk_logs() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    for name in ("mcp", "httpx", "httpx2", "uvicorn"):
        sdk = logging.getLogger(name)
        sdk.handlers, sdk.propagate = [handler], False
        sdk.setLevel(logging.WARNING)


def _check_usage(args: argparse.Namespace, command: list[str], http: bool) -> None:
    if http and args.upstream is None:
        raise InputError("--listen needs --upstream", hint="prefix-exec guard --listen HOST:PORT --upstream URL")
    if not http and (args.allowed_host or args.allowed_origin):
        raise InputError("--allowed-host and --allowed-origin go with --listen (stdio has no Host header)")
    if command and args.upstream is not None:
        raise InputError("give either -- COMMAND (a stdio server) or --upstream URL (an HTTP server), not both")
    if not command and args.upstream is None:
        raise InputError(
            "no MCP server to guard", hint="prefix-exec guard [OPTIONS] -- COMMAND [ARGS...], or --listen/--upstream"
        )
    if not http and (
        sys.stdin is None or sys.stdout is None
    ):  # stdio front (a command, or --upstream alone)  # started with fd 0 or 1 closed (<&-)
        raise InputError(
            "the guard speaks to its client on stdin and stdout, and one of them is closed",
            hint="start it from the MCP client, which gives it both pipes (docs/guard.md)",
        )
    if not 0 < args.call_timeout < math.inf or args.max_message_bytes <= 0:  # nan too: no deadline would pass
        raise InputError("--call-timeout and --max-message-bytes must be positive (and the timeout finite)")
    if args.episode is not None and args.record is None:
        raise InputError(
            "--episode needs --record: an episode's earlier sessions are read back from the record folder",
            hint=f"add --record DIR (or unset {EPISODE_VARIABLE})",
        )
    if args.record is not None:  # its files are neither the hooks file nor special files (a FIFO would block)
        folder = Path(args.record)
        if folder.exists() and not folder.is_dir():
            raise InputError("--record must be a folder, and this is an existing file", path=folder)
        for name in RECORDED:
            outputs.check_file(folder / name, [args.hooks] if args.hooks else [], option="--record")


def _serve_stdio(
    command: list[str],
    shown: list[str],
    dataset: str | None,
    options: GuardOptions,
    journal: Journal | None,
    *,
    upstream: str | None = None,
) -> int:
    import functools

    import anyio

    from prefix_exec.guard.connection import new_connection
    from prefix_exec.guard.stdio import serve_stdio

    origin: JsonObject = {"command": shown} if upstream is None else {"upstream": redact_url(upstream)}
    connection = new_connection(options, journal, transport="stdio", origin=origin, dataset=dataset)
    try:
        reason = anyio.run(functools.partial(serve_stdio, command, connection, options, upstream=upstream))
    except (OSError, BaseExceptionGroup) as exc:  # the SDK starts the server inside task groups, which wrap it
        found = _os_error(exc)
        if found is None:
            raise
        raise InputError(
            f"cannot start the MCP server {shown[0] if shown else upstream!r}: {found.strerror or found}",
            hint="check the command after --",
        ) from None
    print(f"prefix-exec guard: session ended: {reason}", file=sys.stderr, flush=True)
    return 0


def _os_error(exc: BaseException) -> OSError | None:
    """``exc`` when it is an OSError, else the first one in an exception group (nested groups included)."""
    if isinstance(exc, OSError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _os_error(inner)
            if found is not None:
                return found
    return None


def _serve_http(args: argparse.Namespace, options: GuardOptions, journal: Journal | None) -> int:
    from prefix_exec.guard.http import serve_http

    host, _, port = str(args.listen).rpartition(":")
    if not host or not port.isdecimal():
        raise InputError(f"--listen {args.listen!r}: expected HOST:PORT", hint="for example --listen 127.0.0.1:8765")
    origin = {"upstream": redact_url(args.upstream)}
    policy = _host_policy(host, args.allowed_host, args.allowed_origin)
    try:
        serve_http(host, int(port), args.upstream, options, journal, origin=origin, dataset=args.dataset, hosts=policy)
    except OSError as exc:
        if exc.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES) and not isinstance(
            exc, socket.gaierror
        ):
            raise
        raise InputError(
            f"--listen {args.listen}: cannot listen there: {exc.strerror or exc}",
            hint="choose another port (port 0 picks a free one and prints it), or stop what is listening there"
            if exc.errno == errno.EADDRINUSE
            else "give a local address of this machine, such as 127.0.0.1, and a port above 1023",
        ) from None
    return 0


def _host_policy(host: str, hosts: list[str], origins: list[str]) -> HostPolicy:
    """The Host and Origin headers ``--listen`` answers; a malformed ``--allowed-*`` value is an input error."""
    from prefix_exec.guard.hosts import parse_allowed_host, parse_allowed_origin, policy_for

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
