"""The hostile-input sweep: hundreds of malformed or hostile inputs built here, across every importer,
``metrics``, ``report``, grids, inspect logs and tool lists, each run in-process through the CLI.

Every case must end within its time bound with exit 0 or 2, print no traceback, create no file outside its
output, change none of its inputs, stay under the memory bound and (for the scoring commands) still score the
good rows around the bad one; and no case may connect to the loopback listener, show the canary file's content
or import the canary hooks module, whose addresses are planted in the inputs (tests/hostile_cases.py, where
other modules register their cases).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import io
import json
import os
import re
import resource
import runpy
import select
import socket
import time
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import hostile_inspect  # noqa: F401  (registers the inspect cases)
import hostile_transcripts
from hostile_cases import (
    CANARY_FILE,
    CANARY_HOOKS,
    CANARY_HOST,
    CANARY_URL,
    OPTIONAL_MODULES,
    SOURCES,
    Case,
    register,
)
from hostile_files import FIFO, ZERO, write_case_file
from prefix_exec.cli import main
from prefix_exec.cluster import connect_ray
from prefix_exec.scoring.pool import dispatch as pool_dispatch

TICKETING = Path(__file__).resolve().parents[1] / "examples" / "ticketing"
#: Wall-clock bound of one case, seconds (cases take milliseconds; the bound is for a hang or a blow-up).
BOUND_S = 60.0
#: How far the whole sweep may raise the process's peak memory, MiB (inputs are kilobytes to megabytes; a
#: reader that copied a hostile value quadratically, or read /dev/zero, would pass it).
MEMORY_BOUND_MIB = 1024
#: The absolute bound of the sweep's process and of any child it starts (peak RSS), and the address space
#: it may add while it runs (RLIMIT_AS), MiB.
ABSOLUTE_MEMORY_MIB = 3 * 1024

#: Text that would take over a terminal if printed as it is; the sweep finds its ESC in no output.
TERMINAL_ESCAPE = "\x1b]0;pwned\x07\x1b[2J\rdone"
#: Hostile values, as raw JSON text (some cannot be written by json.dumps at all).
RAW_VALUES = {
    "null": "null",
    "true": "true",
    "negative": "-1",
    "float": "1e308",
    "huge-int": "9" * 5000,
    "big-int": str(10**18),
    "empty-list": "[]",
    "empty-object": "{}",
    "surrogate": '"\\ud800"',
    "deep-list": "[" * 5000 + "]" * 5000,
    "nested-900": "[" * 900 + "]" * 900,
    "nested-1400": "[" * 1400 + "]" * 1400,  # loads, but past what pickle carries to a worker
    "long-text": json.dumps("x" * 200_000),
    "html": json.dumps('<script>alert(1)</script>=HYPERLINK("http://x")'),
    # a terminal escape (retitle the window, clear the screen, rewrite the line): never printed raw
    "escape": json.dumps(TERMINAL_ESCAPE),
    "nan": "NaN",
    # the canaries: a URL to the loopback listener, the canary file, and the canary hooks module
    "canary-url": json.dumps(CANARY_URL),
    "canary-file": json.dumps(CANARY_FILE),
    "canary-ref": json.dumps({"$ref": CANARY_URL, "$dynamicRef": f"file://{CANARY_FILE}", "hooks": CANARY_HOOKS}),
    "canary-host": json.dumps(CANARY_HOST),
}
#: The values tried at every path; the full set is tried at the identity and count fields.
CORE = ("null", "huge-int", "surrogate", "deep-list", "nested-900", "empty-object", "long-text", "canary-ref")
FULL_AT = {("dataset",), ("model",), ("method",), ("trial",), ("success",), ("actions",), ("T",), ("fed",)}


def values_for(path: tuple[str | int, ...]) -> dict[str, str]:
    return RAW_VALUES if path in FULL_AT else {k: RAW_VALUES[k] for k in CORE}


def mutate(row: dict[str, Any], path: tuple[str | int, ...], raw: str) -> str:
    """``row`` as JSON text with the value at ``path`` replaced by the raw JSON text ``raw``."""
    marker = "\u0000MARK\u0000"
    copy = json.loads(json.dumps(row))
    node: Any = copy
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = marker
    return json.dumps(copy).replace(json.dumps(marker), raw)


def paths_of(value: Any, prefix: tuple[str | int, ...] = (), *, every: bool = False) -> Iterator[tuple[str | int, ...]]:
    """Every key path in a JSON value (objects and the first element of lists, or ``every`` element)."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from paths_of(child, (*prefix, key), every=every)
    elif isinstance(value, list) and value:
        for index in range(len(value) if every else 1):
            yield (*prefix, index)
            yield from paths_of(value[index], (*prefix, index), every=every)


GARBAGE_LINES = {
    "not-json": "this is not json",
    "truncated": '{"dataset": "ticketing", "task_id": ',
    "array": "[1, 2, 3]",
    "string": '"a row"',
    "number": "42",
    "deep": "[" * 100_000 + "]" * 100_000,
    "bom": "\ufeff{}",
    "nul": "\u0000",
}


@register("custom")
def custom_cases() -> Iterator[Case]:
    good = (TICKETING / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    first, second = json.loads(good[0]), json.loads(good[1])
    base = {**first, "task_id": "hostile", "success_absent": False}  # the flag of a rollout without Y, tried too
    keep = (first["task_id"], second["task_id"])
    lines: dict[str, str] = {f"garbage-{k}": v for k, v in GARBAGE_LINES.items()}
    for path in paths_of(base):
        if path == ("task_id",):
            continue
        for label, raw in values_for(path).items():
            lines[f"{'.'.join(map(str, path))}={label}"] = mutate(base, path, raw)
    for name, line in lines.items():
        text = "\n".join([good[0], line, good[1]]) + "\n"
        yield Case(
            f"custom:{name}",
            {"in.jsonl": text},
            lambda d: [
                "score",
                "custom",
                "--tools",
                str(TICKETING / "tools.yaml"),
                str(d / "in.jsonl"),
                "--out",
                str(d / "out.jsonl"),
                "--keep-going",
            ],
            "out.jsonl",
            keep,
        )


@register("openai")
def openai_cases() -> Iterator[Case]:
    """Transcripts scored on their own tools list, so the hostile value may sit in the list too."""
    login = {"type": "function", "function": {"name": "login", "arguments": '{"username": "sam"}'}}
    first = {
        "task_id": "g0",
        "model": "m",
        "success": 1,
        "metadata": {"note": "x"},
        "messages": [
            {"role": "user", "content": "log in"},
            {"role": "assistant", "tool_calls": [{"id": "c1", **login}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
        "tools": [{"type": "function", "function": {"name": "login", "parameters": {"type": "object"}}}],
    }
    second, base = {**first, "task_id": "g1"}, {**first, "task_id": "hostile"}
    lines: dict[str, str] = {f"garbage-{k}": v for k, v in GARBAGE_LINES.items()}
    for path in paths_of(base):
        if path != ("task_id",):
            for label, raw in values_for(path).items():
                lines[f"{'.'.join(map(str, path))}={label}"] = mutate(base, path, raw)
    for name, line in lines.items():
        yield Case(
            f"openai:{name}",
            {"in.jsonl": "\n".join([json.dumps(first), line, json.dumps(second)]) + "\n"},
            lambda d: ["score", "transcripts", str(d / "in.jsonl"), "--out", str(d / "out.jsonl"), "--keep-going"],
            "out.jsonl",
            ("g0", "g1"),
        )


#: Tool replies a log may record, as the JSON text of a tool message's content (evidence_cases).
REPLIES = {
    "error-5mb": json.dumps("Error: " + "x" * 5_000_000),
    "error-lone-surrogate": '"Error: \\ud800 tail"',
    "json-list-300k": json.dumps(json.dumps(list(range(300_000)))),
    "json-deep-text": json.dumps("[" * 100_000 + "]" * 100_000),
    "json-unclosed": json.dumps("[" * 100_000),
    "json-nan": json.dumps("NaN"),
    "json-huge-int": json.dumps("9" * 5000),
    "parts-list": json.dumps([{"type": "text", "text": "Error: " + "y" * 100_000}] * 20),
    "object": json.dumps({"ids": list(range(100_000)), "error": "Error"}),
}


@register("evidence")
def evidence_cases() -> Iterator[Case]:
    """Huge and odd recorded results, as a transcript's tool replies, scored with a side file whose produces reads
    them (every id of a list), and as a canonical rollout's observation with an error flag and type."""
    tools = [
        {"type": "function", "function": {"name": "list_ids", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "use", "parameters": {"type": "object", "properties": {"id": {}}}}},
    ]
    side = "tools:\n  list_ids: {produces: {thing: '[*]', other: 'ids[*]'}}\n  use: {refs: {id: thing}}\n"

    def conversation(task: str, reply: str) -> str:
        listed = {"type": "function", "function": {"name": "list_ids", "arguments": "{}"}}
        use = {"type": "function", "function": {"name": "use", "arguments": '{"id": 1}'}}
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "c1", **listed}]},
            {"role": "tool", "tool_call_id": "c1", "content": "\u0000REPLY\u0000"},
            {"role": "assistant", "tool_calls": [{"id": "c2", **use}]},
            {"role": "tool", "tool_call_id": "c2", "content": "done"},
        ]
        line = json.dumps({"task_id": task, "model": "m", "success": 1, "messages": messages})
        return line.replace(json.dumps("\u0000REPLY\u0000"), reply)

    good = json.dumps("[1, 2]")
    for name, reply in REPLIES.items():
        text = "\n".join([conversation("g0", good), conversation("hostile", reply), conversation("g1", good)]) + "\n"
        yield Case(
            f"evidence:{name}",
            {"in.jsonl": text, "tools.json": json.dumps(tools), "side.yaml": side},
            lambda d: [
                *("score", "transcripts", str(d / "in.jsonl"), "--tools", str(d / "tools.json")),
                *("--hooks", str(d / "side.yaml"), "--out", str(d / "out.jsonl"), "--keep-going"),
            ],
            "out.jsonl",
            ("g0", "g1"),
        )
    good_rollout = json.loads((TICKETING / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()[0])
    observed = {**good_rollout, "trial": 7}  # one of the spec's tasks, another unit
    observed["actions"] = [{**observed["actions"][0], "observation": {"content": "x", "error": True}}]
    for path in [("actions", 0, "observation", "content"), ("actions", 0, "observation", "error_type")]:
        for label in ("huge-int", "surrogate", "long-text", "deep-list", "empty-object", "html"):
            line = mutate(observed, path, RAW_VALUES[label])
            rows = [json.dumps(good_rollout), line, json.dumps({**good_rollout, "method": "other"})]
            yield Case(
                f"evidence:{'.'.join(map(str, path))}={label}",
                {"in.jsonl": "\n".join(rows) + "\n"},
                lambda d: [
                    *("score", "custom", "--tools", str(TICKETING / "tools.yaml"), str(d / "in.jsonl")),
                    *("--out", str(d / "out.jsonl"), "--keep-going"),
                ],
                "out.jsonl",
                (good_rollout["task_id"],),
            )


def _composite_identity_cases() -> Iterator[Case]:
    """A composite identity (``--task-id-field metadata.suite_name,metadata.name``) read from a record whose
    parts hold hostile values, between two good ones (their ids ``s/g0`` and ``s/g1``)."""
    record = hostile_transcripts.RECORDS["chat-positional"]
    good = [
        json.dumps({**record, "metadata": {"suite_name": "s", "name": t}, "model": "m", "success": 1})
        for t in ("g0", "g1")
    ]
    base = {**record, "model": "m", "success": 1}
    for part in ("suite_name", "name"):
        for label, raw in values_for(("metadata", part)).items():
            line = mutate(base, ("metadata", part), raw)
            yield Case(
                f"transcripts:composite-identity:metadata.{part}={label}",
                {
                    "in.jsonl": "\n".join([good[0], line, good[1]]) + "\n",
                    "tools.json": json.dumps(hostile_transcripts.TOOLS),
                },
                lambda d: [
                    *("score", "transcripts", str(d / "in.jsonl"), "--tools", str(d / "tools.json")),
                    *("--task-id-field", "metadata.suite_name,metadata.name", *TRANSCRIPT_FLAGS, str(d / "out.jsonl")),
                ],
                "out.jsonl",
                ("s/g0", "s/g1"),
            )


@register("transcripts")
def transcript_cases() -> Iterator[Case]:
    """Every other transcript form as JSONL (a hostile value at each path of one record between two good
    ones), and hostile whole .json documents."""
    for form, record in hostile_transcripts.RECORDS.items():
        good = [json.dumps({**record, "task_id": task, "model": "m", "success": 1}) for task in ("g0", "g1")]
        base = {**record, "task_id": "hostile", "model": "m", "success": 1}
        lines = {f"garbage-{k}": v for k, v in GARBAGE_LINES.items()}
        for path in paths_of(base, every=True):
            if path != ("task_id",):
                lines |= {
                    f"{'.'.join(map(str, path))}={label}": mutate(base, path, raw)
                    for label, raw in values_for(path).items()
                }
        for name, line in lines.items():
            yield Case(
                f"transcripts:{form}:{name}",
                {
                    "in.jsonl": "\n".join([good[0], line, good[1]]) + "\n",
                    "tools.json": json.dumps(hostile_transcripts.TOOLS),
                },
                lambda d: [
                    "score",
                    "transcripts",
                    str(d / "in.jsonl"),
                    "--tools",
                    str(d / "tools.json"),
                    *TRANSCRIPT_FLAGS,
                    str(d / "out.jsonl"),
                ],
                "out.jsonl",
                ("g0", "g1"),
            )
    yield from _composite_identity_cases()
    for name, (text, keep) in hostile_transcripts.DOCUMENTS.items():
        yield Case(
            f"transcripts:document:{name}",
            {"in.json": text},
            lambda d: ["score", "transcripts", str(d / "in.json"), *TRANSCRIPT_FLAGS, str(d / "out.jsonl")],
            "out.jsonl",
            keep,
        )


#: How the transcript cases run: a fixed model (tau-bench's records name none), keep going, then --out.
TRANSCRIPT_FLAGS = ("--model", "m", "--keep-going", "--out")


@register("spec")
def spec_cases() -> Iterator[Case]:
    """Hostile MCP tools/list results and OpenAI tools arrays as --tools."""
    response = json.loads((TICKETING / "mcp-tools-list.json").read_text(encoding="utf-8"))
    response["result"]["tools"] = response["result"]["tools"][:1]
    array = [{"type": "function", "function": {"name": "login", "parameters": {"type": "object"}}}]
    for form, document in (("mcp", response), ("openai", array)):
        for path in paths_of(document):
            for label, raw in {k: RAW_VALUES[k] for k in CORE}.items():
                yield Case(
                    f"spec:{form}:{'.'.join(map(str, path))}={label}",
                    {"tools.json": mutate(document, path, raw)},
                    lambda d: [
                        "score",
                        "custom",
                        "--tools",
                        str(d / "tools.json"),
                        str(TICKETING / "rollouts.jsonl"),
                        "--out",
                        str(d / "out.jsonl"),
                        "--keep-going",
                    ],
                    "out.jsonl",
                )


@register("bfcl")
def bfcl_cases() -> Iterator[Case]:
    good = {"id": "multi_turn_base_1", "result": [[[{"pwd": "{}"}]]]}
    good2 = {"id": "multi_turn_base_3", "result": [["[ls()]"]]}
    hostile = {"id": "multi_turn_base_2", "result": [[[{"ls": '{"a": true}'}]]]}
    lines: dict[str, str] = {f"garbage-{k}": v for k, v in GARBAGE_LINES.items()}
    for path in [("id",), ("result",), ("result", 0, 0), ("result", 0, 0, 0, "ls")]:
        for label, raw in values_for(path).items():
            lines[f"{'.'.join(map(str, path))}={label}"] = mutate(hostile, path, raw)
    prompting = {
        "surrogate": "[ls(a='\ud800')]",
        "nested-call": "[ls(a=ls())]",
        "lambda": "[(lambda: 1)()]",
        "power": "[power(base=10, exponent=1000000000)]",
        "deep": "[ls(a=" + "[" * 3000 + "]" * 3000 + ")]",
        "long": "[ls(a='" + "x" * 300_000 + "')]",
        "unclosed": "[ls(a='",
        "dunder": "[__import__('os')]",
    }
    for label, text in prompting.items():
        lines[f"prompting-{label}"] = json.dumps({"id": "multi_turn_base_2", "result": [[text]]})
    calls = {
        "exchange-repeat": {
            "compute_exchange_rate": json.dumps(
                {"base_currency": "USD", "target_currency": "JPY", "value": "x" * 1_000_000}
            )
        },
        "unknown-tool": {"eval": "{}"},
        "blocked": {"rm": json.dumps({"file_name": "/"})},
        "wrong-type": {"cd": json.dumps({"folder": 5})},
    }
    for label, call in calls.items():
        lines[f"call-{label}"] = json.dumps({"id": "multi_turn_base_2", "result": [[[call]]]})
    for name, line in lines.items():
        text = "\n".join([json.dumps(good), line, json.dumps(good2)]) + "\n"
        yield Case(
            f"bfcl:{name}",
            {"m-FC/BFCL_v4_multi_turn_base_result.json": text},
            lambda d: ["score", "bfcl", str(d / "m-FC"), "--out", str(d / "out.jsonl"), "--keep-going"],
            "out.jsonl",
            ("multi_turn_base_1", "multi_turn_base_3"),
        )


def record_row(task: str, method: str = "react") -> dict[str, Any]:
    return {
        "kind": "record",
        "schema_version": 1,
        "dataset": "d",
        "task_id": task,
        "model": "m",
        "method": method,
        "trial": 0,
        "T": 2,
        "fed": 3,
        "success": 1,
        "executable": True,
        "label": None,
        "reason": "",
        "no_tool": False,
        "verdicts": [
            {"step": 1, "tool": "a", "accepted": True, "label": None, "causes": [], "reason": "", "notes": ["n"]}
        ],
        "actions": [{"name": "a", "arguments": {}, "turn": 0}],
    }


@register("metrics")
def metrics_cases() -> Iterator[Case]:
    good = [json.dumps(record_row(f"t{i}", method)) for i in range(3) for method in ("react", "plan")]
    base = record_row("hostile")
    for path in [("T",), ("fed",), ("success",), ("dataset",), ("method",), ("label",)]:
        for label, raw in values_for(path).items():
            text = "\n".join([*good, mutate(base, path, raw)]) + "\n"
            yield Case(
                f"metrics:{'.'.join(map(str, path))}={label}",
                {"records.jsonl": text},
                lambda d: [
                    "metrics",
                    str(d / "records.jsonl"),
                    "--resamples",
                    "20",
                    "--format",
                    "csv",
                    "--out",
                    str(d / "m.csv"),
                ],
                "m.csv",
            )
    yield from infrastructure_cases("metrics", ["--format", "csv", "--out"], "m.csv")
    yield Case("metrics:fifo", {"records.jsonl": FIFO}, lambda d: ["metrics", str(d / "records.jsonl")], "m.csv")
    # a run folder's failures.jsonl beside the records (metrics warns of units that failed): read like any input
    records = "\n".join(good) + "\n"
    for label, failures in {
        "deep": GARBAGE_LINES["deep"] + "\n",
        "not-utf8": b'{"task_id": "\xff\xfe"}\n',
        "huge-int": '{"dataset": "d", "task_id": "t", "model": "m", "method": "react", "trial": ' + "9" * 5000 + "}\n",
        "fifo": FIFO,
        "dev-zero": ZERO,
    }.items():
        yield Case(
            f"metrics:failures-{label}",
            {"records.jsonl": records, "failures.jsonl": failures},
            lambda d: ["metrics", str(d / "records.jsonl"), "--resamples", "20", "--out", str(d / "m.csv")],
            "m.csv",
        )
    yield Case("metrics:dev-zero", {"records.jsonl": ZERO}, lambda d: ["metrics", str(d / "records.jsonl")], "m.csv")


@register("report")
def report_cases() -> Iterator[Case]:
    good = [json.dumps(record_row(f"t{i}", method)) for i in range(3) for method in ("react", "plan")]
    base = record_row("hostile")
    for path in [
        ("verdicts", 0, "notes"),
        ("verdicts", 0, "notes", 0),
        ("verdicts", 0, "reason"),
        ("verdicts", 0, "result"),
        ("metadata",),
        ("method",),
        ("actions", 0, "arguments"),
        ("success",),  # null: Y absent, shown as n/a through every table
    ]:
        for label in ("null", "huge-int", "surrogate", "deep-list", "html", "empty-object", "true"):
            text = "\n".join([*good, mutate(base, path, RAW_VALUES[label])]) + "\n"
            yield Case(
                f"report:{'.'.join(map(str, path))}={label}",
                {"records.jsonl": text},
                lambda d: [
                    "report",
                    str(d / "records.jsonl"),
                    "--out",
                    str(d / "report"),
                    "--resamples",
                    "20",
                    "--no-plots",
                    "--format",
                    "md,csv",
                ],
                "report",
            )
    yield from infrastructure_cases("report", ["--format", "md,csv", "--out"], "report")


def infrastructure_cases(command: str, options: list[str], output: str) -> Iterator[Case]:
    """A record whose ``metadata.infrastructure`` (the mark of an infrastructure failure) is a hostile value, read
    by ``command`` with and without --keep-infrastructure-failures (records/infrastructure.py)."""
    good = [json.dumps(record_row(f"t{i}", method)) for i in range(3) for method in ("react", "plan")]
    marked = {**record_row("hostile"), "metadata": {"infrastructure": "Error code: 500"}}
    for label, raw in values_for(("metadata", "infrastructure")).items():
        for keep in ((), ("--keep-infrastructure-failures",)):
            text = "\n".join([*good, mutate(marked, ("metadata", "infrastructure"), raw)]) + "\n"
            yield Case(
                f"{command}:metadata.infrastructure={label}{'+keep' if keep else ''}",
                {"records.jsonl": text},
                lambda d, keep=keep: [
                    command,
                    str(d / "records.jsonl"),
                    "--resamples",
                    "20",
                    *keep,
                    *([] if command == "metrics" else ["--no-plots"]),
                    *options,
                    str(d / output),
                ],
                output,
            )


GRIDS = {
    "trials-1e9": "trials = 1000000000\n",
    "deep-array": "x = " + "[" * 50_000 + "]" * 50_000 + "\n",
    "deep-table": "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n",
    "not-toml": "[[[\n",
    "seed-huge": "seed = 99999999999999999999999999\n",
    "unknown-key": "bogus = 1\n",
    "methods-int": "methods = 5\n",
    "models-string": 'models = "x"\n',
    "binary": "\u0000\u0001\u0002",
    "surrogate-like": 'methods = ["\\ud800"]\n',
}


@register("grid")
def grid_cases() -> Iterator[Case]:
    for name, text in GRIDS.items():
        yield Case(
            f"grid:{name}", {"grid.toml": text}, lambda d: ["run", str(d / "grid.toml"), "--out", str(d / "run")], "run"
        )


@register("tau")
def tau_and_toolsandbox_cases() -> Iterator[Case]:
    shapes = {
        "not-json": "nope",
        "list": "[]",
        "empty": "{}",
        "deep": "[" * 100_000 + "]" * 100_000,
        "huge-int": "9" * 6000,
        "simulations-int": '{"simulations": 5}',
        "tasks-str": '{"tasks": "x", "simulations": []}',
    }
    shapes |= {"fifo": FIFO, "dev-zero": ZERO}
    for name, text in shapes.items():
        yield Case(
            f"tau:{name}",
            {"results.json": text},
            lambda d: ["score", "tau", str(d / "results.json"), "--out", str(d / "out.jsonl"), "--keep-going"],
            "out.jsonl",
        )
        yield Case(
            f"toolsandbox:{name}",
            {"run/trajectories/s1/execution_context.json": text},
            lambda d: [
                "score",
                "toolsandbox",
                str(d / "run"),
                "--out",
                str(d / "out.jsonl"),
                "--keep-going",
                "--success-if-unknown",
                "0",
            ],
            "out.jsonl",
        )


@register("hooks")
def hooks_cases() -> Iterator[Case]:
    """Files shaped like tool lists that name the canary hooks module (issue 29 item 7): as --tools of every
    scoring command that takes one, and inside the records; none may import it."""
    tool = {"name": "login", "parameters": {"type": "object"}}
    documents = {
        "spec-shaped": {"tools": [tool], "hooks": CANARY_HOOKS},
        "openai-object": {"tools": [{"type": "function", "function": tool}], "hooks": CANARY_HOOKS},
        "mcp": {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "login", "inputSchema": {}}]}},
        "tool-hooks": {"tools": [{**tool, "hooks": CANARY_HOOKS, "precondition": "run"}], "hooks": CANARY_HOOKS},
        "relative": {"tools": [tool], "hooks": "canary_hooks.py"},
        "dotted": {"tools": [tool], "hooks": "os"},
    }
    documents["mcp"]["result"]["hooks"] = CANARY_HOOKS  # type: ignore[index]
    rollouts = TICKETING / "rollouts.jsonl"
    for name, document in documents.items():
        text = json.dumps(document)
        yield Case(
            f"hooks:custom:{name}",
            {"tools.json": text, "canary_hooks.py": f"exec(open({CANARY_HOOKS!r}).read())\n"},
            lambda d: ["score", "custom", "--tools", str(d / "tools.json"), str(rollouts), "--out", str(d / "o.jsonl")],
            "o.jsonl",
        )
    chat = {
        "task_id": "hooked",
        "model": "m",
        "success": 1,
        "hooks": CANARY_HOOKS,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
        "tools": [{"type": "function", "function": tool, "hooks": CANARY_HOOKS}],
    }
    for command in ("transcripts",):
        yield Case(
            f"hooks:{command}:record",
            {"in.jsonl": json.dumps(chat) + "\n", "tools.json": json.dumps(documents["spec-shaped"])},
            lambda d, command=command: [
                *("score", command, str(d / "in.jsonl"), "--model", "m", "--keep-going", "--out", str(d / "o.jsonl")),
            ],
            "o.jsonl",
            ("hooked",),
        )
        yield Case(
            f"hooks:{command}:tools",
            {"in.jsonl": json.dumps(chat) + "\n", "tools.json": json.dumps(documents["spec-shaped"])},
            lambda d, command=command: [
                *("score", command, str(d / "in.jsonl"), "--tools", str(d / "tools.json"), "--model", "m"),
                *("--keep-going", "--out", str(d / "o.jsonl")),
            ],
            "o.jsonl",
        )


#: Lines that are not UTF-8, each put between two good lines (issue 29 item 8).
NOT_UTF8 = {
    "invalid-start": b'{"task_id": "\xff\xfe"}',
    "truncated-sequence": b'{"task_id": "\xe2\x82"}',
    "overlong": b'{"task_id": "\xc0\xaf"}',
    "surrogate-bytes": b'{"task_id": "\xed\xa0\x80"}',
    "latin-1": '{"task_id": "caf\u00e9"}'.encode("latin-1"),
}


@register("utf8")
def utf8_cases() -> Iterator[Case]:
    """A line that is not UTF-8 between good lines, for every reader of JSON Lines: only that line is lost."""
    rollouts = (TICKETING / "rollouts.jsonl").read_bytes().splitlines()
    chat = {
        "model": "m",
        "success": 1,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
        "tools": [],
    }
    chats = [json.dumps({**chat, "task_id": t}).encode() for t in ("g0", "g1")]
    bfcl = [
        json.dumps({"id": "multi_turn_base_1", "result": [[[{"pwd": "{}"}]]]}).encode(),
        json.dumps({"id": "multi_turn_base_3", "result": [["[ls()]"]]}).encode(),
    ]
    records = [json.dumps(record_row(f"t{i}", m)).encode() for i in range(3) for m in ("react", "plan")]
    for name, line in NOT_UTF8.items():
        yield Case(
            f"utf8:custom:{name}",
            {"in.jsonl": b"\n".join([rollouts[0], line, rollouts[1]]) + b"\n"},
            lambda d: [
                *("score", "custom", "--tools", str(TICKETING / "tools.yaml"), str(d / "in.jsonl")),
                *("--out", str(d / "out.jsonl"), "--keep-going"),
            ],
            "out.jsonl",
            tuple(json.loads(r)["task_id"] for r in rollouts[:2]),
        )
        for command in ("transcripts",):
            yield Case(
                f"utf8:{command}:{name}",
                {"in.jsonl": b"\n".join([chats[0], line, chats[1]]) + b"\n"},
                lambda d, command=command: [
                    *("score", command, str(d / "in.jsonl"), "--model", "m", "--keep-going"),
                    *("--out", str(d / "out.jsonl")),
                ],
                "out.jsonl",
                ("g0", "g1"),
            )
        yield Case(
            f"utf8:bfcl:{name}",
            {"m-FC/BFCL_v4_multi_turn_base_result.json": b"\n".join([bfcl[0], line, bfcl[1]]) + b"\n"},
            lambda d: ["score", "bfcl", str(d / "m-FC"), "--out", str(d / "out.jsonl"), "--keep-going"],
            "out.jsonl",
            ("multi_turn_base_1", "multi_turn_base_3"),
        )
        yield Case(
            f"utf8:metrics:{name}",
            {"records.jsonl": b"\n".join([*records, line]) + b"\n"},
            lambda d: ["metrics", str(d / "records.jsonl"), "--resamples", "20", "--out", str(d / "m.csv")],
            "m.csv",
        )


def all_cases() -> list[Case]:
    """Every registered case (the optional modules of other helpers' cases imported first, when present; one
    that registers nothing but has ``cases(Case)`` is registered under its name's last part)."""
    for name in OPTIONAL_MODULES:
        if importlib.util.find_spec(name) is not None:
            module = importlib.import_module(name)
            kind = name.removeprefix("hostile_")
            if kind not in SOURCES and hasattr(module, "cases"):
                register(kind)(lambda module=module: module.cases(Case))
    cases = [case for source in SOURCES.values() for case in source()]
    names = [case.name for case in cases]
    assert len(names) == len(set(names)), "two hostile cases share a name"
    return cases


def listing(folder: Path) -> set[Path]:
    return {p.relative_to(folder) for p in folder.rglob("*")}


def test_the_sweep_has_hundreds_of_cases_across_every_input() -> None:
    cases = all_cases()
    kinds = {c.name.split(":")[0] for c in cases}
    assert len(cases) >= 200
    assert kinds >= {
        "custom",
        "openai",
        "evidence",
        "transcripts",
        "spec",
        "bfcl",
        "metrics",
        "report",
        "grid",
        "tau",
        "toolsandbox",
        "inspect",
        "hooks",
        "utf8",
        "outputs",
    }
    planted = [c for c in cases if any(_holds_canary(text) for text in c.files.values())]
    assert len(planted) >= 100, "the canaries are planted in the inputs"


def test_every_nth_keeps_a_fixed_subset_per_kind() -> None:
    cases = [Case(f"{kind}:{i}", {}, lambda d: [], "out") for kind in ("a", "b") for i in range(5)]
    names = [c.name for c in every_nth(cases, "2")]
    assert names == ["a:0", "a:2", "a:4", "b:0", "b:2", "b:4"]
    assert [c.name for c in every_nth(cases, "3:b")] == [*(f"a:{i}" for i in range(5)), "b:0", "b:3"]
    assert every_nth(cases, "") == cases


def _holds_canary(text: str | bytes) -> bool:
    tokens = (CANARY_URL, CANARY_FILE, CANARY_HOOKS, CANARY_HOST)
    return any((t.encode() if isinstance(text, bytes) else t) in text for t in tokens)


@dataclass
class Canaries:
    """A loopback listener that must see no connection, a file whose content must never be shown, and a hooks
    module that would create ``marker`` if imported; :meth:`plant` puts their addresses in a case's text."""

    listener: socket.socket
    file: Path
    secret: bytes
    hooks: Path
    marker: Path

    @classmethod
    def make(cls, folder: Path) -> Canaries:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        listener.setblocking(False)
        secret = f"prefix-exec-canary-{uuid.uuid4().hex}".encode()
        canary = folder / "canary-secret.txt"
        canary.write_bytes(secret + b"\n")
        marker = folder / "hooks-ran.marker"
        hooks = folder / "canary_hooks_module.py"
        body = f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        hooks.write_text(body + "\n\ndef run(state, args):\n    return None\n", encoding="utf-8")
        return cls(listener, canary, secret, hooks, marker)

    @property
    def host(self) -> str:
        host, port = self.listener.getsockname()
        return f"{host}:{port}"

    def plant(self, text: str) -> str:
        return (
            text.replace(CANARY_URL, f"http://{self.host}/canary")
            .replace(CANARY_HOST, self.host)
            .replace(CANARY_FILE, str(self.file))
            .replace(CANARY_HOOKS, str(self.hooks))
        )

    def plant_bytes(self, data: bytes) -> bytes:
        """``data`` with the canaries planted; in a zip archive (an inspect ``.eval``), inside its members, whose
        compressed bytes do not show the tokens."""
        data = self._plant_members(data) if data.startswith(b"PK\x03\x04") else data
        for token in (CANARY_URL, CANARY_HOST, CANARY_FILE, CANARY_HOOKS):
            data = data.replace(token.encode(), self.plant(token).encode())
        return data

    def _plant_members(self, data: bytes) -> bytes:
        """The archive rewritten member by member (each with its own method) with the canaries planted, when one
        holds a token; an archive zipfile cannot read as it is (a hostile one) is left as it is."""
        import inspect_ai.log  # noqa: F401  (teaches zipfile inspect's zstd members)

        tokens = [t.encode() for t in (CANARY_URL, CANARY_HOST, CANARY_FILE, CANARY_HOOKS)]
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                members = [(info, archive.read(info)) for info in archive.infolist()]
        except (zipfile.BadZipFile, NotImplementedError, OSError, ValueError, EOFError):
            return data
        if not any(t in content for _, content in members for t in tokens):
            return data
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as archive:
            for info, content in members:
                archive.writestr(info, self.plant(content.decode("utf-8")).encode("utf-8"))
        return out.getvalue()

    def connections(self) -> int:
        """How many connections wait on the listener (accepted and closed here, so each is counted once)."""
        count = 0
        while select.select([self.listener], [], [], 0)[0]:
            try:
                peer, _ = self.listener.accept()
            except BlockingIOError:
                break
            peer.close()
            count += 1
        return count

    def problems(self, shown: list[bytes]) -> list[str]:
        found = []
        if self.connections():
            found.append("connected to the loopback canary listener")
        if any(self.secret in text for text in shown):
            found.append("showed the canary file's content")
        if self.marker.exists():
            self.marker.unlink()
            found.append("imported the canary hooks module")
        return found


def _digests(folder: Path, names: list[str]) -> dict[str, str]:
    """sha256 of each regular input file (special files and links are left as they are)."""
    found = {}
    for name in names:
        path = folder / name
        if path.is_file() and not path.is_symlink():
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _outputs(folder: Path, inputs: set[str]) -> list[bytes]:
    """The bytes of every regular file in ``folder`` that is not an input (each read up to 64 MiB)."""
    shown = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and str(path.relative_to(folder)) not in inputs:
            with path.open("rb") as fh:
                shown.append(fh.read(64 << 20))
    return shown


def _write(folder: Path, case: Case, canaries: Canaries) -> None:
    for name, content in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        planted = canaries.plant_bytes(content) if isinstance(content, bytes) else canaries.plant(content)
        write_case_file(path, planted)


TOKENS = (CANARY_URL, CANARY_HOST, CANARY_FILE, CANARY_HOOKS)


#: A transcript record's hash of its tools list (``metadata.tools_digest``, 16 hex digits).
TOOLS_DIGEST = re.compile(rb'"tools_digest": "[0-9a-f]{16}"')


def _digest(out: Path, places: list[tuple[str, str]], *, planted: bool = False) -> str:
    """The SHA-256 of an output with what differs from run to run (the case folder, the canaries' addresses)
    named instead, escaped as JSON writes it too; ``-`` when there is none. With ``planted`` (the case's inputs
    hold a canary's address), a record's ``tools_digest`` is named too: it hashes a tools list that may hold the
    address, which differs from run to run, so no replacement in the output can undo it."""
    if not out.is_file():
        return "-"
    data = out.read_bytes()
    for real, name in places:
        for form in (real, json.dumps(real)[1:-1]):
            data = data.replace(form.encode(), name.encode())
    if planted:
        data = TOOLS_DIGEST.sub(b'"tools_digest": "TOOLS_DIGEST"', data)
    return hashlib.sha256(data).hexdigest()


def test_the_digest_names_what_differs_from_run_to_run(tmp_path: Path) -> None:
    runs = {"/tmp/a": "a2bdff167bf27801", "/tmp/bb": "b979be518bab21ba"}  # two runs' case folders and hashes
    found: dict[bool, set[str]] = {True: set(), False: set()}
    for index, (folder, digest) in enumerate(runs.items()):
        out = tmp_path / f"out{index}.jsonl"
        out.write_text(json.dumps({"source": f"{folder}/in.jsonl", "tools_digest": digest}) + "\n")
        for planted in (True, False):
            found[planted].add(_digest(out, [(folder, "CASE")], planted=planted))
    assert len(found[True]) == 1  # the folder and the hash of planted text named: the same bytes
    assert len(found[False]) == 2  # inputs without a canary: the hash is compared as written
    assert _digest(tmp_path / "none.jsonl", []) == "-"


def every_nth(cases: list[Case], every: str) -> list[Case]:
    """``cases`` thinned by ``HOSTILE_EVERY``: ``N`` keeps the first case of each kind and every Nth after it
    (counted within the kind, in the sweep's fixed order); ``N:KIND,KIND`` thins only those kinds and keeps the
    others whole; empty keeps all. A fixed subset, so runs under different launchers compare case for case."""
    if not every:
        return cases
    stride, _, named = every.partition(":")
    thinned = {k for k in named.split(",") if k}
    seen: dict[str, int] = {}
    kept = []
    for case in cases:
        kind = case.name.split(":")[0]
        index = seen[kind] = seen.get(kind, -1) + 1
        if (thinned and kind not in thinned) or index % int(stride) == 0:
            kept.append(case)
    return kept


def _argv(case: Case, folder: Path) -> list[str]:
    """The case's arguments; ``HOSTILE_WORKERS=2`` (or ``ray``) runs every ``score`` command on the pool (or
    Ray) instead, whose records must be byte-identical to ``--workers 1``'s (``HOSTILE_WORKERS=1`` gives that
    option, where the default could pick more on a big input and an idle machine)."""
    argv = case.argv(folder)
    pool = os.environ.get("HOSTILE_WORKERS", "")
    if pool and argv[:1] == ["score"] and "--workers" not in argv:
        argv += ["--launcher", "ray"] if pool == "ray" else ["--workers", pool]
    return argv


def _run(case: Case, folder: Path, canaries: Canaries) -> tuple[object, float]:
    start = time.monotonic()
    try:
        code: object = main([canaries.plant(arg) for arg in _argv(case, folder)])
    except SystemExit as exc:  # argparse
        code = exc.code
    except BaseException as exc:  # the sweep reports every escape
        code = f"raised {type(exc).__name__}: {str(exc)[:200]}"
    return code, time.monotonic() - start


def _check(case: Case, folder: Path, code: object, seconds: float, err: str, created: set[Path]) -> list[str]:
    found = []
    if code not in (0, 2):
        found.append(f"exit {code}")
    if "Traceback" in err:
        found.append("traceback")
    if "\x1b" in err:
        found.append("a terminal escape from input printed raw")
    if "toolstools" in err:
        found.append("a field path with 'tools' twice")
    if seconds > BOUND_S:
        found.append(f"{seconds:.1f} s")
    if created:
        found.append(f"created {sorted(map(str, created))[:3]} outside its output")
    if case.good:
        out = folder / case.out
        scored = {json.loads(line)["task_id"] for line in out.read_text().splitlines()} if out.exists() else set()
        if not set(case.good) <= scored:
            found.append(f"good rows not scored ({sorted(set(case.good) - scored)})")
    return found


@contextlib.contextmanager
def _address_space_cap(mebibytes: int) -> Iterator[None]:
    """RLIMIT_AS at the process's size plus ``mebibytes`` for the block: a blow-up is a MemoryError here, not
    the machine's OOM killer."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm", "rb") as handle:
        size = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    cap = size + mebibytes * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def test_every_hostile_input_ends_in_bound_with_exit_0_or_2(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    record_property: Any,
    request: pytest.FixtureRequest,
) -> None:
    monkeypatch.chdir(tmp_path)  # anything written relative to the working directory would show up here
    canaries = Canaries.make(tmp_path_factory.mktemp("canaries"))
    base = tmp_path_factory.getbasetemp()
    canary_digests = _digests(canaries.file.parent, [canaries.file.name, canaries.hooks.name])
    kinds = {k for k in os.environ.get("HOSTILE_KINDS", "").split(",") if k}  # a subset while working on one
    cases = [c for c in all_cases() if not kinds or c.name.split(":")[0] in kinds]
    match = os.environ.get("HOSTILE_MATCH", "")  # a name part, to run a few cases (HOSTILE_WORKERS is slow)
    cases = every_nth([c for c in cases if match in c.name], os.environ.get("HOSTILE_EVERY", ""))
    if os.environ.get("HOSTILE_WORKERS"):  # every rollout through the workers, even of a tiny input
        monkeypatch.setattr(pool_dispatch, "REPLAY_HERE", False)
    if os.environ.get("HOSTILE_WORKERS") == "ray":
        # One local Ray for the whole sweep, started before the address-space cap so that its daemons (children
        # of this process, whose reservations are Ray's, not an input's) are not held to it: every `score
        # --launcher ray` connects to it (cluster.connect_ray reuses it), as a script scoring several inputs in
        # one process would. The actors are the commands' own, started and killed by each.
        if not os.environ.get("RAY_ADDRESS"):
            monkeypatch.setenv("RAY_ADDRESS", "local")  # the sweep's own instance, never another's `ray start`
        ray = connect_ray()
        request.addfinalizer(ray.shutdown)
    written: dict[str, str] = {}  # HOSTILE_DIGESTS=FILE: each case's output's SHA-256, to compare pools
    problems: list[str] = []
    slowest = (0.0, "")
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # Linux: KiB, the process's peak so far
    started = time.monotonic()
    with _address_space_cap(ABSOLUTE_MEMORY_MIB):
        for index, case in enumerate(cases):
            folder = tmp_path / f"case{index}"
            folder.mkdir()
            _write(folder, case, canaries)
            before, digests = listing(folder), _digests(folder, list(case.files))
            code, seconds = _run(case, folder, canaries)
            slowest = max(slowest, (seconds, case.name))
            captured = capsys.readouterr()
            created = {p for p in listing(folder) - before if not str(p).startswith(case.out)}
            found = _check(case, folder, code, seconds, captured.err + captured.out, created)
            if _digests(folder, list(case.files)) != digests:  # as hostile_outputs.unchanged, for planted text too
                found.append("changed or removed an input")
            shown = [captured.err.encode(errors="replace"), captured.out.encode(errors="replace")]
            found += canaries.problems(shown + _outputs(folder, set(case.files)))
            out = folder / case.out
            # the base folder last: a text cut to a length (a reason quoting a planted address) ends inside a path
            places = [(str(folder), "CASE"), *((canaries.plant(t), t) for t in TOKENS), (str(base), "BASE")]
            written[case.name] = _digest(out, places, planted=any(map(_holds_canary, case.files.values())))
            problems += [f"{case.name}: {problem}" for problem in found]
    total = time.monotonic() - started
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_kib) / 1024
    if grown_mib > MEMORY_BOUND_MIB:
        problems.append(f"the sweep raised the process's peak memory by {grown_mib:.0f} MiB")
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        if resource.getrusage(who).ru_maxrss / 1024 > ABSOLUTE_MEMORY_MIB:
            problems.append(f"peak memory {resource.getrusage(who).ru_maxrss // 1024} MiB, over {ABSOLUTE_MEMORY_MIB}")
    if _digests(canaries.file.parent, [canaries.file.name, canaries.hooks.name]) != canary_digests:
        problems.append("the canary file or the canary hooks module changed")
    canaries.listener.close()
    if os.environ.get("HOSTILE_DIGESTS"):
        Path(os.environ["HOSTILE_DIGESTS"]).write_text(json.dumps(written, indent=0, sort_keys=True))
    summary = f"hostile sweep: {len(cases)} cases in {total:.0f} s (slowest {slowest[1]}: {slowest[0]:.1f} s)"
    record_property("hostile_sweep", summary)
    with capsys.disabled():
        print(f"\n{summary}")
    assert set(os.listdir(tmp_path)) == {f"case{i}" for i in range(len(cases))}
    assert not problems, f"{len(problems)} problems ({summary}):\n" + "\n".join(problems[:60])


def test_the_canaries_are_planted_inside_a_logs_compressed_members(tmp_path: Path) -> None:
    # the tokens of inspect:canaries are in a deflated member: replacing them in the file's bytes planted
    # nothing, and the case read placeholders instead of the listener's URL and the canary file's path
    canaries = Canaries.make(tmp_path)
    (case,) = [c for c in all_cases() if c.name == "inspect:canaries"]
    planted = canaries.plant_bytes(case.files["hostile.eval"])
    with zipfile.ZipFile(io.BytesIO(planted)) as archive:
        sample = archive.read("samples/2_epoch_1.json")
        assert [i.compress_type for i in archive.infolist()] == [zipfile.ZIP_DEFLATED] * len(archive.infolist())
    assert str(canaries.file).encode() in sample and f"http://{canaries.host}/canary".encode() in sample
    assert b"@@CANARY" not in sample
    canaries.listener.close()


def test_the_canaries_see_a_connection_a_shown_file_and_an_import(tmp_path: Path) -> None:
    canaries = Canaries.make(tmp_path)
    assert canaries.problems([b"nothing"]) == []
    assert canaries.plant(f"{CANARY_URL} {CANARY_FILE}") == f"http://{canaries.host}/canary {canaries.file}"
    with socket.create_connection(canaries.listener.getsockname(), timeout=5):
        pass
    runpy.run_path(str(canaries.hooks))
    shown = [b"x" + canaries.file.read_bytes()]
    assert canaries.problems(shown) == [
        "connected to the loopback canary listener",
        "showed the canary file's content",
        "imported the canary hooks module",
    ]
    assert canaries.problems(shown[:0]) == []  # each is reported once
    canaries.listener.close()
