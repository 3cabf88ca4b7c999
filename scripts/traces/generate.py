"""Regenerate tests/data/traces/: the seven shop conversations of examples/transcripts, run for real by agent
frameworks and their tracing instrumentations against the tests' scripted OpenAI-compatible server on 127.0.0.1,
with real tool functions, and exported as a user would export them.

Run it in its own virtual environment (never the project's), with the pinned versions of requirements.txt:

    python3.12 -m venv /tmp/tracegen && /tmp/tracegen/bin/pip install -r scripts/traces/requirements.txt
    /tmp/tracegen/bin/python scripts/traces/generate.py            # every pair, each in its own process
    /tmp/tracegen/bin/python scripts/traces/generate.py --only agents-sdk pydantic-ai   # some pairs
    /tmp/tracegen/bin/python scripts/traces/generate.py --crash    # the crash runs (crash.py), every pair

With ``--crash`` (alone or before ``--only``), five conversations are run with one model call each that the
server fails (a 500, a timeout, a dropped connection, a 400; one 500 retried: scripts/traces/crash.py), into
``tests/data/traces/crash/<pair>.jsonl`` and ``crash/transcripts-<pair>.jsonl`` (each crashed run's transcript
with the run's exception as its ``error``, as AgentDojo writes it); the files above are left as they are.

Pairs (file written under tests/data/traces/):

- ``otel-genai``: the ``openai`` client with ``opentelemetry-instrumentation-openai-v2`` (latest experimental GenAI
  conventions, content on spans) and the tools in ``execute_tool`` spans made with the OpenTelemetry API as the
  GenAI conventions describe them; OTLP/JSON as the Collector's file exporter writes it (``otel-genai.jsonl``)
  and the same spans as OTLP protobuf (``otel-genai.binpb``, one length-prefixed ExportTraceServiceRequest);
- ``otel-genai-events``: the same with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=event_only``: the
  messages in ``gen_ai.client.inference.operation.details`` log events (``resourceLogs`` lines);
- ``openinference-openai``: the ``openai`` client with ``openinference-instrumentation-openai`` (no tool spans:
  replies come from the next LLM span's input messages), OTLP/JSON;
- ``agents-sdk``: the OpenAI Agents SDK with its own tracing, a ``TracingProcessor`` writing each trace's and
  span's ``export()`` as JSON lines (``agents-sdk.jsonl``) and the same items as its ingest payload
  (``agents-sdk-ingest.json``, ``{"data": [...]}``);
- ``openinference-agents``: the Agents SDK with ``openinference-instrumentation-openai-agents``, OTLP/JSON;
- ``pydantic-ai``: pydantic-ai's built-in instrumentation (``Agent.instrument_all``), OTLP/JSON.

opentelemetry-instrumentation-openai-v2 2.4b0 imports ``opentelemetry.util.genai.instruments``, which
opentelemetry-util-genai 1.3b0 no longer has: requirements.txt pins 1.1b0.

The OTLP/JSON lines are made by the SDK's own OTLP encoder (``opentelemetry-exporter-otlp-proto-common``) and
protobuf's JSON mapping, with the Collector's choices: ids in hex, enums as numbers, int64 as strings.
Each pair but pydantic-ai (whose messages are its own form) also writes ``transcripts-<pair>.jsonl``: the same
conversations as the agent kept them (the Chat messages it sent; the Agents SDK's ``to_input_list()`` items), the
transcript form the tests compare with.
Only 127.0.0.1 is contacted: the framework's own exporters to a vendor are replaced before any run.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "traces"
TOOLS = json.loads((ROOT / "examples" / "transcripts" / "tools.json").read_text())
PAIRS = ("otel-genai", "otel-genai-events", "openinference-openai", "agents-sdk", "openinference-agents", "pydantic-ai")
MODEL = "gpt-4o-mini"
sys.path.insert(0, str(ROOT / "tests" / "fakes"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import crash  # noqa: E402  (this folder, put on the path above)
from otlp_files import FileExporters, tracer_provider  # noqa: E402
from shop import FUNCTIONS, conversations, responder, run_tool, segments, system_of  # noqa: E402


# --- a hand-written agent loop on the openai client ---------------------------------------------------------------
def chat_loop(
    client: Any,
    conv: dict[str, Any],
    tool_span: Callable[..., Any] | None,
    messages: list[dict[str, Any]],
    retries: int = 0,
) -> None:
    """Run one conversation: each user turn, then model calls and tools until the model answers in text, into
    ``messages`` (the messages as sent: the transcript form, as far as the run went when a call raises). A call the
    server answers with a 5xx is asked again up to ``retries`` times, as an agent loop's own retry does."""
    messages.append({"role": "system", "content": system_of(conv)})
    for text in segments(conv):
        messages.append({"role": "user", "content": text})
        while True:
            reply = chat_call(client, messages, retries)
            said = reply.model_dump(exclude_none=True, include={"role", "content", "tool_calls"})
            said.setdefault("content", None)
            messages.append(said)
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                name, arguments = call.function.name, call.function.arguments
                if tool_span is None:
                    content, _ = run_tool(name, arguments)
                else:
                    content = tool_span(name, arguments, call.id)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


def chat_call(client: Any, messages: list[dict[str, Any]], retries: int) -> Any:
    """One model call's message; a 5xx is asked again up to ``retries`` times (each attempt its own span)."""
    from openai import InternalServerError

    for attempt in range(retries + 1):
        try:
            return client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS).choices[0].message
        except InternalServerError:
            if attempt == retries:
                raise
    raise AssertionError("unreachable")


def genai_tool_span(tracer: Any) -> Callable[[str, str, str], str]:
    """Tools in ``execute_tool`` spans, as the GenAI conventions describe them."""
    from opentelemetry.trace import SpanKind, Status, StatusCode

    def run(name: str, arguments: str, call_id: str) -> str:
        with tracer.start_as_current_span(f"execute_tool {name}", kind=SpanKind.INTERNAL) as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", name)
            span.set_attribute("gen_ai.tool.call.id", call_id)
            span.set_attribute("gen_ai.tool.call.arguments", arguments)
            content, exc = run_tool(name, arguments)
            if exc is not None:
                span.record_exception(exc)
                span.set_attribute("error.type", type(exc).__name__)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
            else:
                span.set_attribute("gen_ai.tool.call.result", content)
            return content

    return run


def run_openai_pair(pair: str, convs: list[dict[str, Any]], base_url: str, out: Path) -> list[dict[str, Any]]:
    from openai import APIError, OpenAI

    crashing = out != OUT
    binpb = out / f"{pair}.binpb" if pair == "otel-genai" and not crashing else None
    exporters = FileExporters(out / f"{pair}.jsonl", binpb)
    provider, log_provider = tracer_provider(exporters, logs=pair == "otel-genai-events")
    if pair == "openinference-openai":
        from openinference.instrumentation import using_attributes
        from openinference.instrumentation.openai import OpenAIInstrumentor as Instrumentor
    else:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as Instrumentor
    if pair == "otel-genai-events":
        Instrumentor().instrument(tracer_provider=provider, logger_provider=log_provider)
    else:
        Instrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("shop-agent")
    client = OpenAI(base_url=base_url, api_key="placeholder", max_retries=0, **crash.timeout(crashing))
    found = []
    for conv in convs:
        attributes = {"gen_ai.conversation.id": conv["task_id"], "shop.success": bool(conv["success"])}
        messages: list[dict[str, Any]] = []
        record = {"task_id": conv["task_id"], "model": MODEL, "success": conv["success"], "messages": messages}
        retries = 1 if crashing and conv["task_id"] in crash.RETRIED else 0
        try:  # a crash run's exception ends the run, through the agent's span (which records it too)
            with tracer.start_as_current_span(f"invoke_agent shop {conv['task_id']}", attributes=attributes):
                if pair == "openinference-openai":
                    with using_attributes(session_id=conv["task_id"], metadata={"success": conv["success"]}):
                        chat_loop(client, conv, None, messages, retries)
                else:
                    chat_loop(client, conv, genai_tool_span(tracer), messages, retries)
        except APIError as exc:
            if not crashing:
                raise
            record["error"] = ended(conv, exc)
        found.append(record)
    provider.shutdown()
    if log_provider is not None:
        log_provider.shutdown()
    return found


def ended(conv: dict[str, Any], exc: BaseException) -> str:
    """A crashed run's ``error``, as a harness writes the exception that ended it (said on stderr too)."""
    text = f"{type(exc).__name__}: {exc}"
    print(f"{conv['task_id']}: {text}", file=sys.stderr)
    return text


# --- the OpenAI Agents SDK ----------------------------------------------------------------------------------------
def agents_tools() -> list[Any]:
    from agents import function_tool

    return [function_tool(f) for f in FUNCTIONS.values()]


async def agents_run(conv: dict[str, Any], base_url: str, crashing: bool) -> tuple[list[Any], str | None]:
    """One conversation's ``to_input_list()`` items and, for a crash run the server ended, the run's exception.
    A conversation in ``crash.RETRIED`` has the runner's own model retry (one, on a 500)."""
    from agents.exceptions import AgentsException
    from openai import APIError, AsyncOpenAI

    from agents import (
        Agent,
        ModelRetrySettings,
        ModelSettings,
        OpenAIChatCompletionsModel,
        Runner,
        retry_policies,
        trace,
    )

    client = AsyncOpenAI(base_url=base_url, api_key="placeholder", max_retries=0, **crash.timeout(crashing))
    settings = ModelSettings()
    if crashing and conv["task_id"] in crash.RETRIED:
        policy = retry_policies.http_status([500])
        retry = ModelRetrySettings(max_retries=1, policy=policy, backoff={"initial_delay": 0})
        settings = ModelSettings(retry=retry)
    agent = Agent(
        name="shop",
        instructions=system_of(conv),
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
        tools=agents_tools(),
        model_settings=settings,
    )
    items: list[Any] = []
    error = None
    metadata = {"task_id": conv["task_id"], "success": str(conv["success"])}
    with trace("shop support", group_id=conv["task_id"], metadata=metadata):
        for text in segments(conv):
            try:
                result = await Runner.run(agent, [*items, {"role": "user", "content": text}])
            except AgentsException as exc:  # a tool the agent does not have ends the run, as the SDK does
                print(f"{conv['task_id']}: {type(exc).__name__}: {exc}", file=sys.stderr)
                break
            except APIError as exc:  # a crash run: the server's failure ends the run
                if not crashing:
                    raise
                error = ended(conv, exc)
                break
            items = result.to_input_list()
    return items, error


async def agents_runs(pair: str, convs: list[dict[str, Any]], base_url: str, crashing: bool) -> list[dict[str, Any]]:
    """Every conversation on one event loop (the transcript form: the SDK's ``to_input_list()`` items)."""
    found = []
    for conv in convs:
        if pair == "openinference-agents":  # OpenInference's context attributes: session.id and metadata
            from openinference.instrumentation import using_attributes

            with using_attributes(session_id=conv["task_id"], metadata={"success": conv["success"]}):
                items, error = await agents_run(conv, base_url, crashing)
        else:
            items, error = await agents_run(conv, base_url, crashing)
        record = {"task_id": conv["task_id"], "model": MODEL, "success": conv["success"], "input": items}
        found.append(record if error is None else {**record, "error": error})
    return found


class JsonLinesProcessor:
    """An Agents SDK TracingProcessor: each finished trace and span's ``export()`` as one JSON line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: list[dict[str, Any]] = []
        path.write_text("")

    def _write(self, item: Any) -> None:
        exported = item.export()
        if exported:
            self.items.append(exported)
            with self.path.open("a") as fh:
                fh.write(json.dumps(exported, default=str) + "\n")

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        self._write(trace)

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        self._write(span)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def run_agents_pair(pair: str, convs: list[dict[str, Any]], base_url: str, out: Path) -> list[dict[str, Any]]:
    from agents import set_trace_processors

    set_trace_processors([])  # never the SDK's default exporter to the vendor
    processor = None
    provider = None
    if pair == "agents-sdk":
        processor = JsonLinesProcessor(out / f"{pair}.jsonl")
        set_trace_processors([processor])
    else:
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        provider, _ = tracer_provider(FileExporters(out / f"{pair}.jsonl"))
        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider, exclusive_processor=True)
    found = asyncio.run(agents_runs(pair, convs, base_url, out != OUT))
    if processor is not None and out == OUT:
        (out / f"{pair}-ingest.json").write_text(json.dumps({"data": processor.items}, default=str) + "\n")
    if provider is not None:
        provider.shutdown()
    return found


# --- pydantic-ai's built-in instrumentation ----------------------------------------------------------------------
def pydantic_tools() -> list[Any]:
    """The shop's functions as pydantic-ai tools: a refusal is a ``ModelRetry`` (the model is told and may retry),
    as pydantic-ai's documentation has tools refuse."""
    import functools

    from pydantic_ai import ModelRetry, Tool

    def refusing(function: Callable[..., str]) -> Callable[..., str]:
        @functools.wraps(function)
        def run(**kwargs: Any) -> str:
            try:
                return function(**kwargs)
            except Exception as exc:
                raise ModelRetry(str(exc)) from exc

        return run

    return [Tool(refusing(f), takes_ctx=False, max_retries=3) for f in FUNCTIONS.values()]


def run_pydantic_pair(pair: str, convs: list[dict[str, Any]], base_url: str, out: Path) -> list[dict[str, Any]]:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import RetryOnModelErrors
    from pydantic_ai.exceptions import AgentRunError
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    crashing = out != OUT
    provider, _ = tracer_provider(FileExporters(out / f"{pair}.jsonl"))
    tracer = provider.get_tracer("shop-agent")
    if crashing:  # no retry inside the openai client: a failed call is one model request, in its own span
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=base_url, api_key="placeholder", max_retries=0, **crash.timeout(crashing))
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
    else:
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key="placeholder"))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    found = []
    for conv in convs:
        retried = crashing and conv["task_id"] in crash.RETRIED  # pydantic-ai's own retry of a failed request
        agent = Agent(
            model,
            instructions=system_of(conv),
            tools=pydantic_tools(),
            retries=3,
            capabilities=[RetryOnModelErrors(max_attempts=2, initial_delay=0)] if retried else [],
        )
        attributes = {"gen_ai.conversation.id": conv["task_id"], "shop.success": bool(conv["success"])}
        history: list[Any] = []
        record: dict[str, Any] = {"task_id": conv["task_id"], "model": MODEL, "success": conv["success"]}
        try:  # a crash run's exception ends the run, through the conversation's span
            with tracer.start_as_current_span(f"conversation {conv['task_id']}", attributes=attributes):
                for text in segments(conv):
                    history = agent.run_sync(text, message_history=history).all_messages()
        except AgentRunError as exc:
            if not crashing:
                raise
            record["error"] = ended(conv, exc)
        found.append({**record, "turns": len(history)})
    provider.shutdown()
    return found


def run_pair(pair: str, crashing: bool) -> None:
    from openai_server import ScriptedServer

    out = OUT / "crash" if crashing else OUT
    convs = crash.conversations() if crashing else conversations()
    fault_of = crash.fault_of(convs) if crashing else None
    with ScriptedServer(responder(convs), hang_s=crash.HANG_S, fault_of=fault_of) as server:
        runner = run_agents_pair if pair.endswith("agents") or pair == "agents-sdk" else run_openai_pair
        runner = run_pydantic_pair if pair == "pydantic-ai" else runner
        transcripts = runner(pair, convs, server.base_url, out)
        if server.errors:
            raise SystemExit(f"{pair}: the scripted server failed: {server.errors}")
    if pair == "pydantic-ai":  # its messages are pydantic-ai's own form, not a transcript form read here
        print(f"{pair}: {len(transcripts)} conversations", file=sys.stderr)
        return
    with (out / f"transcripts-{pair}.jsonl").open("w") as fh:
        for record in transcripts:
            fh.write(json.dumps(record, default=str) + "\n")
    print(f"{pair}: {len(transcripts)} conversations", file=sys.stderr)


def main() -> None:
    crashing = "--crash" in sys.argv
    argv = [a for a in sys.argv[1:] if a != "--crash"]
    (OUT / "crash" if crashing else OUT).mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
        "OPENAI_AGENTS_DISABLE_TRACING": "0",
        "NO_PROXY": "127.0.0.1",
    }
    if argv and argv[0] != "--only":
        run_pair(argv[0], crashing)
        return
    for pair in argv[1:] or PAIRS:
        pair_env = dict(env)
        if pair == "otel-genai-events":  # content in log events, not on spans
            pair_env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "event_only"
        subprocess.run([sys.executable, __file__, pair, *(["--crash"] if crashing else [])], env=pair_env, check=True)


if __name__ == "__main__":
    main()
