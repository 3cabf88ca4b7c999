"""A chat backend on the official ``openai`` client, for any OpenAI-compatible endpoint.

:class:`ChatBackend` sends one chat-completions request per :meth:`~ChatBackend.complete` and returns a
:class:`~prefix_exec.llm.types.Completion` with decoded tool calls and its cost. It adds what the client
leaves to the caller:

- bounded retries on 408, 409, 429, 5xx, timeouts, connection errors and 200s whose body is not a usable
  chat completion, with exponential backoff and full jitter; ``retry-after-ms``/``Retry-After`` are honoured
  up to ``retry_after_max_s`` (a longer wait fails at once, as does a 429 saying the quota is used up); each
  retry is reported to ``on_retry`` and in the completion;
- a per-endpoint cap on requests in flight, shared by every backend in the process that uses the same URL
  (or any gate the caller passes as ``slots``: the Ray runner passes one shared by all its workers);
- an optional SQLite response cache keyed by the request; only checked answers are stored;
- native tool calling, or the text protocol of :mod:`prefix_exec.llm.textcalls`, or native with two
  fallbacks (``tool_mode = "auto"``): calls read from the text of an answer without ``tool_calls``, per
  answer; and text mode once the server rejects ``tools``, learned once per endpoint and model in the process
  (:mod:`prefix_exec.llm.tool_support`);
- ``null_content = "empty"``: assistant messages with tool calls go out with ``content: ""``, not ``null``.

The client's own retries are off (``max_retries=0``) so that every retry is ours and counted.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from prefix_exec.json_types import JsonObject
from prefix_exec.llm.cache import ResponseCache, request_key
from prefix_exec.llm.client import import_openai, openai_client
from prefix_exec.llm.config import EndpointConfig
from prefix_exec.llm.decode import decode_answer, kept_body, response_problem
from prefix_exec.llm.inflight import IN_FLIGHT, Cancelled, until_cancelled
from prefix_exec.llm.retries import BadAnswer, retry_event
from prefix_exec.llm.stream import streamed_body
from prefix_exec.llm.textcalls import with_tools_prompt
from prefix_exec.llm.tool_support import ToolsRejected, error_message, rejects_tools, tool_support
from prefix_exec.llm.types import BackendError, Completion, Message, RetryEvent, ToolSchema
from prefix_exec.records.redaction import redact_url
from prefix_exec.trajectory import ToolCall

_SEMAPHORES: dict[str, threading.BoundedSemaphore] = {}
_REGISTRY_LOCK = threading.Lock()


def endpoint_slots(base_url: str, cap: int) -> threading.BoundedSemaphore:
    """The process-wide semaphore of ``base_url``; the first backend to ask sets its size."""
    with _REGISTRY_LOCK:
        if base_url not in _SEMAPHORES:
            _SEMAPHORES[base_url] = threading.BoundedSemaphore(cap)
        return _SEMAPHORES[base_url]


class ChatBackend:
    """One model on one endpoint. Thread-safe: the client, the semaphore and the cache are shared safely.

    ``slots`` is the gate every request holds while in flight; by default the process-wide semaphore of the
    endpoint URL, sized by the first backend that asks.
    """

    def __init__(
        self,
        config: EndpointConfig,
        *,
        cache: ResponseCache | None = None,
        on_retry: Callable[[RetryEvent], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        slots: AbstractContextManager[Any] | None = None,
    ) -> None:
        self.config = config
        self.cache = cache
        self.on_retry = on_retry
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._openai = import_openai()
        self._client = openai_client(
            base_url=config.base_url, api_key=config.api_key(), timeout_s=config.timeout_s, max_retries=0
        )
        self._slots = slots if slots is not None else endpoint_slots(config.base_url, config.max_concurrency)
        # Shared by every backend and scoped view of this model and URL, so ``auto`` learns once per process.
        self._tools = tool_support(config.base_url, config.model)
        self.scope = ""

    @property
    def text_mode(self) -> bool:
        """Whether tools go in the prompt: ``tool_mode = "text"``, or ``auto`` after the server rejected them."""
        mode = self.config.tool_mode
        return mode == "text" or (mode == "auto" and self._tools.rejection is not None)

    @property
    def tools_rejected(self) -> str | None:
        """In ``auto`` mode, the server's rejection of ``tools`` that switched this model to text (a rollout notes it
        as ``metadata["tools_refused"]``, a field name kept as written); else ``None``.

        The other fallback of ``auto``, calls read from the text of a native answer, is no switch: it is decided
        per answer (:attr:`Completion.in_content`), so every unit of the model sends the same request whatever
        ran before it, in this process or another."""
        return self._tools.rejection if self.config.tool_mode == "auto" else None

    def scoped(self, scope: str) -> ChatBackend:
        """A view sharing this backend's client whose cache entries are kept apart under ``scope``.

        The runner scopes by work unit, so two units that happen to send the same request (react and
        guarded-react start alike) do not share an answer, and a unit's result never depends on which other
        unit ran first.
        """
        view = copy.copy(self)
        view.scope = scope
        return view

    # ----------------------------------------------------------------------------------------- messages

    def tool_result_message(self, call: ToolCall, content: str) -> Message:
        """The message that hands ``content`` (a tool's result) back to the model after ``call``."""
        if self.text_mode or call.call_id is None:
            return {"role": "user", "content": f"Result of tool call {call.name} ({call.call_id}):\n{content}"}
        return {"role": "tool", "tool_call_id": call.call_id, "content": content}

    # ----------------------------------------------------------------------------------------- requests

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema] = (), *, role: str = "executor"
    ) -> Completion:
        """One answer to ``messages``; ``tools`` empty means a plain text answer is wanted.

        Raises :class:`BackendError` when the endpoint cannot answer within ``max_retries`` retries.
        """
        try:
            return self._complete(messages, tools, role)
        except ToolsRejected as rejected:
            self._tools.rejection = rejected.message[:300]
            return self._complete(messages, tools, role)
        except self._openai.BadRequestError as exc:
            raise BackendError(f"{self._where()}: bad request: {exc}") from None

    def request_digest(self, messages: Sequence[Message], tools: Sequence[ToolSchema] = ()) -> str:
        """SHA-256 (hex) of everything that determines this model's answer to ``messages``: the endpoint URL
        (without credentials), the tool mode, the model, the decoding settings, the seed and the messages. Unlike
        the response cache's key it leaves out :attr:`scope`, so two units asking the same thing agree on it
        (the plan store keys initial plans by it)."""
        request = self._request(messages, tools)
        return request_key({"base_url": redact_url(self.config.base_url), "text_mode": self.text_mode, **request})

    def _falls_back(self, tools: Sequence[ToolSchema], message: str) -> bool:
        """Whether an error saying ``message`` switches this model to text: ``auto``, tools offered natively,
        and a server that says it takes no tools (some say so with a 400, llama-server with a 500)."""
        return self.config.tool_mode == "auto" and bool(tools) and not self.text_mode and rejects_tools(message)

    def _where(self) -> str:
        return f"{self.config.model} at {redact_url(self.config.base_url)}"

    def _request(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> JsonObject:
        cfg = self.config
        request: JsonObject = {"model": cfg.model}
        if cfg.temperature is not None:
            request["temperature"] = cfg.temperature
        if cfg.seed is not None:
            request["seed"] = cfg.seed
        if cfg.reasoning_effort is not None:
            request["reasoning_effort"] = cfg.reasoning_effort
        if cfg.max_tokens is not None:
            request["max_tokens"] = cfg.max_tokens
        if cfg.max_completion_tokens is not None:
            request["max_completion_tokens"] = cfg.max_completion_tokens
        if tools and self.text_mode:
            request["messages"] = with_tools_prompt(messages, tools, cfg.text_format)
        else:
            request["messages"] = [_with_content(m) if cfg.null_content == "empty" else dict(m) for m in messages]
            if tools:
                request["tools"] = [t.to_openai() for t in tools]
        return request

    def _complete(self, messages: Sequence[Message], tools: Sequence[ToolSchema], role: str) -> Completion:
        text_mode = self.text_mode
        # How the answer is read: in auto mode, calls are looked for in the text only when tools were offered.
        mode = "text" if text_mode else ("auto" if tools and self.config.tool_mode == "auto" else "native")
        request = self._request(messages, tools)
        cache_key = {"base_url": self.config.base_url, "text_mode": text_mode, "scope": self.scope, **request}
        cached = self._cached(cache_key, role, mode, tools)
        if cached is not None:
            return cached
        retries: list[RetryEvent] = []
        queue_s = backoff_s = 0.0
        for attempt in range(1, self.config.max_retries + 2):
            asked = time.perf_counter()
            started: float | None = None
            try:
                with self._slots, IN_FLIGHT.track(role, self._client.close) as flight:
                    started = time.perf_counter()
                    queue_s += started - asked
                    response = until_cancelled(IN_FLIGHT, lambda: self._post(request, flight.received), self._where())
                    latency = time.perf_counter() - started
                break
            except (self._openai.APIError, BadAnswer) as exc:
                if IN_FLIGHT.cancelled.is_set():  # its connection was closed by Ctrl-C: not a fault to retry
                    raise Cancelled(f"{self._where()}: the run was interrupted") from None
                if isinstance(exc, self._openai.APIStatusError) and self._falls_back(tools, error_message(exc)):
                    raise ToolsRejected(error_message(exc)) from None
                if isinstance(exc, self._openai.BadRequestError):
                    raise
                elapsed = time.perf_counter() - started if started is not None else 0.0
                event = retry_event(exc, attempt, elapsed, self.config, self._rng, self._openai)
                if isinstance(event, str):
                    raise BackendError(f"{self._where()}: {event}", tuple(retries)) from None
                if attempt > self.config.max_retries:
                    raise BackendError(
                        f"{self._where()}: gave up after {attempt} attempts "
                        f"({len(retries)} retries); last error: {event.kind} {event.message}",
                        tuple(retries),
                    ) from None
                retries.append(event)
                if self.on_retry is not None:
                    self.on_retry(event)
                self._sleep(event.delay_s)
                backoff_s += event.delay_s
            except RuntimeError:  # the HTTP client closed under it ("the client has been closed")
                if IN_FLIGHT.cancelled.is_set():
                    raise Cancelled(f"{self._where()}: the run was interrupted") from None
                raise
        if self.cache is not None:
            self.cache.put(cache_key, response, latency)
        return self._completion(
            response,
            role,
            latency,
            mode,
            cached=False,
            tools=tools,
            retries=tuple(retries),
            queue_s=queue_s,
            backoff_s=backoff_s,
        )

    def _cached(self, key: JsonObject, role: str, mode: str, tools: Sequence[ToolSchema]) -> Completion | None:
        """The cache's answer to the request ``key``, or ``None`` to ask the endpoint. The request is kept in the cache
        first (``prefix-exec show`` sees it in flight); an entry that fails the answer check (stored by a version
        that cached before checking) is asked again."""
        if self.cache is None:
            return None
        reading = {"role": role, "mode": mode, "text_format": self.config.text_format}
        self.cache.asked(key, {**reading, "tools": [tool.name for tool in tools]})
        hit = self.cache.get(key)
        if hit is not None and response_problem(hit[0]) is None:
            return self._completion(hit[0], role, hit[1], mode, cached=True, tools=tools)
        return None

    def _post(self, request: JsonObject, received: Callable[[], None]) -> JsonObject:
        """The checked body of one request; raises ``APIError`` for an error status, ``BadAnswer`` for a bad body.

        The client's typed ``chat.completions.create`` deep-copies every message through its type transform
        (milliseconds per call on long conversations); ``post`` sends the same body through the same client
        (auth, HTTP, errors) without it. ``cast_to=object`` hands back the decoded JSON as plain data, or the
        text when the server did not say JSON.
        """
        try:
            if self.config.stream:  # the same body, put back together from its chunks (``received`` counts them)
                body: Any = streamed_body(self._client, self._openai.Stream[object], request, received)
            else:
                body = self._client.post("/chat/completions", body=request, cast_to=object)
        except (ValueError, RecursionError) as exc:  # said JSON, sent something else: truncated, cut by a proxy
            raise BadAnswer(f"the body is not valid JSON ({str(exc)[:120]})", retryable=True) from None
        if isinstance(body, str):
            try:
                body = json.loads(body)
            except (ValueError, RecursionError):
                raise BadAnswer(
                    f"the server answered {body[:80]!r}..., not JSON: is base_url the API root "
                    "(e.g. http://host:8000/v1), not a web page?",
                    retryable=False,
                ) from None
        problem = response_problem(body)
        if problem is not None:
            raise BadAnswer(problem, retryable=True)
        return kept_body(dict(body))

    # ----------------------------------------------------------------------------------------- decoding

    def _completion(
        self,
        response: JsonObject,
        role: str,
        latency: float,
        mode: str,
        *,
        cached: bool,
        tools: Sequence[ToolSchema] = (),
        retries: tuple[RetryEvent, ...] = (),
        queue_s: float = 0.0,
        backoff_s: float = 0.0,
    ) -> Completion:
        done = decode_answer(
            response,
            mode=mode,
            text_format=self.config.text_format,
            role=role,
            model=self.config.model,
            latency_s=latency,
            tools=frozenset(tool.name for tool in tools),
        )
        # Milliseconds: taking a free slot costs microseconds, which is no wait worth recording.
        queued, slept = round(queue_s, 3), round(backoff_s, 3)
        cost = dataclasses.replace(done.cost, queue_s=queued, backoff_s=slept) if queued or slept else done.cost
        return dataclasses.replace(
            done, cost=cost, cached=cached, retries=retries, queue_s=queue_s, backoff_s=backoff_s
        )


def _with_content(message: Message) -> Message:
    """``message`` with ``content: ""`` where it carries tool calls and null content (``null_content = "empty"``)."""
    out = dict(message)
    if out.get("role") == "assistant" and out.get("tool_calls") and out.get("content") is None:
        out["content"] = ""
    return out
