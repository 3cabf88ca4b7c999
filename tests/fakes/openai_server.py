"""A real HTTP server on loopback that speaks the OpenAI chat-completions protocol with scripted answers.

``respond(request) -> message`` decides each answer from the request body (so the answer does not depend
on arrival order under concurrency); faults queued in :attr:`ScriptedServer.faults` are served first, one
per request, then the fault ``fault_of(request)`` names, if any (a fault chosen by the request, as the answer
is: a scripted run fails the one model call it means to, whatever came before):

- ``"429"`` (with ``retry-after: 0``), ``"500"``, or any other status as ``"<code>"`` or ``"<code>:<message>"``
  (``"408"``, ``"409"``, ``"401"``, ``"404"``, ``"400:messages[1] has role 'tool' without tool_calls"``...);
- ``"retry-after:<value>"`` and ``"retry-after-ms:<value>"``: a 429 carrying that header;
- ``"quota"``: a 429 whose error code is ``insufficient_quota``;
- ``"hang"`` (sleep ``hang_s`` then answer, past the client's timeout), ``"drop"`` (close the connection
  without an answer, as a server that dies mid-request does), ``"no-tools"`` (400 for a request carrying
  ``tools``, as servers without tool calling answer);
- bad 200 answers: ``"empty-choices"`` (``choices: []``), ``"truncated"`` (the JSON cut in half, still sent
  as JSON), ``"html"`` (a web page, as when ``base_url`` points at a web UI), ``"object-arguments"`` (the
  responder's tool-call arguments sent as JSON objects instead of strings).

The same server answers OpenAI's Responses API at ``/v1/responses`` (as BFCL's OpenAI handlers call it): the
request's ``input`` (a string, or messages and ``function_call`` / ``function_call_output`` items) is read as chat
messages (:func:`messages_of_input`, put in the body as ``messages``) for ``respond``, and the answer goes back as
``output`` items (a ``message`` with ``output_text``, one ``function_call`` per call) with ``usage`` in
input/output tokens, in one body (no streaming); the faults are the same.

A request with ``"stream": true`` is answered as OpenAI streams (``text/event-stream``: a chunk with the role,
the answer's text in pieces of :data:`PIECE` characters, each call's id and name then its arguments in pieces,
a chunk with ``finish_reason``, the ``usage`` chunk when ``stream_options.include_usage`` asks, ``[DONE]``),
``chunk_delay_s`` apart, unless ``streams=False`` (a server that ignores ``stream`` and sends one body).
A responder that raises is answered with a 500 naming the exception (kept in :attr:`errors`), and the
server goes on. The server counts its own time per request in :attr:`busy_s`, so a benchmark can subtract
it from wall time.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], dict[str, Any]]
#: A fault chosen from a request's body (``None``: none), served when no queued fault is left.
FaultOf = Callable[[dict[str, Any]], str | None]

# A header :meth:`ScriptedServer.answer` sets to have the handler send a broken body; never sent itself.
_BODY = "x-scripted-body"


def text_message(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def tool_message(calls: Sequence[tuple[str, Mapping[str, Any] | str]], content: str | None = None) -> dict[str, Any]:
    """An assistant message with tool calls; a ``str`` arguments value is sent verbatim (malformed JSON)."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": f"call_{i}_{name}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ],
    }


def usage_of(request: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, Any]:
    """Deterministic token counts: characters / 4 of the request and the answer; reasoning is 1/4 of output."""
    prompt = len(json.dumps(request.get("messages", []))) // 4
    completion = max(1, len(json.dumps(message)) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "completion_tokens_details": {"reasoning_tokens": completion // 4},
    }


class ScriptedServer:
    """Serve ``respond`` at ``http://127.0.0.1:PORT/v1``; use as a context manager."""

    def __init__(
        self,
        respond: Responder,
        *,
        latency_s: float = 0.0,
        hang_s: float = 5.0,
        streams: bool = True,
        chunk_delay_s: float = 0.0,
        chunk_wait: Callable[[int], None] | None = None,
        fault_of: FaultOf | None = None,
    ) -> None:
        self.respond = respond
        self.fault_of = fault_of
        self.latency_s = latency_s
        self.hang_s = hang_s
        self.streams = streams
        self.chunk_delay_s = chunk_delay_s
        #: Called before each streamed chunk with its number (from 0): a test holds a stream at a chunk with it.
        self.chunk_wait = chunk_wait
        self.streamed = 0
        self.faults: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self.busy_s = 0.0
        self.in_flight = 0
        self.errors: list[str] = []
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        # shutdown() waits for the serving loop to look at its flag, once per poll interval (0.5 s by default):
        # hundreds of tests start a server, and each would idle that long at its end.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next_fault(self, body: dict[str, Any]) -> str | None:
        with self._lock:
            if self.faults:
                return self.faults.popleft()
        return self.fault_of(body) if self.fault_of is not None else None

    def answer(self, body: dict[str, Any], api: str = "chat") -> tuple[int, dict[str, Any], dict[str, str]]:
        """Status, JSON body and extra headers for one request (faults first); status 0 for ``"drop"``: no
        answer at all. ``api`` is ``"chat"`` (chat completions) or ``"responses"`` (the Responses API: ``input``
        read as messages, the answer as ``output`` items)."""
        fault = self._next_fault(body) or ""
        if fault == "drop":
            return 0, {}, {}
        name, _, arg = fault.partition(":")
        if fault == "429":
            return 429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"retry-after": "0"}
        if name in ("retry-after", "retry-after-ms"):
            return 429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {name: arg}
        if fault == "quota":
            return (
                429,
                {
                    "error": {
                        "message": "You exceeded your current quota, please check your plan.",
                        "type": "insufficient_quota",
                        "code": "insufficient_quota",
                    }
                },
                {},
            )
        if fault == "500":
            return 500, {"error": {"message": "internal error", "type": "server_error"}}, {}
        if name.isdigit():
            return int(name), {"error": {"message": arg or f"scripted {name}", "type": "scripted"}}, {}
        if fault == "no-tools" and body.get("tools"):
            return 400, {"error": {"message": "this server does not support tools", "type": "invalid"}}, {}
        if fault == "hang":
            time.sleep(self.hang_s)
        if self.latency_s:
            time.sleep(self.latency_s)
        if api == "responses":
            body = {**body, "messages": messages_of_input(body.get("input"))}
        message = self.respond(body)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        if fault == "object-arguments":
            message = {
                **message,
                "tool_calls": [
                    {**tc, "function": {**tc["function"], "arguments": json.loads(tc["function"]["arguments"])}}
                    for tc in message.get("tool_calls") or []
                ],
            }
        payload = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage_of(body, message),
        }
        if fault == "empty-choices":
            payload["choices"] = []
        if api == "responses":
            payload = response_of(payload)
        return 200, payload, {_BODY: fault} if fault in ("truncated", "html") else {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes; no 40 ms delayed-ACK stall

            def do_POST(self) -> None:
                started = time.perf_counter()
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    if self.path.endswith("/chat/completions"):
                        status, payload, headers = server.answer(body)
                    elif self.path.endswith("/responses"):
                        status, payload, headers = server.answer(body, "responses")
                        body = {**body, "stream": False}  # answered in one body
                    else:
                        status, payload, headers = 404, {"error": {"message": "not found"}}, {}
                except Exception as exc:  # a broken responder is a 500 the test can see, not a dropped socket
                    with server._lock:
                        server.errors.append(repr(exc))
                    status, payload, headers = 500, {"error": {"message": f"responder raised {exc!r}"}}, {}
                finally:
                    with server._lock:  # before the answer leaves, so a client that got it sees it counted
                        server.in_flight -= 1
                if status == 0:  # "drop": the connection closes with no answer (server_close shuts the socket)
                    self.close_connection = True
                    with server._lock:
                        server.statuses.append(status)
                    return
                if status == 200 and body.get("stream") and server.streams and not headers.get(_BODY):
                    with server._lock:
                        server.statuses.append(status)
                        server.streamed += 1
                    usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    _stream(self, server, chunks_of(payload, usage))
                    return
                data, content_type = _render(payload, headers)
                with server._lock:
                    server.statuses.append(status)
                try:
                    self.send_response(status)
                    self.send_header("content-type", content_type)
                    self.send_header("content-length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and went away: that is the point of a hang
                with server._lock:
                    server.busy_s += time.perf_counter() - started

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _text_of(content: Any) -> str | None:
    """The text of a Responses API content: a string, or parts with ``text`` (input_text, output_text)."""
    if content is None or isinstance(content, str):
        return content
    return "".join(part.get("text") or "" for part in content if isinstance(part, dict))


def messages_of_input(items: Any) -> list[dict[str, Any]]:
    """A Responses API ``input`` as chat messages: a string is one user message; a message item keeps its role
    and its parts' text; consecutive assistant messages and ``function_call`` items make one assistant message
    with ``tool_calls`` (ids from ``call_id``); a ``function_call_output`` is a ``tool`` message. Other items
    (``reasoning``) are left out."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    messages: list[dict[str, Any]] = []
    for item in items or []:
        kind = item.get("type", "message")
        last = messages[-1] if messages else None
        if kind == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
        elif kind == "message":
            messages.append({"role": item["role"], "content": _text_of(item.get("content"))})
    return messages


def response_of(payload: dict[str, Any]) -> dict[str, Any]:
    """A chat completion ``payload`` as the Responses API answers: the message's text as a ``message`` item
    (``output_text``), each call as a ``function_call`` item, no items for ``choices: []``."""
    output: list[dict[str, Any]] = []
    for choice in payload["choices"][:1]:
        message = choice["message"]
        if message.get("content"):
            text = {"type": "output_text", "text": message["content"], "annotations": []}
            output.append({
                "type": "message", "id": f"msg_{payload['id']}", "role": "assistant", "status": "completed",
                "content": [text],
            })  # fmt: skip
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            output.append({
                "type": "function_call", "id": f"fc_{call['id']}", "call_id": call["id"],
                "name": call["function"]["name"], "status": "completed",
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            })  # fmt: skip
    usage = payload["usage"]
    return {
        "id": payload["id"].replace("chatcmpl", "resp"),
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": payload["model"],
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            "total_tokens": usage["total_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": usage["completion_tokens_details"],
        },
    }


def _stream(handler: BaseHTTPRequestHandler, server: ScriptedServer, chunks: list[dict[str, Any]]) -> None:
    """Send ``chunks`` as server-sent events (chunked), ``server.chunk_delay_s`` apart, then ``[DONE]``."""
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("transfer-encoding", "chunked")
    handler.end_headers()
    try:
        for number, chunk in enumerate(chunks):
            if server.chunk_wait is not None:
                server.chunk_wait(number)
            if server.chunk_delay_s:
                time.sleep(server.chunk_delay_s)
            event = f"data: {json.dumps(chunk)}\n\n".encode()
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            handler.wfile.flush()
        done = b"data: [DONE]\n\n"
        handler.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client went away (Ctrl-C closes its connection)


#: Characters of text per streamed chunk (about a token).
PIECE = 4


def chunks_of(payload: dict[str, Any], usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects OpenAI streams for the completion ``payload``."""
    head = {"id": payload["id"], "object": "chat.completion.chunk", "created": 0, "model": payload["model"]}
    if not payload["choices"]:
        return [{**head, "choices": []}]
    choice = payload["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": None if message.get("content") is None else ""})]
    text = message.get("content") or ""
    out += [chunk({"content": text[i : i + PIECE]}) for i in range(0, len(text), PIECE)]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        first = {"index": index, "id": call["id"], "type": "function", "function": {"name": function["name"]}}
        out.append(chunk({"tool_calls": [{**first, "function": {**first["function"], "arguments": ""}}]}))
        arguments = function["arguments"]
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        out += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + PIECE]}}]})
            for i in range(0, len(arguments), PIECE)
        ]
    out.append(chunk({}, choice["finish_reason"]))
    if usage:
        out.append({**head, "choices": [], "usage": payload["usage"]})
    return out


def _render(payload: dict[str, Any], headers: dict[str, str]) -> tuple[bytes, str]:
    """The bytes and content type of a body; a ``_BODY`` header (removed here) asks for a broken one."""
    data = json.dumps(payload).encode()
    broken = headers.pop(_BODY, None)
    if broken == "truncated":
        return data[: len(data) // 2], "application/json"
    if broken == "html":
        return b"<!doctype html><html><body>Welcome to the chat web UI</body></html>", "text/html; charset=utf-8"
    return data, "application/json"
