"""BFCL's prompting decoding for Y, mirrored without eval: value for value what BFCL's own decoder reads."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("bfcl_eval")

from prefix_exec.envs.bfcl import FinalSuccess, load_task
from prefix_exec.envs.bfcl.prompting import UNSUPPORTED, DecodeFailure, decode_step, decode_turn
from prefix_exec.errors import InputError
from prefix_exec.importers.bfcl import read_result_file
from prefix_exec.trajectory import Rollout

#: Texts BFCL's decoder reads (or fails on); each one exercises a rule of docs/bfcl.md. Trusted input only:
#: BFCL's decoder evaluates operator expressions.
TEXTS = [
    "[cd(folder='document'), ls(a=True)]",
    "cd('project')",  # positional: dropped
    "[find('/tmp', name='x')]",
    "'ls(a=True)'",  # quoted: a list holding a string
    "'[ls(a=True)]'",
    "```\n[pwd()]\n```",
    "  pwd()  ",
    "ls(a=true)",  # a bare name: its text
    "f(a=+5, b=-2.5, c=not True, d=~3)",  # unary operators negate their constant
    "f(a=-x)",
    "f(a=-'s')",
    "f(a=(1, 2), b=[1, [2, 'x']], c=None, d=...)",
    "f(a=x[1:2], b=y[0], c=g(1), d=g())",  # subscripts and keyword-less calls: their source
    "f(a=1 + 2 * 3, b='ab' * 2, c=[1] + [2], d=7 // 2, e=7 % 4, f=2 ** 10, g=1 / 4)",
    "f(a=(revenue + expense) / 3)",  # a name in an operator expression: eval fails
    "f(a=1 / 0)",
    "f(a={})",  # an empty dict: BFCL's rendering fails
    "f(a={'k': 1, 'j': [1, 2]}, b={1: 'x', True: 'y'})",  # dict keys rendered as '<str(key)>'
    "f(a={'k': {'j': 1}, 'm': 2})",
    "f(a=lambda: 1)",
    "f(a=[i for i in x])",
    "f(a=f'{x}')",
    "f(a={1, 2})",
    "f(a=1 < 2)",
    "f(a=x.y)",
    "f(**kw)",
    "f(a=1, **kw)",
    "[f(), 3]",
    "[f(), g(b=1)], [h()]",
    "No function matches the user's request.",
    "[]",
    "",
    "a.b(c=1)",
    "[mkdir(dir_name='d')]\n[touch(file_name='e')]",
]


def bfcl_decode(text: str) -> list[tuple[str, dict[str, Any]]] | None:
    """BFCL's decoding of ``text``, its output strings read back with ``ast.literal_eval`` (None: it raises)."""
    from bfcl_oracle import _prompting_decoder

    try:
        calls = _prompting_decoder()(text, has_tool_call_tag=False)
    except Exception:
        return None
    decoded = []
    for call in calls:
        try:  # a rendered call that does not even parse (``f(None='kw')``) runs as an error text
            node = ast.parse(call, mode="eval").body
            assert isinstance(node, ast.Call)
            arguments = {k.arg: _lists(ast.literal_eval(k.value)) for k in node.keywords}
        except SyntaxError:
            decoded.append((UNSUPPORTED, {}))
            continue
        decoded.append((ast.unparse(node.func), arguments))
    return decoded


def _lists(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("text", TEXTS)
def test_decode_step_reads_what_bfcls_decoder_reads(text: str) -> None:
    theirs = bfcl_decode(text)
    try:
        ours: list[tuple[str, dict[str, Any]]] | None = decode_step(text)
    except DecodeFailure:
        ours = None
    assert ours == theirs


def test_the_three_quirks() -> None:
    assert decode_step("cd('project')") == [("cd", {})]
    assert decode_step("ls(a=true)") == [("ls", {"a": "true"})]
    with pytest.raises(DecodeFailure):
        decode_step("'cd(folder=\"x\")'")
    # a turn that is one string is iterated by character: nothing decodes
    assert decode_turn("[cd(folder='x')]") == []
    assert decode_turn(["[cd(folder='x')]", "bad(", "pwd()"]) == [("cd", {"folder": "x"}), ("pwd", {})]
    assert decode_turn(["[cd(folder='x')]", {"cd": "{}"}]) == [("cd", {"folder": "x"})]


@pytest.mark.parametrize(
    "text",
    [
        "f(a=g(x=1))",  # a nested call BFCL would run
        "f(a={'k': {'j': 1}})",  # a dict of dicts renders as one
        "f(a=b'x')",
        "f(a=1j)",
        "f(a=1e400)",
        "f(a=[{1: 2}])",
        'f(a={"it\'s": 1})',
        "f(a=len('x') + 1)",
        "f(a='x' * 1000000)",
        "f(a=2 ** 100000)",
        "f(**kw)",  # rendered as f(None='kw'), which does not run
    ],
)
def test_values_bfcl_would_evaluate_are_unsupported_calls(text: str) -> None:
    assert decode_step(text) == [(UNSUPPORTED, {})]


def test_unsupported_value_does_not_hide_a_later_failure() -> None:
    with pytest.raises(DecodeFailure):
        decode_step("f(a=g(x=1), b={})")
    with pytest.raises(DecodeFailure):
        decode_step("[f(a=b'x'), g(a=lambda: 1)]")
    with pytest.raises(DecodeFailure):
        decode_step("f(**kw, b={})")


def _write(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "BFCL_v4_multi_turn_base_result.json"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_importer_records_bfcls_reading_only_where_it_differs(tmp_path: Path) -> None:
    checker = FinalSuccess()
    task = load_task("multi_turn_base_1")
    truth = [[f"[{', '.join(turn)}]"] for turn in task.ground_truth]
    plain = [turn[0] for turn in truth]  # the same texts, each turn one string
    path = _write(
        tmp_path,
        [{"id": "multi_turn_base_1", "result": truth}, {"id": "multi_turn_base_1", "result": plain}],
    )
    as_steps, as_string = [u for u in read_result_file(path) if isinstance(u, Rollout)]
    assert "bfcl_calls" not in as_steps.metadata  # BFCL reads exactly the actions
    assert as_string.metadata["bfcl_calls"] == [[], [], [], []]
    assert as_steps.actions == as_string.actions  # the prefix replay reads both alike
    assert checker.check_rollout(task, as_steps).success == 1
    check = checker.check_rollout(task, as_string)
    assert check.success == 0
    assert "empty_turn_model_response" in check.reason
    decoded = [u for u in read_result_file(path, prompting_y="decoded") if isinstance(u, Rollout)]
    assert [checker.check_rollout(task, r).success for r in decoded] == [1, 1]
    assert decoded[1].metadata["prompting_y"] == "decoded"
    assert "bfcl_calls" not in decoded[1].metadata


def test_malformed_bfcl_calls_is_an_input_error() -> None:
    checker = FinalSuccess()
    task = load_task("multi_turn_base_1")
    for bad in ("x", [["pwd"]], [[["pwd", "{}"]]], [[[1, {}]]]):
        rollout = Rollout("bfcl", task.id, "m", "prompting", (), metadata={"bfcl_calls": bad})
        with pytest.raises(InputError, match="bfcl_calls"):
            checker.check_rollout(task, rollout)
    wrong_turns = Rollout("bfcl", task.id, "m", "p", (), metadata={"bfcl_calls": [[]], "turns": 4})
    with pytest.raises(InputError, match="turns"):
        checker.check_rollout(task, wrong_turns)
