"""envs.custom.json_schema: untrusted JSON Schemas resolve nothing outside the document (a loopback listener and a
canary file prove it, for every reference keyword), and every schema that cannot be compiled or applied within
bounds is that one rollout's (or that spec's) input error: no traceback, no hang, the good records around it kept.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

import prefix_exec
from prefix_exec.cli import main
from prefix_exec.envs.custom.json_schema import compile_schema, schema_problem
from prefix_exec.envs.custom.schema_keywords import SchemaProblem

ROOT = Path(__file__).resolve().parents[2]
TICKETING = ROOT / "examples" / "ticketing"
DRAFT_2019 = "https://json-schema.org/draft/2019-09/schema"
GOOD_TOOL = {"type": "object", "properties": {"username": {"type": "string"}}}


class Listener:
    """A loopback TCP listener on a free port that records every connection (and answers none)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.connections = 0
        self.stop = threading.Event()
        self.closed = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:  # the timeout, or the socket closed
                continue
            self.connections += 1
            conn.close()

    def close(self) -> int:
        """Stop, count the connections still queued, and return the total."""
        if self.closed:
            return self.connections
        self.closed = True
        self.stop.set()
        self.thread.join()
        self.sock.setblocking(False)
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                break
            self.connections += 1
            conn.close()
        self.sock.close()
        return self.connections


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def canary(tmp_path: Path) -> tuple[Path, str]:
    """A schema file whose pattern is a secret: it must never show up anywhere."""
    secret = f"CANARY-{uuid.uuid4().hex}"
    path = tmp_path / "canary.json"
    path.write_text(json.dumps({"type": "string", "pattern": secret, "$anchor": "here"}))
    return path, secret


def conversation(task: str, parameters: Any, arguments: Any = None) -> str:
    args = json.dumps(arguments if arguments is not None else {"username": "sam"})
    call = {"id": "c1", "type": "function", "function": {"name": "login", "arguments": args}}
    return json.dumps(
        {
            "task_id": task,
            "model": "m",
            "success": 1,
            "messages": [
                {"role": "user", "content": "log in"},
                {"role": "assistant", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            ],
            "tools": [{"type": "function", "function": {"name": "login", "parameters": parameters}}],
        }
    )


def good_bad_good(tmp_path: Path, parameters: Any, arguments: Any = None) -> Path:
    path = tmp_path / "in.jsonl"
    lines = [conversation("g0", GOOD_TOOL), conversation("bad", parameters, arguments), conversation("g1", GOOD_TOOL)]
    path.write_text("\n".join(lines) + "\n")
    return path


def score(path: Path, out: Path, *flags: str) -> int:
    code: int = main(["score", "transcripts", str(path), "--out", str(out), "--rollout-budget", "30", *flags])
    return code


def tasks(out: Path) -> list[str]:
    return [json.loads(line)["task_id"] for line in out.read_text().splitlines()] if out.exists() else []


def fetching_schemas(url: str, canary: Path) -> dict[str, tuple[str, Any]]:
    """Schemas whose validation would read ``url`` or the canary file, each with the URI its message names."""
    file_url = canary.as_uri()
    return {
        "$ref http": (f"{url}/ref.json", {"type": "object", "properties": {"username": {"$ref": f"{url}/ref.json"}}}),
        "$dynamicRef http": (
            f"{url}/dyn.json",
            {"type": "object", "properties": {"username": {"$dynamicRef": f"{url}/dyn.json"}}},
        ),
        "$dynamicRef file": (file_url, {"type": "object", "properties": {"username": {"$dynamicRef": file_url}}}),
        "$dynamicRef file anchor": (
            f"{file_url}#here",
            {"type": "object", "properties": {"username": {"$dynamicRef": f"{file_url}#here"}}},
        ),
        "$ref under a remote $id": (
            "#/$defs/name",
            {
                "$id": f"{url}/a/",
                "$defs": {"name": {"type": "string"}},
                "type": "object",
                "properties": {"username": {"$id": "b/", "$ref": "#/$defs/name"}},
            },
        ),
        "$recursiveRef under a remote $id": (
            f"{url}/meta",
            {
                "$schema": DRAFT_2019,
                "type": "object",
                "properties": {"username": {"$ref": f"{url}/meta", "$recursiveRef": "#"}},
            },
        ),
        "remote $schema": (f"{url}/meta", {"$schema": f"{url}/meta", "type": "object"}),
    }


FETCH_CASES = ["$ref http", "$dynamicRef http", "$dynamicRef file", "$dynamicRef file anchor"]
FETCH_CASES += ["$ref under a remote $id", "$recursiveRef under a remote $id", "remote $schema"]


@pytest.mark.parametrize("case", FETCH_CASES)
def test_a_schema_never_makes_us_fetch_or_read_and_is_that_records_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], listener: Listener, canary: tuple[Path, str], case: str
) -> None:
    uri, schema = fetching_schemas(listener.url, canary[0])[case]
    out = tmp_path / "out.jsonl"
    assert score(good_bad_good(tmp_path, schema), out, "--keep-going") == 2  # 2: a rollout was skipped
    captured = capsys.readouterr()
    assert listener.close() == 0
    everything = captured.out + captured.err + out.read_text() + "".join(p.read_text() for p in tmp_path.glob("out*"))
    assert canary[1] not in everything
    assert tasks(out) == ["g0", "g1"]
    assert "skipped" in captured.err and uri in captured.err and "Traceback" not in captured.err


@pytest.mark.parametrize("case", FETCH_CASES)
def test_compiling_names_the_keyword_and_the_uri(listener: Listener, canary: tuple[Path, str], case: str) -> None:
    uri, schema = fetching_schemas(listener.url, canary[0])[case]
    with pytest.raises(SchemaProblem) as info:
        compile_schema(schema)
    assert uri in str(info.value) and canary[1] not in str(info.value)
    assert any(k in str(info.value) for k in ("$ref", "$dynamicRef", "$schema"))
    assert listener.close() == 0


def deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"username": schema}}
    return schema


#: Schemas that raised RecursionError or a jsonschema exception through the CLI (exit 1, a traceback).
BROKEN = {
    "$ref to the root": {"$ref": "#", "type": "object"},
    "$ref to itself": {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    "300 deep": deep(300),
    "nested groups": {"type": "object", "properties": {"username": {"pattern": "(" * 600 + "a" + ")" * 600}}},
    "$dynamicRef to a missing anchor": {"type": "object", "properties": {"username": {"$dynamicRef": "#nowhere"}}},
    "pointer into a list by name": {"type": "object", "properties": {"username": {"$ref": "#/required/x"}}},
}


@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_schema_is_one_records_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    path, out = good_bad_good(tmp_path, BROKEN[case]), tmp_path / "out.jsonl"
    assert score(path, out, "--keep-going") == 2  # 2: a rollout was skipped
    err = capsys.readouterr().err
    assert tasks(out) == ["g0", "g1"] and "skipped" in err and "Traceback" not in err
    assert score(path, tmp_path / "strict.jsonl") == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_schema_that_recurses_with_its_arguments_bounds_their_depth() -> None:
    schema = compile_schema({"type": "object", "properties": {"a": {"$ref": "#"}}})
    value: dict[str, Any] = {}
    for _ in range(400):
        value = {"a": value}
    assert "deeper than" in schema.errors(value)[0].message
    assert schema.errors({"a": {"a": {}}}) == []


def run_cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process, with a bound far past what any of these cases takes (on the code before
    the bounds each ran for minutes)."""
    src = str(Path(prefix_exec.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    command = [sys.executable, "-m", "prefix_exec", *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path, check=False)


MIXED = [i if i % 2 else str(i) for i in range(40_000)]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "schema", "arguments"),
    [
        ("catastrophic pattern", {"properties": {"username": {"pattern": "^(a|aa)+$"}}}, {"username": "a" * 80 + "!"}),
        ("catastrophic patternProperties", {"patternProperties": {"^(a|aa)+$": {}}}, {"a" * 80 + "!": 1}),
        ("uniqueItems of 40k mixed", {"properties": {"xs": {"uniqueItems": True}}}, {"xs": [*MIXED, [1], {"a": 1}]}),
        ("draft-4 enum of 40k", {"$schema": "http://json-schema.org/draft-04/schema#", "enum": [*MIXED, [1]]}, {}),
    ],
)
def test_a_costly_schema_ends_within_the_rollout_budget(
    tmp_path: Path, case: str, schema: dict[str, Any], arguments: Any
) -> None:
    path = good_bad_good(tmp_path, {"type": "object", **schema}, arguments)
    done = run_cli(
        tmp_path, "score", "transcripts", str(path), "--out", "out.jsonl", "--keep-going", "--rollout-budget", "5"
    )
    assert done.returncode in (0, 2) and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert {"g0", "g1"} <= set(tasks(tmp_path / "out.jsonl"))


def spec(parameters: str, given: str = "") -> str:
    return f"tools:\n  - name: login\n    parameters: {parameters}\n" + given


LAUGHS = "x-anchors:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"  {c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.slow
def test_a_yaml_billion_laughs_in_parameters_is_refused_before_it_is_built(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(LAUGHS + spec("{type: object, default: *i}"))
    rollouts = str(TICKETING / "rollouts.jsonl")
    done = run_cli(tmp_path, "score", "custom", "--tools", "spec.yaml", rollouts, "--out", "o.jsonl", "--keep-going")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "aliases expand the document" in done.stderr


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (spec("{type: object}", "given:\n  day: [2024-01-01]\n"), "given.day[0]"),
        (spec("{type: object}", "given:\n  ids: !!set {a, b}\n"), "given.ids"),
        (spec("{type: object, properties: {at: {const: 2024-01-01T10:00:00}}}"), "tools[0].parameters.properties"),
        ("tools:\n  - &t\n    name: login\n    parameters: {type: object, default: [*t]}\n", "default[0]"),
        (spec("{type: object}", "given:\n  ticket: [{1: a, b: c}]\n"), "given.ticket[0]"),
        (spec("{type: object, properties: {1.5: {type: string}}}"), "tools[0].parameters.properties"),
        (spec("{type: object}", "given:\n  ticket: [.nan]\n"), "given.ticket[0]"),
        (spec("{type: object, properties: {a: {maximum: -.INF}}}"), "tools[0].parameters.properties.a.maximum"),
        (spec("{type: object}", "given:\n  ticket: [T-1]\n  ticket: [T-2]\n"), "given"),
    ],
)
def test_a_yaml_spec_holds_json_values_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, field: str
) -> None:
    (tmp_path / "spec.yaml").write_text(text)
    argv = ["score", "custom", "--tools", str(tmp_path / "spec.yaml"), str(TICKETING / "rollouts.jsonl")]
    assert main([*argv, "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert field in err and "Traceback" not in err


def test_yaml_aliases_within_bounds_still_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "tools:\n  - name: login\n    parameters: &p {type: object}\n  - name: logout\n    parameters: *p\n"
    (tmp_path / "spec.yaml").write_text(text)
    argv = ["score", "custom", "--tools", str(tmp_path / "spec.yaml"), str(TICKETING / "rollouts.jsonl")]
    main([*argv, "--out", str(tmp_path / "o.jsonl"), "--keep-going"])
    assert "cannot parse" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("(?:a{1000}){1000}", "expands past"),
        ("a" * 5000, "longer than"),
        ("(" * 40 + ")" * 40, "nests groups"),
        ("[", "not a valid regular expression"),
        (r"^\d{1,10}(?:-[a-z]{2,8}){0,3}$", None),
    ],
)
def test_patterns_are_bounded_before_they_are_compiled(pattern: str, problem: str | None) -> None:
    found = schema_problem({"patternProperties": {pattern: {}}})
    assert (found is None) if problem is None else (found is not None and problem in found)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, 1.0, 2.5]) | st.sampled_from(["", "a"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
    max_leaves=8,
)


@given(st.lists(JSON_VALUES, max_size=6))
def test_unique_items_and_enum_agree_with_jsonschema(values: list[Any]) -> None:
    """The linear keywords decide as jsonschema's own (pairwise) ones: 1 equals 1.0, never true."""
    ours = compile_schema({"uniqueItems": True}).errors(values) == []
    theirs = jsonschema.Draft202012Validator({"uniqueItems": True}).is_valid(values)
    assert ours == theirs
    if values:
        enum = {"enum": values[1:] or [None]}
        assert (compile_schema(enum).errors(values[0]) == []) == jsonschema.Draft202012Validator(enum).is_valid(
            values[0]
        )


def test_a_schema_is_compiled_once() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert compile_schema(schema) is compile_schema(json.loads(json.dumps(schema)))


@pytest.mark.parametrize("tool_call_id", [["c1"], {"id": "c1"}])
def test_a_tool_call_id_that_is_not_a_string_is_that_records_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tool_call_id: Any
) -> None:
    path = good_bad_good(tmp_path, GOOD_TOOL)
    lines = path.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["messages"][2]["tool_call_id"] = tool_call_id
    path.write_text("\n".join([lines[0], json.dumps(bad), lines[2]]) + "\n")
    assert score(path, tmp_path / "out.jsonl", "--keep-going") == 2  # 2: a rollout was skipped
    err = capsys.readouterr().err
    assert tasks(tmp_path / "out.jsonl") == ["g0", "g1"] and "tool_call_id" in err and "Traceback" not in err


def test_a_spec_that_cannot_be_compiled_within_the_rollout_budget_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each pattern is within its bounds (a tenth of a second to compile), but 400 of them take longer than the
    budget: the spec is refused with the reason."""
    tools = [
        {"type": "function", "function": {"name": f"t{i}", "parameters": {"pattern": f"x{i}(?:a{{1000}}){{99}}"}}}
        for i in range(400)
    ]
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    argv = ["score", "custom", "--tools", str(tmp_path / "tools.json"), str(TICKETING / "rollouts.jsonl")]
    assert main([*argv, "--out", str(tmp_path / "o.jsonl"), "--rollout-budget", "1"]) == 2
    err = capsys.readouterr().err
    assert "could not be loaded within --rollout-budget 1 s" in err and "Traceback" not in err


def test_a_hooks_module_with_a_syntax_error_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "hooks.py").write_text("def pre(state, args)\n    return None\n")
    spec_text = "hooks: hooks.py\ntools:\n  - name: login\n    parameters: {type: object}\n    precondition: pre\n"
    (tmp_path / "spec.yaml").write_text(spec_text)
    argv = ["score", "custom", "--tools", str(tmp_path / "spec.yaml"), str(TICKETING / "rollouts.jsonl")]
    assert main([*argv, "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "hooks.py:1" in err and "Traceback" not in err


#: multipleOf cases where jsonschema's float arithmetic raised OverflowError (or ValueError on NaN) through the
#: CLI: a traceback, and the records after the rollout lost.
MULTIPLE_OF = {
    "a huge integer over a float": (0.5, 10**400, True),
    "a float over a huge integer": (10**400, 1.5, False),
    "a huge multiple": (10**400, 3 * 10**400, True),
    "an integer over a tiny float": (2.0**-1074, 10**400, True),
    "NaN": (0.5, float("nan"), False),
    "Infinity": (0.5, float("inf"), False),
}


@pytest.mark.parametrize("case", MULTIPLE_OF)
def test_multiple_of_is_exact_where_floats_overflow(case: str) -> None:
    factor, value, multiple = MULTIPLE_OF[case]
    for schema in [
        {"multipleOf": factor},
        {"$schema": "http://json-schema.org/draft-03/schema#", "divisibleBy": factor},
    ]:
        errors = compile_schema(schema).errors(value)
        assert (errors == []) is multiple
        assert all("is not a multiple of" in e.message for e in errors)


def test_multiple_of_agrees_with_jsonschema_on_ordinary_numbers() -> None:
    for factor, value in [(0.1, 0.3), (0.5, 1.5), (3, 9), (3, 10), (2, 4.0), (0.01, 1.23), (7, -14)]:
        ours = compile_schema({"multipleOf": factor}).errors(value) == []
        assert ours is jsonschema.Draft202012Validator({"multipleOf": factor}).is_valid(value)


def test_an_overflowing_multiple_of_keeps_the_records_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = {"type": "object", "properties": {"n": {"multipleOf": 10**400}}}
    path, out = good_bad_good(tmp_path, schema, {"username": "sam", "n": 1.5}), tmp_path / "out.jsonl"
    score(path, out, "--keep-going")
    assert tasks(out) == ["g0", "bad", "g1"] and "Traceback" not in capsys.readouterr().err


DRAFT_3 = "http://json-schema.org/draft-03/schema#"
#: Draft-3 schemas on which the ``referencing`` library raised AttributeError (it reads an ``extends`` object as
#: a list of schemas): a traceback through the CLI, and the records after the rollout lost.
UNREADABLE = {
    "extends as an object": {"$schema": DRAFT_3, "extends": {"type": "object"}},
    "extends as an object with a $ref": {"$schema": DRAFT_3, "extends": {"$ref": "http://127.0.0.1:9/x"}},
    "extends inside a type union": {"$schema": DRAFT_3, "type": [{"extends": {"$ref": "http://127.0.0.1:9/x"}}]},
}


@pytest.mark.parametrize("case", UNREADABLE)
def test_a_schema_the_resolver_cannot_read_is_a_schema_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    with pytest.raises(SchemaProblem):
        compile_schema(UNREADABLE[case]).errors({"username": "sam"})
    path, out = good_bad_good(tmp_path, UNREADABLE[case]), tmp_path / "out.jsonl"
    assert score(path, out, "--keep-going") == 2  # 2: a rollout was skipped
    err = capsys.readouterr().err
    assert tasks(out) == ["g0", "g1"] and "skipped" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "dialect",
    [
        "https://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft-06/schema#",
        "https://json-schema.org/draft-04/schema#",
    ],
)
def test_the_https_twin_of_a_shipped_draft_is_that_draft(dialect: str) -> None:
    # Tool schemas in the wild declare draft 7 over https (json-schema.org serves both); they were refused
    # as a dialect that would need a fetch. Tuple-form items tells draft 7 from 2020-12 (where it is invalid).
    schema = compile_schema({"$schema": dialect, "type": "array", "items": [{"type": "string"}]})
    assert schema.errors(["a", 1]) == [] and len(schema.errors([1])) == 1


def test_a_dialect_on_another_host_is_still_refused() -> None:
    assert "not a JSON Schema dialect" in (schema_problem({"$schema": "https://example.org/draft-07/schema#"}) or "")
