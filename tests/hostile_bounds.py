"""The third hardening round's classes for the hostile sweep (tests/test_hostile_sweep.py; issue 45): records that
cannot cross a process boundary (nested 800 to 1,490 deep: they load as JSON but not pickle), a rollout whose
``transcript`` items are integers, and numbers out of range where they enter (rewards past float's range or not
finite, trials past 2^31 - 1, a ``--trial-field`` index of thousands of digits, ``--workers ²``); and what the
conversation gives a ``refs`` check (issue 41): a 20 MB user message, messages of millions of distinct tokens, one
value said two million times and referenced by 5,000 calls, a message of 200,000 content parts. Each case has
good rows around the bad one, which must be scored. Run the sweep with ``HOSTILE_WORKERS=2`` (or ``ray``) to run
them on the pool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hostile_cases import CANARY_FILE, CANARY_URL, Case, register

TICKETING = Path(__file__).resolve().parents[1] / "examples" / "ticketing"
TOOLS = [{"type": "function", "function": {"name": "login", "parameters": {"type": "object"}}}]
CALL = {"id": "c1", "type": "function", "function": {"name": "login", "arguments": '{"username": "sam"}'}}
CHAT = [
    {"role": "user", "content": "log in"},
    {"role": "assistant", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
]
#: Depths that load as JSON, and fail pickle (the pool's wire) without the reader's bound.
DEPTHS = (800, 1000, 1490)


def _deep(depth: int) -> str:
    return "[" * depth + json.dumps(CANARY_URL) + "]" * depth


def _transcripts(
    bad: str, name: str, *extra: str, good: tuple[str, ...] = ("g0", "g1"), rows: list[str] | None = None
) -> Case:
    """``bad`` between two good conversations (``rows``: OpenAI Chat ones by default), scored with --keep-going;
    ``good`` are the task ids whose records must be written."""
    if rows is None:
        rows = [json.dumps({"task_id": t, "model": "m", "success": 1, "messages": CHAT}) for t in ("g0", "g1")]
    return Case(
        f"bounds:{name}",
        {"in.jsonl": "\n".join([rows[0], bad, rows[1]]) + "\n", "tools.json": json.dumps(TOOLS)},
        lambda d: (
            [
                "score",
                "transcripts",
                str(d / "in.jsonl"),
                "--tools",
                str(d / "tools.json"),
                *extra,
                "--keep-going",
                "--out",
                str(d / "out.jsonl"),
            ]
        ),
        "out.jsonl",
        good,
    )


def _with_raw(record: Any, raw: str) -> str:
    """``record`` as JSON text with the string ``"RAW"`` in it replaced by the raw JSON text ``raw``."""
    return json.dumps(record).replace('"RAW"', raw)


def _deep_cases() -> Iterator[Case]:
    base = {"task_id": "bad", "model": "m", "success": 1, "messages": CHAT}
    at_arguments = [
        CHAT[0],
        {"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "login", "arguments": {"x": "RAW"}}}]},
        CHAT[2],
    ]
    places = {
        "metadata": {**base, "metadata": "RAW"},
        "content": {**base, "messages": [{"role": "user", "content": "RAW"}, *CHAT[1:]]},
        "arguments": {**base, "messages": at_arguments},
        "tools": {**base, "tools": [{"type": "function", "function": {"name": "login", "parameters": "RAW"}}]},
    }
    for depth in DEPTHS:
        for place, record in places.items():
            yield _transcripts(_with_raw(record, _deep(depth)), f"deep-{depth}:{place}")
        rows = [{**base, "task_id": "g0"}, {**base, "metadata": "RAW"}, {**base, "task_id": "g1"}]
        yield Case(
            f"bounds:deep-{depth}:document",
            {"in.json": _with_raw(rows, _deep(depth)), "tools.json": json.dumps(TOOLS)},
            lambda d: (
                [
                    "score",
                    "transcripts",
                    str(d / "in.json"),
                    "--tools",
                    str(d / "tools.json"),
                    "--keep-going",
                    "--out",
                    str(d / "out.jsonl"),
                ]
            ),
            "out.jsonl",
            # 1,490 levels under the document's list pass what the JSON parser itself takes: the document's error
            ("g0", "g1") if depth < 1400 else (),
        )


def _rollout_cases() -> Iterator[Case]:
    good = (TICKETING / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(good[0])
    keep = (first["task_id"], json.loads(good[1])["task_id"])
    bad_rows = {
        "transcript-ints": {**first, "task_id": "bad", "transcript": [1, 2, 3]},
        "transcript-strings": {**first, "task_id": "bad", "transcript": ["a", CANARY_FILE]},
        "transcript-nested": {**first, "task_id": "bad", "transcript": [[{"role": "user"}]]},
    }
    lines = {name: json.dumps(row) for name, row in bad_rows.items()}
    for depth in DEPTHS:
        lines[f"deep-{depth}"] = _with_raw({**first, "task_id": "bad", "metadata": "RAW"}, _deep(depth))
    for name, line in lines.items():
        yield Case(
            f"bounds:rollouts:{name}",
            {"in.jsonl": "\n".join([good[0], line, good[1]]) + "\n"},
            lambda d: (
                [
                    "score",
                    "custom",
                    "--tools",
                    str(TICKETING / "tools.yaml"),
                    str(d / "in.jsonl"),
                    "--keep-going",
                    "--out",
                    str(d / "out.jsonl"),
                ]
            ),
            "out.jsonl",
            keep,
        )


def _number_cases() -> Iterator[Case]:
    head = {"task_id": "bad", "info": {}, "traj": CHAT, "model": "m"}
    for name, reward in {
        "reward-1e309": "1" + "0" * 309,
        "reward-inf": "Infinity",
        "reward-nan": "NaN",
        "reward-minus-inf": "-Infinity",
    }.items():
        bad = json.dumps({**head, "trial": 0})[:-1] + f', "reward": {reward}}}'
        good = [json.dumps({**head, "task_id": t, "reward": 1.0, "trial": 0}) for t in ("g0", "g1")]
        yield _transcripts(bad, f"tau-bench:{name}", rows=good)
    base = {"task_id": "bad", "model": "m", "success": 1, "messages": CHAT}
    for name, trial in {"trial-2^31": str(2**31), "trial-1e400": "1" + "0" * 400}.items():
        yield _transcripts(_with_raw({**base, "trial": "RAW"}, trial), name)
    digits = "messages." + "9" * 5000  # no record has it: each is that record's error
    yield _transcripts(json.dumps(base), "trial-field-digits", "--trial-field", digits, good=())
    yield _transcripts(json.dumps(base), "workers-superscript", "--workers", "²", good=())  # a usage error


def _given_cases() -> Iterator[Case]:
    """Conversations whose user messages give values to ``login(username)``'s ``refs`` (docs/custom.md, "Values the
    conversation gave"), scored with a side file: each within the tokenization's bounds."""
    side = "tools:\n  login: {refs: {username: user}}\n"

    def chat(said: Any, calls: int = 1, name: str = "ID1") -> list[Any]:
        call = {**CALL, "function": {"name": "login", "arguments": json.dumps({"username": name})}}
        many = [{**call, "id": f"c{i}"} for i in range(calls)]
        replies = [{"role": "tool", "tool_call_id": f"c{i}", "content": "ok"} for i in range(calls)]
        return [{"role": "user", "content": said}, {"role": "assistant", "tool_calls": many}, *replies]

    distinct = [{"role": "user", "content": " ".join(f"T{m}x{i}" for i in range(30_000))} for m in range(60)]
    conversations = {
        "huge-message": chat("ID1 " + "x" * 20_000_000),
        "distinct-tokens": [*distinct, *chat("and", name="T59x29999")],
        "colliding": chat("ID1 " * 2_000_000, calls=5_000),
        "many-parts": chat([{"type": "text", "text": "ID1"}] * 200_000),
    }
    for name, messages in conversations.items():
        rows = [json.dumps({"task_id": t, "model": "m", "success": 1, "messages": CHAT}) for t in ("g0", "g1")]
        bad = json.dumps({"task_id": "bad", "model": "m", "success": 1, "messages": messages})
        yield Case(
            f"bounds:given:{name}",
            {"in.jsonl": "\n".join([rows[0], bad, rows[1]]) + "\n", "tools.json": json.dumps(TOOLS), "side.yaml": side},
            lambda d: [
                *("score", "transcripts", str(d / "in.jsonl"), "--tools", str(d / "tools.json")),
                *("--hooks", str(d / "side.yaml"), "--keep-going", "--out", str(d / "out.jsonl")),
            ],
            "out.jsonl",
            ("g0", "bad", "g1"),
        )


def _spec_cases() -> Iterator[Case]:
    """A tool spec whose initial state nests past MAX_DEPTH: refused where it is read (a run's or a pool's workers
    would build and pickle values from it)."""
    tools = [{"name": "login", "parameters": {"type": "object"}}]
    for depth in (300, *DEPTHS):
        spec = _with_raw({"name": "deep", "tools": tools, "initial_state": {"notes": "RAW"}}, _deep(depth))
        yield Case(
            f"bounds:spec-deep-{depth}",
            {"tools.json": spec},
            lambda d: [
                *("score", "custom", "--tools", str(d / "tools.json"), str(TICKETING / "rollouts.jsonl")),
                *("--keep-going", "--out", str(d / "out.jsonl")),
            ],
            "out.jsonl",
        )


@register("bounds")
def bound_cases() -> Iterator[Case]:
    yield from _deep_cases()
    yield from _spec_cases()
    yield from _rollout_cases()
    yield from _number_cases()
    yield from _given_cases()
    yield from _inference_cases()


def _conversation(calls: list[tuple[str, dict[str, Any], Any]], said: str = "hi") -> str:
    """One OpenAI Chat conversation of ``calls`` (name, arguments, result), as a JSONL line."""
    messages: list[Any] = [{"role": "user", "content": said}]
    for index, (name, arguments, result) in enumerate(calls):
        call = {"id": f"c{index}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        messages.append({"role": "assistant", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{index}", "content": json.dumps(result)})
    return json.dumps({"messages": messages})


def _inference_corpora() -> dict[str, str]:
    """Corpora that push spec inference's bounds (prefix_exec.inference.evidence): distinct values past every cap,
    results deeper than any walk, one value at every path, more tools than are tracked, names YAML reads."""
    wide = [("open", {}, {"ids": [f"T{c}x{i}" for i in range(12_000)]}) for c in range(21)]  # past every cap
    uses = [("close", {"ticket_id": f"T{c}x{i}"}, "ok") for c in range(21) for i in range(0, 12_000, 80)]
    collide = {f"f{i}": {"g": "ID1", "h": ["ID1"] * 20} for i in range(50)}  # one value at 100 paths
    odd = ['a"b', "yes", "- x", "k: v", "#c", "new\nline", "[*]", "", "$", "ü", "a.b", CANARY_URL]
    return {
        "distinct-values": "\n".join([_conversation(wide), _conversation(uses)] * 2) + "\n",
        "deep-results": "\n".join(
            _conversation([("open", {}, json.loads(_deep(depth))), ("close", {"ticket_id": CANARY_URL}, "ok")])
            for depth in (20, 200, 900)
        )
        + "\n",
        "colliding-values": "\n".join(
            _conversation([("open", collide, collide), ("close", collide, collide)] * 20) for _ in range(5)
        )
        + "\n",
        "many-tools": "\n".join(
            _conversation([(f"tool{t}", {f"a{t}": f"ID{t}x", "b": f"ID{t}y"}, {"id": f"ID{t}x"}) for t in range(6_000)])
            for _ in range(2)
        )
        + "\n",
        "odd-names": "\n".join(
            _conversation([(name, {}, {"x_id": f"V{i}x"}), (name, {name or "x": f"V{i}x"}, "ok")])
            for i, name in enumerate(odd * 4)
        )
        + "\n",
    }


def _inference_cases() -> Iterator[Case]:
    for name, text in _inference_corpora().items():
        yield Case(
            f"bounds:infer:{name}",
            {"in.jsonl": text},
            lambda d: [
                "infer-spec",
                str(d / "in.jsonl"),
                "--keep-going",
                "--explain",
                "close.ticket_id",
                "--out",
                str(d / "side.yaml"),
            ],
            "side.yaml",
        )
    sims = [{"id": "s0", "messages": "not a list"}, {"id": "s1", "messages": [{"role": "assistant", "tool_calls": 7}]}]
    sims.append({"id": "s2", "messages": [{"role": "tool", "id": ["x"], "content": _deep(900)}]})
    yield Case(
        "bounds:infer:tau2-simulations",
        {"results.json": json.dumps({"info": {}, "simulations": [*sims, 5, None]})},
        lambda d: ["infer-spec", str(d / "results.json"), "--keep-going", "--out", str(d / "side.yaml")],
        "side.yaml",
    )
