"""Text formats through the backend: the prompt per format, ``auto``'s reading of calls a server left in the
content, and ``null_content`` on the wire, against the loopback server through the official client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from loopback import MESSAGES, TOOLS, endpoint, login

from fakes.openai_server import ScriptedServer, text_message, tool_message
from fakes.text_calls import content_server, write
from prefix_exec.errors import InputError
from prefix_exec.llm import BackendError, ChatBackend, EndpointConfig
from prefix_exec.llm import tool_support as support_module
from prefix_exec.llm.textcalls import AUTO_ORDER


@pytest.mark.parametrize("fmt", AUTO_ORDER)
def test_text_mode_asks_for_the_chosen_format_and_reads_it(fmt: str) -> None:
    with ScriptedServer(lambda _: text_message(write(fmt, [("login", {"username": "sam"})]))) as server:
        done = ChatBackend(endpoint(server, tool_mode="text", text_format=fmt)).complete(MESSAGES, TOOLS)
        system = server.requests[0]["messages"][0]["content"]
    assert [(c.name, dict(c.arguments)) for c in done.calls] == [("login", {"username": "sam"})]
    assert (done.text_format, done.in_content) == (fmt, False)
    assert system.startswith("be brief\n\nYou can call these tools")
    assert ("<tool_call>" in system) is (fmt == "hermes")
    assert ("[TOOL_CALLS]" in system) is (fmt == "mistral")


def test_a_grid_names_an_unknown_format_or_quirk_with_the_choices() -> None:
    with pytest.raises(InputError) as info:
        EndpointConfig.from_mapping({"model": "m", "text_format": "xml"}, where="models[0]")
    assert info.value.field == "models[0].text_format"
    assert "auto, hermes, mistral, json, llama, fenced, pythonic" in info.value.message
    with pytest.raises(InputError) as info:
        EndpointConfig.from_mapping({"model": "m", "null_content": ""}, where="models[1]")
    assert info.value.field == "models[1].null_content"
    assert "keep, empty" in info.value.message
    cfg = EndpointConfig.from_mapping({"model": "m", "text_format": "pythonic", "null_content": "empty"})
    assert (cfg.decoding()["text_format"], cfg.decoding()["null_content"]) == ("pythonic", "empty")


# ------------------------------------------------------------------------------------------- native fallback


def bare_json_login(body: dict[str, Any]) -> dict[str, Any]:
    """What Qwen2.5-Coder-0.5B behind ``llama-server --jinja`` answers to a ``tools`` request (issue 27)."""
    return text_message('{"name": "login", "arguments": {"username": "sam"}}')


def test_auto_reads_calls_a_server_left_in_the_content() -> None:
    with ScriptedServer(bare_json_login) as server:
        backend = ChatBackend(endpoint(server, tool_mode="auto"))
        done = backend.complete(MESSAGES, TOOLS)
        first = server.requests[0]
    assert "tools" in first
    assert [(c.name, dict(c.arguments)) for c in done.calls] == [("login", {"username": "sam"})]
    assert (done.text_format, done.in_content) == ("json", True)
    assert done.content == '{"name": "login", "arguments": {"username": "sam"}}'  # what the model wrote
    # The conversation goes on natively, as if the server's tool parser had read the call.
    (wired,) = done.message["tool_calls"]
    assert done.message["content"] is None
    assert wired["function"] == {"name": "login", "arguments": '{"username": "sam"}'}
    assert wired["id"] == done.calls[0].call_id
    assert len(wired["id"]) == 9 and wired["id"].isalnum()
    reply = backend.tool_result_message(done.calls[0], "ok")
    assert reply == {"role": "tool", "tool_call_id": wired["id"], "content": "ok"}
    assert not backend.text_mode
    assert backend.tools_rejected is None


@pytest.mark.parametrize(
    ("mode", "answer", "expected"),
    [
        ("native", text_message('{"name": "login", "arguments": {"username": "sam"}}'), []),  # native is strict
        ("auto", text_message("I cannot log in without a password."), []),
        ("auto", text_message('{"user": "sam", "arguments": 2}'), []),  # JSON data, no call shape
        ("auto", tool_message([("login", {"username": "sam"})], content='{"name": "x", "arguments": {}}'), ["login"]),
    ],
)
def test_auto_reads_the_content_only_when_it_is_a_call_and_no_native_call_came(
    mode: str, answer: dict[str, Any], expected: list[str]
) -> None:
    with ScriptedServer(lambda _: answer) as server:
        done = ChatBackend(endpoint(server, tool_mode=mode)).complete(MESSAGES, TOOLS)
    assert [c.name for c in done.calls] == expected
    assert not done.in_content
    assert done.text_format is None


def test_auto_reads_no_call_from_an_answer_to_a_request_without_tools() -> None:
    """A planner's or verifier's answer (no tools offered) is text, whatever it looks like."""
    with ScriptedServer(bare_json_login) as server:
        done = ChatBackend(endpoint(server, tool_mode="auto")).complete(MESSAGES, (), role="planner")
    assert (done.calls, done.in_content) == ((), False)
    assert done.content == '{"name": "login", "arguments": {"username": "sam"}}'


def test_a_malformed_call_in_the_content_is_a_parse_error_quoted() -> None:
    with ScriptedServer(lambda _: text_message('{"name": "login", "arguments": {"username": ')) as server:
        done = ChatBackend(endpoint(server, tool_mode="auto")).complete(MESSAGES, TOOLS)
    (call,) = done.calls
    assert (call.name, call.raw) == ("login", '{"name": "login", "arguments": {"username":')
    assert call.parse_error and "not valid JSON" in call.parse_error
    assert done.in_content


def test_a_nameless_call_read_from_the_content_goes_back_under_a_valid_placeholder_name() -> None:
    """OpenAI-style servers check the conversation they are sent: an empty function name is refused (a 400),
    so the call goes back as ``UNPARSED_CALL``; the recorded call keeps its empty name and its parse error."""
    from prefix_exec.llm.decode import UNPARSED_CALL

    with ScriptedServer(lambda _: text_message('<tool_call>{"nme": "login", "args": </tool_call>')) as server:
        backend = ChatBackend(endpoint(server, tool_mode="auto"))
        done = backend.complete(MESSAGES, TOOLS)
    (call,) = done.calls
    assert (call.name, bool(call.parse_error)) == ("", True)
    (wired,) = done.message["tool_calls"]
    assert wired["function"] == {"name": UNPARSED_CALL, "arguments": "{}"}
    assert wired["id"] == call.call_id
    assert UNPARSED_CALL.replace("_", "").isalnum() and len(UNPARSED_CALL) <= 64  # OpenAI's name pattern


def test_the_content_fallback_sends_the_same_request_whatever_ran_before_in_any_process() -> None:
    """Two units of one model, one after another answer read from the content, in this process and in a
    fresh one (the process-wide registry cleared): the same request, tools sent natively each time."""
    with ScriptedServer(bare_json_login) as server:
        cfg = endpoint(server, tool_mode="auto")
        ChatBackend(cfg).scoped("react").complete(MESSAGES, TOOLS)
        ChatBackend(cfg).scoped("guarded-react").complete(MESSAGES, TOOLS)
        saved = dict(support_module._TOOL_SUPPORT)
        support_module._TOOL_SUPPORT.clear()  # what a new worker process starts from
        try:
            ChatBackend(cfg).scoped("dual-loop").complete(MESSAGES, TOOLS)
        finally:
            support_module._TOOL_SUPPORT.update(saved)
        bodies = [json.dumps(body, sort_keys=True) for body in server.requests]
    assert len(set(bodies)) == 1
    assert "tools" in server.requests[0]


# ------------------------------------------------------------------------------------------- null content


def picky(body: dict[str, Any]) -> dict[str, Any]:
    """llama-cpp-python's server: a 500 for an assistant message whose content is null."""
    if any(m["role"] == "assistant" and m.get("content") is None for m in body["messages"]):
        raise TypeError("can only concatenate str (not 'NoneType') to str")
    if any(m["role"] == "tool" for m in body["messages"]):
        return text_message("Logged in.")
    return login(body)


@pytest.mark.parametrize("null_content", ["keep", "empty"])
def test_null_content_empty_sends_an_empty_string_with_tool_calls(null_content: str) -> None:
    with ScriptedServer(picky) as server:
        backend = ChatBackend(endpoint(server, null_content=null_content, max_retries=0))
        first = backend.complete(MESSAGES, TOOLS)
        assert first.message["content"] is None  # the transcript keeps what the server sent
        conversation = [*MESSAGES, first.message, backend.tool_result_message(first.calls[0], "ok")]
        if null_content == "keep":
            with pytest.raises(BackendError, match="500"):
                backend.complete(conversation, TOOLS)
            assert server.requests[1]["messages"][2]["content"] is None
            return
        done = backend.complete(conversation, TOOLS)
        sent = server.requests[1]["messages"][2]
    assert done.content == "Logged in."
    assert sent["content"] == ""
    assert sent["tool_calls"][0]["function"]["name"] == "login"
    assert conversation[2]["content"] is None  # the caller's messages are not changed


def test_null_content_empty_also_covers_calls_read_from_the_content() -> None:
    script = content_server(lambda body: picky(body), "json")
    with ScriptedServer(script) as server:
        backend = ChatBackend(endpoint(server, tool_mode="auto", null_content="empty", max_retries=0))
        first = backend.complete(MESSAGES, TOOLS)
        conversation = [*MESSAGES, first.message, backend.tool_result_message(first.calls[0], "ok")]
        done = backend.complete(conversation, TOOLS)
        assert server.requests[1]["messages"][2]["content"] == ""
    assert first.in_content
    assert done.content == "Logged in."


# ------------------------------------------------------------------------------------------- a 500 refusing tools

JINJA_500 = "500:tools param requires --jinja flag"  # llama-server --no-jinja (llama-cpp-python 0.3.36's build)


def test_auto_switches_to_text_on_a_500_that_rejects_tools_without_retrying_it() -> None:
    with ScriptedServer(bare_json_login) as server:
        server.faults.append(JINJA_500)
        backend = ChatBackend(endpoint(server, tool_mode="auto"))
        done = backend.complete(MESSAGES, TOOLS)
        statuses, second = list(server.statuses), server.requests[1]
    assert statuses == [500, 200]
    assert done.retries == ()
    assert backend.text_mode
    assert backend.tools_rejected == "tools param requires --jinja flag"
    assert "tools" not in second
    assert [(c.name, c.parse_error) for c in done.calls] == [("login", None)]
    assert done.text_format == "json"


def test_native_mode_fails_at_once_on_a_500_that_rejects_tools_and_says_what_fits() -> None:
    with ScriptedServer(login) as server:
        server.faults.append(JINJA_500)
        with pytest.raises(BackendError, match=r'takes no tools.*tool_mode = "auto" or "text"') as info:
            ChatBackend(endpoint(server)).complete(MESSAGES, TOOLS)
        assert server.statuses == [500]
    assert info.value.retries == ()


def test_a_plain_500_is_still_retried_in_auto_mode() -> None:
    with ScriptedServer(login) as server:
        server.faults.append("500")
        backend = ChatBackend(endpoint(server, tool_mode="auto"))
        done = backend.complete(MESSAGES, TOOLS)
    assert [e.kind for e in done.retries] == ["server"]
    assert not backend.text_mode
