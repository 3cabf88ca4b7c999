"""Tool specs from the ecosystem: an OpenAI tools array and an MCP tools/list result, with a hooks side file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from prefix_exec.cli import main
from prefix_exec.envs.custom.environment import environment_from_tools, load_spec
from prefix_exec.envs.custom.session import CustomEnvironment
from prefix_exec.envs.custom.spec_formats import detect_form, read_document
from prefix_exec.errors import InputError
from prefix_exec.records.codec import read_rollouts, record_to_json
from prefix_exec.replay import replay
from prefix_exec.trajectory import ToolCall

DRAFT_07 = "http://json-schema.org/draft-07/schema#"


def records(env: CustomEnvironment, ticketing: Path) -> list[dict[str, Any]]:
    return [record_to_json(replay(r, env)) for r in read_rollouts(ticketing / "rollouts.jsonl")]


def native_tools(ticketing: Path) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = yaml.safe_load((ticketing / "tools.yaml").read_text())["tools"]
    return tools


def openai_array(ticketing: Path) -> list[dict[str, Any]]:
    """tools.yaml's tools as OpenAI Chat Completions function tools (what an agent offered the model)."""
    return [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": t["parameters"]},
        }
        for t in native_tools(ticketing)
    ]


def test_the_mcp_fixture_declares_the_ticketing_schemas(ticketing: Path) -> None:
    """The hand-written tools/list response holds the same tools and argument schemas as tools.yaml, each
    under the draft-07 dialect the MCP TypeScript SDK writes."""
    response = json.loads((ticketing / "mcp-tools-list.json").read_text())
    assert detect_form(response) == "mcp"
    listed = response["result"]["tools"]
    assert [t["name"] for t in listed] == [t["name"] for t in native_tools(ticketing)]
    for mcp, native in zip(listed, native_tools(ticketing), strict=True):
        schema = dict(mcp["inputSchema"])
        assert schema.pop("$schema") == DRAFT_07
        assert schema == native["parameters"]
        assert mcp["description"] == native["description"]


def test_mcp_list_with_the_side_file_scores_as_the_native_spec(ticketing: Path) -> None:
    native = load_spec(ticketing / "tools.yaml")
    layered = load_spec(ticketing / "mcp-tools-list.json", hooks=ticketing / "mcp-hooks.yaml")
    assert (native.form, layered.form) == ("spec", "mcp")
    assert not layered.schema_only
    got, want = records(layered, ticketing), records(native, ticketing)
    assert len(want) == 12
    assert got == want


def test_mcp_list_alone_checks_schemas_only(ticketing: Path) -> None:
    env = load_spec(ticketing / "mcp-tools-list.json")
    assert env.schema_only
    assert env.name == "mcp-tools-list"
    got = {(r["task_id"], r["method"]): r for r in records(env, ticketing)}
    # Without refs and hooks only the schema failure of the plan-conditioned rollouts is left (the
    # priority 'medium' of new-laptop); the rest of them replay in full. The no-tool rollout is executable: a
    # tools list alone does not say that a task needs a tool, and its verdict says so.
    failing = {key: (r["fed"], r["label"]) for key, r in got.items() if not r["executable"]}
    assert failing == {("new-laptop", "plan-conditioned"): (2, "schema")}
    assert "'medium' is not one of" in got[("new-laptop", "plan-conditioned")]["reason"]
    no_tool = got[("what-can-you-do", "react")]
    assert (no_tool["no_tool"], no_tool["T"], no_tool["fed"]) == (True, 1, 2)
    assert no_tool["verdicts"][0]["notes"] == [
        "source: our check",
        "no-tool rule: the spec is only a tools list (an MCP tools/list result), which does not say that a task "
        "needs a tool",
    ]


@pytest.mark.parametrize("shape", ["chat", "responses", "legacy", "request-body", "anthropic", "anthropic-body"])
def test_openai_tools_with_the_side_file_score_as_the_native_spec(ticketing: Path, tmp_path: Path, shape: str) -> None:
    array = openai_array(ticketing)
    document: Any = {
        "chat": array,
        "responses": [{"type": "function", **t["function"]} for t in array],
        "legacy": [t["function"] for t in array],
        "request-body": {"model": "gpt-4.1", "messages": [], "tools": array},
        "anthropic": [  # Anthropic's tools: input_schema, and "custom" for a user-defined tool
            {"name": f["name"], "description": f["description"], "input_schema": f["parameters"], "type": "custom"}
            for f in (t["function"] for t in array)
        ],
        "anthropic-body": {
            "model": "claude",
            "tools": [{"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in array],
        },
    }[shape]
    spec = tmp_path / "tools.json"
    spec.write_text(json.dumps(document))
    side = tmp_path / "hooks.yaml"
    side.write_text(
        (ticketing / "mcp-hooks.yaml").read_text().replace("hooks: hooks.py", f"hooks: {ticketing / 'hooks.py'}")
    )
    env = load_spec(spec, hooks=side)
    assert env.form == "openai"
    assert records(env, ticketing) == records(load_spec(ticketing / "tools.yaml"), ticketing)


def test_a_side_file_on_the_native_spec_adds_what_it_lacks(ticketing: Path, tmp_path: Path) -> None:
    """Layering works on our own spec too: a spec without refs gets them from the side file."""
    data = yaml.safe_load((ticketing / "tools.yaml").read_text())
    data["hooks"] = str(ticketing / "hooks.py")
    refs = {t["name"]: t.pop("refs") for t in data["tools"] if "refs" in t}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data))
    side = tmp_path / "side.yaml"
    side.write_text(yaml.safe_dump({"tools": {name: {"refs": r} for name, r in refs.items()}}))
    assert records(load_spec(spec, hooks=side), ticketing) == records(load_spec(ticketing / "tools.yaml"), ticketing)
    assert load_spec(spec).tools["get_ticket"].refs == {}


def test_each_schema_is_read_in_its_own_dialect(tmp_path: Path) -> None:
    """Draft-07's array form of ``items`` (a tuple) is honoured; under draft 2020-12 it is no valid schema."""
    tuple_schema = {"type": "array", "items": [{"type": "integer"}], "additionalItems": False}
    parameters = {"$schema": DRAFT_07, "type": "object", "properties": {"p": tuple_schema}}
    spec = tmp_path / "tools.json"
    spec.write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": parameters}}]))
    session = load_spec(spec).start("any")
    assert session.step(ToolCall("f", {"p": [1]})).accepted
    rejected = session.step(ToolCall("f", {"p": [1, 2]}))
    assert not rejected.accepted
    assert "Additional items" in rejected.reason
    del parameters["$schema"]
    spec.write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": parameters}}]))
    with pytest.raises(InputError, match="not a valid JSON Schema") as info:
        load_spec(spec)
    assert info.value.field == "[0].function.parameters"


def test_local_refs_are_followed(tmp_path: Path) -> None:
    """A pydantic-style schema: properties that point into ``$defs``."""
    parameters = {
        "type": "object",
        "properties": {"where": {"$ref": "#/$defs/Place"}},
        "required": ["where"],
        "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    }
    spec = tmp_path / "list.json"
    spec.write_text(json.dumps({"tools": [{"name": "go", "inputSchema": parameters}]}))
    session = load_spec(spec).start("any")
    assert session.step(ToolCall("go", {"where": {"city": "Oslo"}})).accepted
    assert not session.step(ToolCall("go", {"where": {"town": "Oslo"}})).accepted


def test_a_transcripts_own_tools_list_is_an_environment() -> None:
    openai = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    env = environment_from_tools(openai, name="d", path="t.jsonl")
    assert (env.name, env.form, env.schema_only) == ("d", "openai", True)
    mcp = [{"name": "f", "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}}}]
    env = environment_from_tools(mcp, name="d", path="t.jsonl")
    assert env.form == "mcp"
    assert not env.start("any").step(ToolCall("f", {"x": "one"})).accepted
    with pytest.raises(InputError) as info:
        environment_from_tools([{"type": "function", "function": {}}], name="d", path="t.jsonl", line=7)
    assert (info.value.path, info.value.line, info.value.field) == ("t.jsonl", 7, "tools[0].function")
    with pytest.raises(InputError) as info:
        environment_from_tools([*mcp, {"name": "g"}], name="d", path="t.json", prefix="[3].")
    assert (info.value.line, info.value.field) == (None, "[3].tools[1]")


FN = {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}
MCP_TOOL = {"name": "a", "inputSchema": {"type": "object"}}


@pytest.mark.parametrize(
    ("document", "fragment", "field"),
    [
        ([FN, {"type": "web_search_preview"}], "only function tools", "[1].type"),
        ([{"type": "function", "function": {"parameters": {}}}], "'name' is a required property", "[0].function"),
        ([{"type": "function", "function": {"name": 3}}], "expected string, got number", "[0].function.name"),
        ([FN, "f"], "expected a tool object", "[1]"),
        ([FN, FN], "declared twice", "[1].function.name"),
        (
            [{"type": "function", "function": {"name": "a", "parameters": {"type": "array"}}}],
            "schema's type is 'array'",
            "[0].function.parameters.type",
        ),
        (
            [{"name": "a", "parameters": {"type": "object", "properties": {"x": {"$ref": "https://e.org/s.json"}}}}],
            "does not resolve inside the schema",
            "[0].parameters",
        ),
        (
            [{"name": "a", "parameters": {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}}],
            "does not resolve inside the schema",
            "[0].parameters",
        ),
        (  # '²' is a digit to str.isdigit but no int: not an index into the list (was a ValueError)
            [
                {
                    "name": "a",
                    "parameters": {
                        "type": "object",
                        "properties": {"x": {"$ref": "#/properties/y/enum/²"}, "y": {"enum": ["p", "q", "r"]}},
                    },
                }
            ],
            "does not resolve inside the schema",
            "[0].parameters",
        ),
        ({"model": "m", "tools": [FN, {"type": "code_interpreter"}]}, "only function tools", "tools[1].type"),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}},
            "-32601: Method not found",
            "error",
        ),
        ({"jsonrpc": "2.0", "id": 1, "result": []}, "without a 'result' object", "result"),
        (
            {"jsonrpc": "2.0", "id": 1, "result": {"tools": [MCP_TOOL], "nextCursor": "page-2"}},
            "paginated",
            "result.nextCursor",
        ),
        ({"tools": [MCP_TOOL, {"name": "b"}]}, "'inputSchema' is a required property", "tools[1]"),
        (
            {"tools": [{"name": "a", "inputSchema": {"properties": {}}}]},
            "'type' is a required property",
            "tools[0].inputSchema",
        ),
        ({"tools": [MCP_TOOL, MCP_TOOL]}, "declared twice", "tools[1].name"),
        ({"tools": [{"name": "a", "colour": "red"}]}, "Additional properties", "tools[0]"),
    ],
)
def test_bad_tool_lists_name_the_file_and_the_json_path(
    tmp_path: Path, document: Any, fragment: str, field: str | None
) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=fragment) as info:
        load_spec(path)
    assert info.value.path == str(path)
    assert info.value.field == field
    assert info.value.hint  # every message says what to do


@pytest.mark.parametrize(
    ("side", "fragment", "field"),
    [
        (
            {"tools": {"login": {"effect": "no_such_function"}}},
            "hook 'no_such_function' not found",
            "tools.login.effect",
        ),
        ({"tools": {"login": {"colour": "red"}}}, "Additional properties", "tools.login"),
        ({"tools": {"login": {"refs": {"username": 3}}}}, "expected string, got number", "tools.login.refs.username"),
        ({"hooks": "missing.py"}, "cannot load hooks", "hooks"),
        ({"tools": ["login"]}, "expected object, got array", "tools"),
    ],
)
def test_bad_side_files_name_the_side_file(
    ticketing: Path, tmp_path: Path, side: dict[str, Any], fragment: str, field: str
) -> None:
    path = tmp_path / "side.yaml"
    path.write_text(yaml.safe_dump({"hooks": str(ticketing / "hooks.py"), **side}))
    with pytest.raises(InputError, match=fragment) as info:
        load_spec(ticketing / "mcp-tools-list.json", hooks=path)
    assert info.value.path == str(path)
    assert info.value.field == field


def test_a_side_file_naming_a_tool_a_spec_lacks_is_refused_but_waits_on_an_mcp_listing(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An MCP tools/list result is what a server listed to one client at one moment: a side file's entry for a tool
    it lacks waits (left out, named in ``unlisted``; a call to the tool is an unknown tool). Our spec and an OpenAI
    tools array declare their tools once and for all: there such an entry is an error, naming it."""
    side = tmp_path / "side.yaml"
    side.write_text(yaml.safe_dump({"tools": {"reopen_ticket": {"exposed_from_turn": 1}}}))
    env = load_spec(ticketing / "mcp-tools-list.json", hooks=side)
    assert env.unlisted == ("reopen_ticket",) and "reopen_ticket" not in env.tools
    verdict = env.start("").step(ToolCall("reopen_ticket", {}))
    assert verdict.label is not None and verdict.label.value == "schema" and "unknown tool" in verdict.reason
    array = tmp_path / "openai.json"
    array.write_text(json.dumps(openai_array(ticketing)))
    for spec in (ticketing / "tools.yaml", array):
        with pytest.raises(InputError, match="no tool named 'reopen_ticket'") as info:
            load_spec(spec, hooks=side)
        assert info.value.path == str(side) and info.value.field == "tools.reopen_ticket"
    args = ["score", "custom", "--tools", str(ticketing / "mcp-tools-list.json"), "--hooks", str(side)]
    assert main([*args, str(ticketing / "rollouts.jsonl"), "--out", str(tmp_path / "out.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "names tools" in err and "does not list: 'reopen_ticket'" in err


@pytest.mark.parametrize(
    ("side", "field"),
    [({"initial_state": {}}, "initial_state"), ({"tools": {"login": {"effect": "login"}}}, "tools.login.effect")],
)
def test_a_key_set_in_both_files_is_refused(ticketing: Path, tmp_path: Path, side: dict[str, Any], field: str) -> None:
    path = tmp_path / "side.yaml"
    path.write_text(yaml.safe_dump(side))
    with pytest.raises(InputError, match="set both here and in the tool spec") as info:
        load_spec(ticketing / "tools.yaml", hooks=path)
    assert info.value.field == field


def test_unreadable_files_are_input_errors(ticketing: Path, tmp_path: Path) -> None:
    broken = tmp_path / "tools.json"
    broken.write_text('[{"type": "function",\n "function": }]')
    with pytest.raises(InputError, match="cannot parse the tool spec") as info:
        load_spec(broken)
    assert info.value.line == 2
    with pytest.raises(InputError, match="no such hooks file"):
        load_spec(ticketing / "mcp-tools-list.json", hooks=tmp_path / "absent.yaml")
    broken = tmp_path / "tools.yaml"
    broken.write_text("name: t\ntools:\n  - name: a\n   description: b\n")
    with pytest.raises(InputError, match="cannot parse the tool spec") as info:
        load_spec(broken)
    assert info.value.line == 4


@pytest.mark.parametrize("name", ["tools.json", "tools.yaml", "side.yaml"])
def test_a_spec_or_side_file_that_is_not_utf8_names_itself_and_the_line(
    ticketing: Path, tmp_path: Path, name: str
) -> None:
    # a byte that is not UTF-8 inside a multi-line JSON or YAML document: the UnicodeDecodeError reached the
    # CLI, which said "an input file is not UTF-8 text" without naming the file
    bad = tmp_path / name
    bad.write_bytes(b'{"tools": [\n  {"name": "a",\n   "description": "\xff\xfe"}]}\n')
    with pytest.raises(InputError, match="not UTF-8 text") as info:
        load_spec(ticketing / "mcp-tools-list.json", hooks=bad) if name == "side.yaml" else load_spec(bad)
    assert (info.value.path, info.value.line) == (str(bad), 3)


@pytest.mark.parametrize("name", ["tools.yaml", "mcp-hooks.yaml"])
def test_yaml_is_read_as_safe_load_reads_it(ticketing: Path, name: str) -> None:
    # read_document parses with libyaml where PyYAML has it: the document must be safe_load's, type for type.
    text = (ticketing / name).read_text()
    assert repr(read_document(ticketing / name, what="spec")) == repr(yaml.safe_load(text))
