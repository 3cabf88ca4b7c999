"""BFCL result files -> rollouts: FC and prompting formats, undecodable calls, identity, real fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("bfcl_eval")

from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess, load_task
from prefix_exec.errors import InputError
from prefix_exec.importers.bfcl import (
    UNPARSED,
    category_of_file,
    decode_result,
    ground_truth_rollout,
    identity,
    read_result_file,
    read_results,
    result_files,
)
from prefix_exec.replay import replay, with_success
from prefix_exec.trajectory import FailureLabel, Rollout, Skipped


def test_fc_steps_become_calls_with_turns_and_ids() -> None:
    result = [[[{"cd": '{"folder": "document"}'}, {"ls": {"a": True}}], [{"pwd": "{}"}]], [], [[{"mkdir": "{bad"}]]]
    calls, fmt = decode_result(result)
    assert fmt == "FC"
    assert [(c.name, dict(c.arguments), c.turn, c.call_id) for c in calls[:3]] == [
        ("cd", {"folder": "document"}, 0, "t0.s0.c0"),
        ("ls", {"a": True}, 0, "t0.s0.c1"),
        ("pwd", {}, 0, "t0.s1.c0"),
    ]
    assert calls[3].turn == 2
    assert calls[3].parse_error
    assert "not JSON" in calls[3].parse_error


def test_text_replies_in_an_fc_result_are_no_actions() -> None:
    """BFCL's OpenAI handlers end each FC turn with the model's text: BFCL's FC decoder skips it, even when it
    reads like a call, and the result stays FC."""
    result = [[[{"cd": '{"folder": "document"}'}], "Done."], ["Which file do you mean?"], [[{"ls": "{}"}], "[pwd()]"]]
    calls, fmt = decode_result(result)
    assert fmt == "FC"
    assert [(c.name, c.turn, c.call_id) for c in calls] == [("cd", 0, "t0.s0.c0"), ("ls", 2, "t2.s0.c0")]
    calls, fmt = decode_result([["[pwd()]"], "Done."])  # strings only: prompting steps
    assert (fmt, [c.name for c in calls]) == ("prompting", ["pwd"])
    assert decode_result([[], []]) == ([], "FC")


def test_prompting_strings_decode_or_become_parse_errors() -> None:
    calls, fmt = decode_result(
        [
            '[cd(folder="document"), sort("final_report.pdf")]',
            "No function matches the user's request.",  # prose: a text reply, no action
            "[mkdir(dir_name='a')]\n[touch(file_name='b')]",  # two lists: not one call list
            ["```\n[pwd()]\n```", "ls(a=True)"],  # per-step strings, fences and missing brackets
            "[cd(folder=x)]",  # a name, not a literal
        ]
    )
    assert fmt == "prompting"
    summary = [(c.name, dict(c.arguments), c.turn, c.parse_error is not None) for c in calls]
    assert summary == [
        ("cd", {"folder": "document"}, 0, False),
        ("sort", {"file_name": "final_report.pdf"}, 0, False),
        (UNPARSED, {}, 2, True),
        ("pwd", {}, 3, False),
        ("ls", {"a": True}, 3, False),
        (UNPARSED, {}, 4, True),
    ]
    assert "variable name is not a literal" in (calls[-1].parse_error or "")


def test_unparsed_call_is_a_schema_failure_at_its_position() -> None:
    calls, _ = decode_result(["[cd(folder='document')]", "[ls()]", "[cd(folder=='x')]", "[pwd()]"])
    record = replay(Rollout("bfcl", "multi_turn_base_0", "m", "x", tuple(calls), success=0), BfclEnvironment())
    assert (record.fed, record.label, record.T) == (3, FailureLabel.SCHEMA, 4)


def test_category_and_identity_from_names(tmp_path: Path) -> None:
    assert category_of_file(Path("BFCL_v4_multi_turn_miss_func_result.json")) == "miss_func"
    with pytest.raises(InputError):
        category_of_file(Path("results.json"))
    folder = tmp_path / "gpt-4o-2024-11-20-FC"
    folder.mkdir()
    assert identity(folder / "f.json", None, None, "FC") == ("gpt-4o-2024-11-20", "FC")
    assert identity(tmp_path / "f.json", None, None, "prompting") == (tmp_path.name, "prompting")
    assert identity(folder / "f.json", "M", "X", "FC") == ("M", "X")
    # BFCL v4 writes result/<model>/multi_turn/BFCL_v4_multi_turn_<category>_result.json
    group = folder / "multi_turn"
    group.mkdir()
    assert identity(group / "f.json", None, None, "FC") == ("gpt-4o-2024-11-20", "FC")
    written = group / "BFCL_v4_multi_turn_base_result.json"
    written.write_text("", encoding="utf-8")
    (folder / "other").mkdir()
    (folder / "other" / "BFCL_v4_multi_turn_base_result.json").write_text("", encoding="utf-8")
    assert result_files([folder]) == [written]  # its multi_turn folder, no further
    assert result_files([group]) == [written]


def test_bad_lines_are_skipped_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "BFCL_v4_multi_turn_base_result.json"
    rows = [
        "not json",
        json.dumps({"id": "multi_turn_base_0"}),
        json.dumps({"id": "multi_turn_miss_func_0", "result": []}),
        json.dumps({"id": "multi_turn_base_1", "result": "Error: inference failed"}),
        json.dumps({"id": "multi_turn_base_2", "result": [[[{"ls": "{}"}]]]}),
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    units = list(read_result_file(path, model="m", method="x"))
    assert [type(u).__name__ for u in units] == ["Skipped", "Skipped", "Skipped", "Rollout", "Rollout"]
    assert isinstance(units[0], Skipped)
    assert units[0].where.endswith(":1")
    inference_error = units[3]
    assert isinstance(inference_error, Rollout)
    assert inference_error.metadata["turns"] == 0
    checker = FinalSuccess()
    assert checker.check_rollout(load_task("multi_turn_base_1"), inference_error).success == 0


def test_real_fc_fixture(shared_data: Path) -> None:
    rollouts = [u for u in read_results([shared_data / "bfcl" / "glyphh-ada-1.1"]) if isinstance(u, Rollout)]
    assert len(rollouts) == 800
    assert {r.model for r in rollouts} == {"glyphh-ada-1.1"}
    assert {r.method for r in rollouts} == {"FC"}
    first = next(r for r in rollouts if r.task_id == "multi_turn_base_1")
    assert [c.name for c in first.actions[:2]] == ["pwd", "ls"]
    assert first.metadata["turns"] == 4


@pytest.mark.slow
def test_real_prompting_fixture_scores_without_crash(shared_data: Path) -> None:
    env = BfclEnvironment()
    checker = FinalSuccess(env.templates)
    units = list(read_results([shared_data / "bfcl" / "airev-agent-0.8b"]))
    assert len(units) == 800
    assert all(isinstance(u, Rollout) for u in units)
    unparsed = labels = 0
    for rollout in units:
        assert isinstance(rollout, Rollout)
        unparsed += sum(c.parse_error is not None for c in rollout.actions)
        y = checker.check_rollout(load_task(rollout.task_id), rollout).success
        record = replay(with_success(rollout, y), env)
        labels += record.label is not None
    assert unparsed > 50  # the fixture is mostly malformed
    assert labels > 700


def test_ground_truth_rollout_binds_positional_arguments() -> None:
    rollout = ground_truth_rollout(load_task("multi_turn_base_0"))
    sort = next(c for c in rollout.actions if c.name == "sort")
    assert dict(sort.arguments) == {"file_name": "final_report.pdf"}
    assert sort.turn == 2
    assert rollout.metadata["turns"] == 4
    assert rollout.model == "ground_truth"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=15,
)
call_texts = st.sampled_from(["ls", "cd", "mkdir", "power", "_x", "os.system", "[", "(", ")", "'", "a=", "1", ","])


strings = st.text(max_size=40) | st.lists(call_texts, max_size=6).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(json_values | st.lists(strings), max_size=5))
def test_any_result_shape_decodes_and_scores_without_crash(result: list[object]) -> None:
    actions, _ = decode_result(result)
    # each call keeps the turn it came from, in order
    turns = [c.turn for c in actions]
    assert turns == sorted(turns)
    assert all(0 <= t < len(result) for t in turns)
    rollout = Rollout("bfcl", "multi_turn_base_0", "m", "x", tuple(actions), metadata={"turns": len(result)})
    env = BfclEnvironment(time_limit=1.0)
    y = FinalSuccess(env.templates).check_rollout(load_task("multi_turn_base_0"), rollout).success
    record = replay(with_success(rollout, y), env)
    assert record.T == max(len(actions), 1)
    # a call that could not be decoded is a schema failure at its depth at the latest
    unparsed = next((i for i, c in enumerate(actions, 1) if c.parse_error is not None), None)
    if unparsed is not None:
        assert record.fed <= unparsed
        assert record.label is not None


def test_pathological_json_is_a_parse_error_not_a_crash(tmp_path: Path) -> None:
    huge = "9" * 5000
    calls, _ = decode_result([[[{"ls": f'{{"a": {huge}}}'}, {"cd": "[" * 100000 + "]" * 100000}]]])
    assert [c.parse_error is not None for c in calls] == [True, True]
    path = tmp_path / "BFCL_v4_multi_turn_base_result.json"
    path.write_text(f'{{"id": "multi_turn_base_0", "result": {huge}}}\n', encoding="utf-8")
    (unit,) = read_result_file(path)
    assert isinstance(unit, Skipped)
    assert "not JSON" in unit.error
