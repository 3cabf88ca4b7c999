"""A chat backend on the official ``openai`` client, for any OpenAI-compatible endpoint.

:class:`ChatBackend` sends one chat-completions request per :meth:`~ChatBackend.complete` and returns a
:class:`~prefix_exec.llm.types.Completion` with decoded tool calls and its cost. It adds what the client
leaves to the caller:

- bounded retries on 429, 5xx, timeouts and connection errors, with exponential backoff and full jitter
  (``Retry-After`` is honoured up to the cap); each retry is reported to ``on_retry`` and in the completion;
- a per-endpoint cap on requests in flight, shared by every backend in the process that uses the same URL
  (or any gate the caller passes as ``slots``: the Ray runner passes one shared by all its workers);
- an optional SQLite response cache keyed by the request;
- native tool calling, or the text protocol of :mod:`prefix_exec.llm.textcalls`, or native with a fallback.

The client's own retries are off (``max_retries=0``) so that every retry is ours and counted.
"""

from __future__ import annotations

import contextlib
import copy
import random
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from prefix_exec.llm.cache import ResponseCache
from prefix_exec.llm.config import EndpointConfig
from prefix_exec.llm.textcalls import decode_arguments, parse_text_calls, with_tools_prompt
from prefix_exec.llm.types import BackendError, Completion, Message, RetryEvent, ToolSchema
from prefix_exec.trajectory import CallCost, ToolCall

_SEMAPHORES: dict[str, threading.BoundedSemaphore] = {}
_SEMAPHORES_LOCK = threading.Lock()


def endpoint_slots(base_url: str, cap: int) -> threading.BoundedSemaphore:
    """The process-wide semaphore of ``base_url``; the first backend to ask sets its size."""
    with _SEMAPHORES_LOCK:
        if base_url not in _SEMAPHORES:
            _SEMAPHORES[base_url] = threading.BoundedSemaphore(cap)
        return _SEMAPHORES[base_url]


def _import_openai() -> Any:
    try:
        import openai
    except ImportError:
        raise ImportError(
            "running agents needs the openai client: pip install 'prefix-exec[llm]' (or pip install openai)"
        ) from None
    return openai


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
        self._openai = _import_openai()
        self._client = self._openai.OpenAI(
            base_url=config.base_url, api_key=config.api_key(), timeout=config.timeout_s, max_retries=0
        )
        self._completion_type = self._openai.types.chat.ChatCompletion
        self._slots = slots if slots is not None else endpoint_slots(config.base_url, config.max_concurrency)
        # ``auto`` mode learns once per backend whether the server takes the ``tools`` field.
        self.text_mode = config.tool_mode == "text"
        self.scope = ""

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

        Raises :class:`BackendError` when the endpoint cannot answer within the retry budget.
        """
        try:
            return self._complete(messages, tools, role)
        except self._openai.BadRequestError as exc:
            if self.config.tool_mode == "auto" and tools and not self.text_mode and "tool" in str(exc).lower():
                self.text_mode = True
                return self._complete(messages, tools, role)
            raise BackendError(f"{self.config.model} at {self.config.base_url}: bad request: {exc}") from None

    def _request(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> dict[str, Any]:
        cfg = self.config
        request: dict[str, Any] = {"model": cfg.model, "temperature": cfg.temperature}
        if cfg.seed is not None:
            request["seed"] = cfg.seed
        if cfg.reasoning_effort is not None:
            request["reasoning_effort"] = cfg.reasoning_effort
        if cfg.max_tokens is not None:
            request["max_tokens"] = cfg.max_tokens
        if tools and self.text_mode:
            request["messages"] = with_tools_prompt(messages, tools)
        else:
            request["messages"] = [dict(m) for m in messages]
            if tools:
                request["tools"] = [t.to_openai() for t in tools]
        return request

    def _complete(self, messages: Sequence[Message], tools: Sequence[ToolSchema], role: str) -> Completion:
        request = self._request(messages, tools)
        cache_key = {"base_url": self.config.base_url, "text_mode": self.text_mode, "scope": self.scope, **request}
        hit = self.cache.get(cache_key) if self.cache is not None else None
        if hit is not None:
            response, latency = hit
            return self._decode(response, role, latency, cached=True, retries=())
        retries: list[RetryEvent] = []
        started = time.perf_counter()
        for attempt in range(1, self.config.max_retries + 2):
            try:
                with self._slots:
                    # The client's typed ``chat.completions.create`` deep-copies every message through its
                    # type transform (milliseconds per call on long conversations); ``post`` sends the same
                    # body through the same client (auth, HTTP, errors) without it.
                    raw = self._client.post("/chat/completions", body=request, cast_to=self._completion_type)
                response = raw.model_dump(mode="json")
                break
            except self._openai.BadRequestError:
                raise
            except self._openai.APIError as exc:
                event = self._retryable(exc, attempt)
                if event is None:
                    where = f"{self.config.model} at {self.config.base_url}"
                    raise BackendError(f"{where}: {exc}", tuple(retries)) from None
                if attempt > self.config.max_retries:
                    raise BackendError(
                        f"{self.config.model} at {self.config.base_url}: gave up after {attempt} attempts "
                        f"({len(retries)} retries); last error: {event.kind} {event.message}",
                        tuple(retries),
                    ) from None
                retries.append(event)
                if self.on_retry is not None:
                    self.on_retry(event)
                self._sleep(event.delay_s)
        latency = time.perf_counter() - started
        if self.cache is not None:
            self.cache.put(cache_key, response, latency)
        return self._decode(response, role, latency, cached=False, retries=tuple(retries))

    def _retryable(self, exc: Exception, attempt: int) -> RetryEvent | None:
        """The retry event for a transient error, or ``None`` when retrying cannot help."""
        openai = self._openai
        status: int | None = getattr(exc, "status_code", None)
        if isinstance(exc, openai.APITimeoutError):
            kind = "timeout"
        elif isinstance(exc, openai.APIConnectionError):
            kind = "connection"
        elif status == 429:
            kind = "rate_limit"
        elif status is not None and status >= 500:
            kind = "server"
        else:
            return None
        cap = min(self.config.backoff_max_s, self.config.backoff_base_s * 2 ** (attempt - 1))
        delay = self._rng.uniform(0.0, cap)
        response = getattr(exc, "response", None)
        retry_after = response.headers.get("retry-after") if response is not None else None
        if retry_after is not None:
            with contextlib.suppress(ValueError):
                delay = max(delay, min(float(retry_after), self.config.backoff_max_s))
        return RetryEvent(attempt=attempt, kind=kind, status=status, delay_s=delay, message=str(exc)[:200])

    # ----------------------------------------------------------------------------------------- decoding

    def _decode(
        self, response: dict[str, Any], role: str, latency: float, *, cached: bool, retries: tuple[RetryEvent, ...]
    ) -> Completion:
        choices = response.get("choices") or []
        if not choices:
            raise BackendError(f"{self.config.model}: the response has no choices", retries)
        message = choices[0].get("message") or {}
        content: str | None = message.get("content")
        calls: tuple[ToolCall, ...]
        if self.text_mode:
            _, calls = parse_text_calls(content)
            out: Message = {"role": "assistant", "content": content or ""}
        else:
            calls = tuple(
                decode_arguments(
                    (tc.get("function") or {}).get("name") or "",
                    tc.get("id"),
                    (tc.get("function") or {}).get("arguments") or "",
                )
                for tc in message.get("tool_calls") or []
            )
            out = {"role": "assistant", "content": content}
            if message.get("tool_calls"):
                out["tool_calls"] = [
                    {"id": tc.get("id"), "type": "function", "function": tc.get("function")}
                    for tc in message["tool_calls"]
                ]
        usage = response.get("usage") or {}
        details = usage.get("completion_tokens_details") or {}
        cost = CallCost(
            role=role,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            reasoning_tokens=int(details.get("reasoning_tokens") or 0),
            latency_s=latency,
            model=self.config.model,
        )
        return Completion(content=content, calls=calls, message=out, cost=cost, cached=cached, retries=retries)
