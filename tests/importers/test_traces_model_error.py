"""A model call's recorded failure in each trace reader (Span.model_error), on small spans built here, and rule 6 of
importers/traces/conversation.py: a trace whose last model call failed for the system's reason (a 5xx, a 429, a
timeout, a lost connection) is an infrastructure failure; a failure that is the request's (a 400), or one a later
call retried, marks nothing. The real frameworks' files: tests/cli/test_score_traces_crash.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_traces_reader import IDENTITY, TRACE, otlp_file, otlp_span, read

from prefix_exec.errors import InputError
from prefix_exec.importers.traces import TraceFile
from prefix_exec.importers.transcripts import Transcript
from prefix_exec.records.infrastructure import KEY

CALL = {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "O-1"}'}}
ASKED = [{"role": "user", "content": "where is O-1?"}]
CALLED = [{"role": "assistant", "content": None, "tool_calls": [CALL]}]
ANSWERED = [*ASKED, *CALLED, {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'}]
#: The texts real clients write for a failed model call (tests/data/traces/crash).
FIVE_HUNDRED = "Error code: 500 - {'error': {'message': 'internal error', 'type': 'server_error'}}"
TOO_LONG = "Error code: 400 - This model's maximum context length is 128000 tokens. Please reduce the length."


def marked(found: list[Transcript | InputError]) -> str | None:
    """The infrastructure mark of the one rollout read (``None``: none)."""
    [item] = found
    assert isinstance(item, Transcript), item
    return item.rollout.metadata.get(KEY)


# --- OTLP: status ERROR, the exception event, error.type ---------------------------------------------------------
def chat(span_id: str, start: int, inputs: list[Any], outputs: list[Any] | None, **extra: Any) -> dict[str, Any]:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.conversation.id": "conv-1",
        "gen_ai.input.messages": json.dumps(inputs),
        **({"gen_ai.output.messages": json.dumps(outputs)} if outputs is not None else {}),
        **extra.pop("attributes", {}),
    }
    return otlp_span(span_id, attributes, start=start, name="chat gpt-x", **extra)


def tool(span_id: str, start: int) -> dict[str, Any]:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_order",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.call.arguments": '{"order_id": "O-1"}',
        "gen_ai.tool.call.result": '{"status": "shipped"}',
    }
    return otlp_span(span_id, attributes, start=start, name="execute_tool get_order")


def exception(kind: str, message: str) -> dict[str, Any]:
    attributes = [
        {"key": "exception.type", "value": {"stringValue": kind}},
        {"key": "exception.message", "value": {"stringValue": message}},
    ]
    return {"timeUnixNano": "0", "name": "exception", "attributes": attributes}


def crashed(tmp_path: Path, **failure: Any) -> Path:
    """A model call, its tool, then a second model call that recorded ``failure`` (status, events, attributes)."""
    return otlp_file(
        tmp_path, chat("a" * 16, 1, ASKED, CALLED), tool("b" * 16, 20), chat("c" * 16, 40, ANSWERED, None, **failure)
    )


def test_status_error_with_an_exception_event_marks_the_rollout(tmp_path: Path) -> None:
    path = crashed(
        tmp_path,
        status={"code": 2, "message": FIVE_HUNDRED},
        events=[exception("openai.InternalServerError", FIVE_HUNDRED)],
    )
    assert marked(read(path)) == f"openai.InternalServerError: {FIVE_HUNDRED}"
    [found] = read(path)
    assert isinstance(found, Transcript) and [a.name for a in found.rollout.actions] == ["get_order"]


def test_status_error_alone_marks_the_rollout(tmp_path: Path) -> None:
    """No exception event, no error.type: the status message is the text (``STATUS_CODE_ERROR`` read too)."""
    path = crashed(tmp_path, status={"code": "STATUS_CODE_ERROR", "message": "Error code: 503 - Service Unavailable"})
    assert marked(read(path)) == "Error code: 503 - Service Unavailable"


def test_an_exception_event_alone_marks_the_rollout(tmp_path: Path) -> None:
    path = crashed(tmp_path, events=[exception("openai.APITimeoutError", "Request timed out.")])
    assert marked(read(path)) == "openai.APITimeoutError: Request timed out."


def test_error_type_alone_marks_the_rollout(tmp_path: Path) -> None:
    """Only ``error.type`` (as GenAI instrumentations set it, with no status code): the type is the text."""
    path = crashed(tmp_path, attributes={"error.type": "openai.APIConnectionError"})
    assert marked(read(path)) == "openai.APIConnectionError"


@pytest.mark.parametrize(
    "failure",
    [
        {"status": {"code": 2, "message": TOO_LONG}, "events": [exception("openai.BadRequestError", TOO_LONG)]},
        {"attributes": {"error.type": "ValueError"}},  # the harness's own bug, not the model server's
    ],
)
def test_a_failure_that_is_not_the_systems_marks_nothing(tmp_path: Path, failure: dict[str, Any]) -> None:
    """A 400 (the context is too long: the request's fault) ends the run too, but is scored as the agent's."""
    found = read(crashed(tmp_path, **failure))
    assert marked(found) is None
    assert isinstance(found[0], Transcript) and [a.name for a in found[0].rollout.actions] == ["get_order"]


def test_a_failed_call_a_later_one_retried_marks_nothing(tmp_path: Path) -> None:
    done = [*ANSWERED, {"role": "assistant", "content": "O-1 has shipped."}]
    failed = chat("c" * 16, 40, ANSWERED, None, status={"code": 2, "message": FIVE_HUNDRED})
    retried = chat("d" * 16, 60, ANSWERED, done[-1:])
    path = otlp_file(tmp_path, chat("a" * 16, 1, ASKED, CALLED), tool("b" * 16, 20), failed, retried)
    assert marked(read(path)) is None
    # The same spans in another order in the file: start times order them, so the failure is still not the last.
    path = otlp_file(tmp_path, retried, failed, tool("b" * 16, 20), chat("a" * 16, 1, ASKED, CALLED))
    assert marked(read(path)) is None


def test_a_details_event_is_the_failure_of_the_span_it_was_logged_in(tmp_path: Path) -> None:
    """Content as log events: the failed call's event carries only ``error.type``; its span's status has the
    text, which the mark takes. Without that span (logs only) the event's type still marks it."""
    event = {
        "timeUnixNano": "50",
        "traceId": TRACE,
        "spanId": "c" * 16,
        "eventName": "gen_ai.client.inference.operation.details",
        "attributes": [
            {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(ANSWERED)}},
            {"key": "error.type", "value": {"stringValue": "<class 'openai.InternalServerError'>"}},
        ],
    }
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": [event]}]}]}
    span = otlp_span("c" * 16, {"gen_ai.operation.name": "chat"}, start=40, status={"code": 2, "message": FIVE_HUNDRED})
    spans = {"resourceSpans": [{"scopeSpans": [{"spans": [tool("b" * 16, 20), span]}]}]}
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(spans) + "\n" + json.dumps(logs) + "\n")
    assert marked(read(path)) == FIVE_HUNDRED
    path.write_text(json.dumps(logs) + "\n")
    assert marked(read(path)) == "<class 'openai.InternalServerError'>"


# --- the Agents SDK's generation span -----------------------------------------------------------------------------
def agents_item(span_id: str, second: int, data: dict[str, Any], error: Any = None) -> dict[str, Any]:
    return {
        "object": "trace.span",
        "id": span_id,
        "trace_id": "trace_1",
        "parent_id": None,
        "started_at": f"2026-01-01T00:00:{second:02d}+00:00",
        "ended_at": f"2026-01-01T00:00:{second:02d}.5+00:00",
        "span_data": data,
        "error": error,
    }


def agents_file(tmp_path: Path, error: Any) -> Path:
    function = {"type": "function", "name": "get_order", "input": '{"order_id": "O-1"}', "output": "shipped"}
    items = [
        {"object": "trace", "id": "trace_1", "workflow_name": "shop", "group_id": "conv-1", "metadata": {}},
        agents_item("span_1", 1, {"type": "generation", "input": ASKED, "output": CALLED, "model": "gpt-x"}),
        agents_item("span_2", 2, function),
        agents_item("span_3", 3, {"type": "generation", "input": ANSWERED, "output": None}, error),
    ]
    path = tmp_path / "agents.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


def test_an_agents_sdk_generation_span_error(tmp_path: Path) -> None:
    """As the SDK records a failed model call: ``{"message": "Error getting response", "data": {"error": ...}}``;
    the openai client's timeout text has no exception name there."""
    failure = {"message": "Error getting response", "data": {"error": FIVE_HUNDRED}}
    assert marked(read(agents_file(tmp_path, failure))) == f"Error getting response: {FIVE_HUNDRED}"
    timeout = {"message": "Error getting response", "data": {"error": "Request timed out."}}
    assert marked(read(agents_file(tmp_path, timeout))) == "Error getting response: Request timed out."
    too_long = {"message": "Error getting response", "data": {"error": TOO_LONG}}
    assert marked(read(agents_file(tmp_path, too_long))) is None
    assert marked(read(agents_file(tmp_path, None))) is None


def test_an_agents_sdk_generation_error_of_the_wrong_shape_loses_only_its_span(tmp_path: Path) -> None:
    error, rest = read(agents_file(tmp_path, "boom"))
    assert isinstance(error, InputError) and (error.field, error.line) == ("error", 4)
    assert marked([rest]) is None  # the trace without that span: its call, unmarked
    assert isinstance(rest, Transcript) and [a.name for a in rest.rollout.actions] == ["get_order"]


# --- LangSmith's llm run -----------------------------------------------------------------------------------------
def langsmith_tree(llm_error: Any, chain_error: Any = None) -> dict[str, Any]:
    def run(run_id: str, kind: str, second: int, **fields: Any) -> dict[str, Any]:
        return {"id": run_id, "run_type": kind, "name": kind, "start_time": f"2026-01-01T00:00:{second:02d}", **fields}

    ai = {
        "lc": 1,
        "id": ["AIMessage"],
        "kwargs": {"content": "", "tool_calls": [{"name": "add", "args": {}, "id": "t1"}]},
    }
    asked = {"messages": [[{"lc": 1, "id": ["HumanMessage"], "kwargs": {"content": "add"}}]]}
    return run(
        "r0",
        "chain",
        0,
        trace_id="r0",
        inputs={},
        outputs=None,
        error=chain_error,
        extra={"metadata": {"task_id": "ls-1"}},
        child_runs=[
            run("r1", "llm", 1, inputs=asked, outputs={"generations": [[{"message": ai}]]}),
            run("r2", "tool", 2, inputs={"input": "{}"}, outputs={"output": "2"}),
            run("r3", "llm", 3, inputs=asked, outputs=None, error=llm_error),
        ],
    )


def langsmith_file(tmp_path: Path, tree: dict[str, Any]) -> list[Transcript | InputError]:
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(tree) + "\n")
    return list(TraceFile(path, IDENTITY, tolerant=True))


def test_a_langsmith_llm_run_error(tmp_path: Path) -> None:
    text = "InternalServerError('Error code: 502 - Bad Gateway')"  # LangChain writes the exception's repr
    assert marked(langsmith_file(tmp_path, langsmith_tree(text))) == text
    assert marked(langsmith_file(tmp_path, langsmith_tree(f"BadRequestError('{TOO_LONG}')"))) is None
    assert marked(langsmith_file(tmp_path, langsmith_tree(None))) is None


def test_a_langsmith_chain_run_error_of_any_type_still_reads(tmp_path: Path) -> None:
    """A chain run's ``error`` is not read (only a model's or a tool's is): an object there loses nothing."""
    for error in ({"type": "GraphRecursionError", "message": "limit"}, ["a", "b"], True, "RateLimitError: 429"):
        found = langsmith_file(tmp_path, langsmith_tree(None, chain_error=error))
        assert marked(found) is None
        assert isinstance(found[0], Transcript) and found[0].rollout.task_id == "ls-1"
    # A model run's error is text or null: an object there is named, and loses that run only.
    error, rest = langsmith_file(tmp_path, langsmith_tree({"message": "Error code: 500"}))
    assert isinstance(error, InputError) and error.field == "child_runs[2].error"
    assert marked([rest]) is None
