"""``prefix-exec score inspect`` on a real inspect log of inspect_evals' BFCL, made here by ``inspect eval``.

The log comes from running ``inspect_evals/bfcl`` (multi_turn_base and miss_func, three samples) offline against
the loopback scripted server. The same scripted calls, written as a BFCL FC result file, go through ``score
bfcl``: both must give the same records (every field but ``metadata``, which names the source, and the
observations, which only the log has). Bad input: a corrupt log, an unknown task, a sample without score or
without tool calls.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fakes.inspect_logs import BFCL_TASKS as TASKS
from fakes.inspect_logs import BfclScript, convert_to_json
from prefix_exec.cli import main

pytestmark = pytest.mark.slow


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what only one of the two inputs has: metadata (the source) and observations."""
    kept = {k: v for k, v in record.items() if k != "metadata"}
    kept["actions"] = [{k: v for k, v in a.items() if k != "observation"} for a in record["actions"]]
    return kept


def score_inspect(log: Path, out: Path, *extra: str) -> int:
    return main(["score", "inspect", str(log), "--out", str(out), "--model", "m", "--method", "x", *extra])


@dataclass(frozen=True)
class Scored:
    """The whole log scored once with the default options: the records file and what was printed on stderr."""

    out: Path
    err: str


@pytest.fixture(scope="module")
def scored(inspect_bfcl: tuple[Path, BfclScript], tmp_path_factory: pytest.TempPathFactory) -> Scored:
    log, _ = inspect_bfcl
    out = tmp_path_factory.mktemp("scored") / "inspect.jsonl"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = score_inspect(log, out)
    assert code == 0, err.getvalue()
    return Scored(out, err.getvalue())


def test_records_equal_those_of_the_same_calls_in_a_result_file(
    inspect_bfcl: tuple[Path, BfclScript], scored: Scored, tmp_path: Path
) -> None:
    _, plan = inspect_bfcl
    out = scored.out
    assert "regrade (BFCL's multi-turn rule): 3/3 agree with the log's Y" in scored.err
    native_dir = tmp_path / "native"
    plan.result_file(native_dir, "base")
    plan.result_file(native_dir, "miss_func")
    native = tmp_path / "native.jsonl"
    assert main(["score", "bfcl", str(native_dir), "--out", str(native), "--model", "m", "--method", "x"]) == 0
    ours = sorted((comparable(r) for r in rows(out)), key=lambda r: r["task_id"])
    theirs = sorted((comparable(r) for r in rows(native)), key=lambda r: r["task_id"])
    assert [r["task_id"] for r in ours] == sorted(TASKS)
    assert ours == theirs
    by_task = {r["task_id"]: r for r in rows(out)}
    base_1, base_2, miss_func = (by_task[t] for t in TASKS)
    assert (base_1["fed"], base_1["label"], base_1["success"]) == (4, "schema", 1)
    assert [a["call_id"] for a in base_1["actions"][:4]] == ["t0.s0.c0", "t0.s0.c1", "t1.s0.c0", "t1.s1.c0"]
    assert (base_2["fed"], base_2["T"] + 1, base_2["success"]) == (base_2["T"] + 1, base_2["T"] + 1, 0)
    assert (miss_func["fed"], miss_func["label"], miss_func["success"]) == (6, "schema", 1)
    assert miss_func["actions"][5]["name"] == "sort"
    assert miss_func["actions"][5]["turn"] == 2
    # the log's own record of each call: inspect refused the unknown tool and the missing argument
    assert miss_func["actions"][5]["observation"]["error"] is True
    assert "sort" in miss_func["actions"][5]["observation"]["content"]
    assert base_1["actions"][3]["observation"]["error"] is True
    assert base_1["metadata"]["turns"] == 4
    assert base_1["metadata"]["regrade"] == {"success": 1}
    assert base_1["metadata"]["inspect"]["sample_id"] == "multi_turn_base_1"


def test_json_log_gives_the_same_records(inspect_bfcl: tuple[Path, BfclScript], scored: Scored, tmp_path: Path) -> None:
    log, _ = inspect_bfcl
    as_json = convert_to_json(log, tmp_path / "json")
    eval_out, json_out = scored.out, tmp_path / "json.jsonl"
    assert score_inspect(as_json, json_out) == 0

    def strip(record: dict[str, Any]) -> dict[str, Any]:
        metadata = {k: v for k, v in record["metadata"].items() if k not in ("source", "inspect")}
        return {**record, "metadata": metadata}

    assert [strip(r) for r in rows(eval_out)] == [strip(r) for r in rows(json_out)]


def test_corrupt_log_is_exit_2_and_keep_going_scores_the_rest(
    inspect_bfcl: tuple[Path, BfclScript], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, _ = inspect_bfcl
    broken = tmp_path / "broken.eval"
    data = log.read_bytes()
    broken.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out.jsonl"
    assert score_inspect(broken, out) == 2
    err = capsys.readouterr().err
    assert "broken.eval: not a readable inspect log" in err
    assert "Traceback" not in err
    assert not out.exists()
    assert main(["score", "inspect", str(broken), str(log), "--out", str(out), "--keep-going"]) == 2
    err = capsys.readouterr().err
    assert "broken.eval" in err
    assert "scored 3 rollouts" in err
    assert len(rows(out)) == 3


def _rewritten(log: Path, target: Path, change: Any) -> Path:
    """A copy of ``log`` changed by ``change(EvalLog)``, written by inspect's own writer."""
    from inspect_ai.log import read_eval_log, write_eval_log

    parsed = read_eval_log(str(log))
    change(parsed)
    write_eval_log(parsed, str(target))
    return target


def test_another_task_is_scored_on_its_own_tool_lists_or_on_a_spec(
    inspect_bfcl: tuple[Path, BfclScript], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, _ = inspect_bfcl

    def rename(parsed: Any) -> None:
        parsed.eval.task = "helpdesk"

    other = _rewritten(log, tmp_path / "helpdesk.eval", rename)
    out = tmp_path / "out.jsonl"
    # without --tools each sample is checked against the tools its model calls were offered (schema checks only)
    assert score_inspect(other, out) == 0
    err = capsys.readouterr().err
    assert "no --tools: each sample of a task other than BFCL and tau2 is checked against its own tool list" in err
    own = {r["task_id"]: r for r in rows(out)}
    assert sorted(own) == sorted(TASKS)
    assert {r["metadata"]["spec_note"] for r in own.values()} == {
        "schema checks only: the sample's own tools list served as the spec (no --tools)"
    }
    # mv without its required destination: our schema check, at the step inspect refused too
    base_1 = own["multi_turn_base_1"]
    assert (base_1["fed"], base_1["label"], base_1["verdicts"][3]["notes"]) == (4, "schema", ["source: our check"])
    assert "'destination' is a required property" in base_1["reason"]
    # sort before it is revealed: in the sample's list (offered later), but inspect refused the call then
    miss_func = own["multi_turn_miss_func_0"]
    assert (miss_func["fed"], miss_func["actions"][5]["name"]) == (6, "sort")
    assert miss_func["verdicts"][5]["notes"][0] == "source: recorded outcome (error flag)"
    out.unlink()
    # a spec declaring only three of the file system's tools
    spec = tmp_path / "tools.json"
    tools = [
        {"name": "ls", "parameters": {"type": "object", "properties": {"a": {"type": "boolean"}}}},
        {"name": "pwd", "parameters": {"type": "object", "properties": {}}},
        {"name": "cd", "parameters": {"type": "object", "properties": {"folder": {"type": "string"}}}},
    ]
    spec.write_text(json.dumps({"name": "files", "tools": tools}), encoding="utf-8")
    capsys.readouterr()
    assert score_inspect(other, out, "--tools", str(spec)) == 0
    records = {r["task_id"]: r for r in rows(out)}
    assert {r["dataset"] for r in records.values()} == {"helpdesk"}
    base_1 = records["multi_turn_base_1"]
    assert [a["name"] for a in base_1["actions"][:4]] == ["ls", "pwd", "cd", "mv"]
    assert (base_1["fed"], base_1["label"], base_1["success"]) == (4, "schema", 1)  # Y is still the log's
    assert [a["turn"] for a in base_1["actions"][:4]] == [0, 0, 1, 1]
    assert base_1["actions"][0]["call_id"] == "call_t0_s0_0"  # inspect's own ids on this path
    assert "declares argument schemas only" in capsys.readouterr().err
    # the same tools as an OpenAI tools array give the same records
    openai_tools = tmp_path / "openai-tools.json"
    openai_tools.write_text(json.dumps([{"type": "function", "function": t} for t in tools]), encoding="utf-8")
    again = tmp_path / "again.jsonl"
    assert score_inspect(other, again, "--tools", str(openai_tools)) == 0
    assert [{k: v for k, v in r.items() if k != "metadata"} for r in rows(again)] == [
        {k: v for k, v in r.items() if k != "metadata"} for r in rows(out)
    ]


def test_samples_without_score_or_tool_calls(
    inspect_bfcl: tuple[Path, BfclScript], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, _ = inspect_bfcl

    def damage(parsed: Any) -> None:
        first, second = parsed.samples[0], parsed.samples[1]
        first.scores = None
        for message in second.messages:
            if message.role == "assistant":
                message.tool_calls = None
        second.messages = [m for m in second.messages if m.role != "tool"]

    damaged = _rewritten(log, tmp_path / "damaged.eval", damage)
    out = tmp_path / "out.jsonl"
    assert score_inspect(damaged, out) == 2
    err = capsys.readouterr().err
    assert "the sample has no score" in err
    assert "Traceback" not in err
    assert score_inspect(damaged, out, "--keep-going", "--overwrite") == 2
    err = capsys.readouterr().err
    assert "sample multi_turn_base_1 epoch 1: unscorable: the sample has no score" in err
    records = {r["task_id"]: r for r in rows(out)}
    assert sorted(records) == ["multi_turn_base_2", "multi_turn_miss_func_0"]
    # a sample whose model never called a tool is a no-tool rollout (T = 1), as in a result file
    assert records["multi_turn_base_2"]["no_tool"] is True
    assert records["multi_turn_base_2"]["T"] == 1


def test_resume_keeps_the_records_and_their_regrade(
    inspect_bfcl: tuple[Path, BfclScript], scored: Scored, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, _ = inspect_bfcl
    out = tmp_path / "out.jsonl"
    first = scored.out.read_text(encoding="utf-8").splitlines()
    out.write_text("\n".join(first[:1]) + "\n", encoding="utf-8")  # as if killed after the first record
    assert score_inspect(log, out, "--resume") == 0
    err = capsys.readouterr().err
    assert "1 already in the output were kept (--resume)" in err
    assert "regrade (BFCL's multi-turn rule): 3/3 agree" in err  # counted over the whole output
    assert out.read_text(encoding="utf-8").splitlines() == first
