"""``score traces`` on runs the model server failed, as real frameworks traced them (tests/data/traces/crash, made by
``scripts/traces/generate.py --crash``; the plan in scripts/traces/crash.py): a run that a 500, a timeout or a dropped
connection ended is an infrastructure failure, left out by default (counted and named on stderr and in the summary)
or kept under the label 'infrastructure', never one of the five; a 500 the framework retried, and a 400 (the
request's fault), are the agent's ordinary rollouts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.importers.traces import TraceFile, TraceIdentity
from prefix_exec.importers.traces.grouping import Trace, traces
from prefix_exec.importers.transcripts import Identity, Transcript
from prefix_exec.records.infrastructure import LABEL, system_failure
from prefix_exec.trajectory import FailureLabel

ROOT = Path(__file__).resolve().parents[2]
CRASH = ROOT / "tests" / "data" / "traces" / "crash"
TOOLS = ROOT / "examples" / "transcripts" / "tools.json"
#: Each pair's file and the options its identity needs (as tests/cli/test_score_traces.py gives them).
PAIRS = {
    "otel-genai": ["--success-field", "shop.success"],
    "otel-genai-events": ["--success-field", "shop.success"],
    "openinference-openai": ["--success-field", "metadata.success"],
    "agents-sdk": ["--success-field", "metadata.success"],
    "openinference-agents": ["--success-field", "metadata.success", "--task-id-field", "session.id"],
    "pydantic-ai": ["--success-field", "shop.success"],
}
#: The runs the server ended (task, T, FED, Y, what the failed call's text says), in the file's order.
CRASHED = [
    ("cancel-1", 2, 3, 1, "500"),  # a 500 after find_order and get_order ran
    ("cancel-2", 2, 2, 1, "timed out"),  # a timeout after the cancel_order the tool rejected (replay: schema)
    ("cancel-6", 1, 1, 0, "Connection error"),  # a dropped connection after get_order's "not found"
]
#: The agent's rollouts: a 500 retried by the loop or the framework (then the run completed), and a 400.
ORDINARY = [("status-3", 3, 4, None, 1), ("email-7", 1, 1, "schema", 0)]
LEFT_OUT = "3 rollouts ended by an infrastructure failure (the system's, not the agent's) left out of PEC/FED/TER"
#: How the notes name them (dataset/task (model, method, trial)).
NAMED = [f"tools/{task} (gpt-4o-mini, default, trial 0)" for task, *_ in CRASHED]
NAMES = ", ".join(NAMED)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def figures(record: dict[str, Any]) -> tuple[Any, ...]:
    return record["task_id"], record["T"], record["fed"], record["label"], record["success"]


def score(pair: str, out: Path, *extra: str) -> int:
    argv = ["score", "traces", str(CRASH / f"{pair}.jsonl"), "--tools", str(TOOLS), *PAIRS[pair], *extra]
    return main([*argv, "--workers", "1", "--out", str(out)])


@pytest.mark.parametrize("pair", PAIRS)
def test_a_run_the_server_ended_is_left_out_by_default(
    pair: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    assert score(pair, out) == 0  # the system's failure is no input error
    assert [figures(r) for r in rows(out)] == ORDINARY
    assert all("infrastructure" not in r["metadata"] for r in rows(out))
    err = capsys.readouterr().err
    assert f"prefix-exec: infrastructure: {LEFT_OUT}: N = 2 without them, 5 with them" in err
    assert f"(--keep-infrastructure-failures counts them under the label '{LABEL}'): {NAMES}\n" in err
    assert "scored 2 rollouts (1 fully executable); 3 ended by an infrastructure failure left out" in err


@pytest.mark.parametrize("pair", PAIRS)
def test_kept_they_are_counted_under_their_own_label(
    pair: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    assert score(pair, out, "--keep-infrastructure-failures") == 0
    err = capsys.readouterr().err
    assert "3 rollouts ended by an infrastructure failure (the system's, not the agent's) kept under the label" in err
    assert f"N = 5 with them, 2 without them: {NAMES}" in err
    found = {r["task_id"]: r for r in rows(out)}
    assert sorted(found) == sorted([c[0] for c in CRASHED] + [o[0] for o in ORDINARY])
    for task, t, fed, success, says in CRASHED:
        record = found[task]
        assert (record["T"], record["fed"], record["success"], record["label"]) == (t, fed, success, LABEL)
        text = record["metadata"]["infrastructure"]
        assert says in text and system_failure(text)
        assert record["reason"] == f"infrastructure failure (the system's, not the agent's): {text}"
    # What replay saw is kept in the verdicts: cancel-2's rejected cancel_order is still a schema rejection there,
    # and cancel-6's get_order the recorded refusal; the label is the system's all the same, never one of the five.
    assert [v["label"] for v in found["cancel-2"]["verdicts"]] == [None, "schema"]
    assert [v["label"] for v in found["cancel-6"]["verdicts"]] in (["dependency"], ["precondition"])
    assert all(found[task]["label"] not in {label.value for label in FailureLabel} for task, *_ in CRASHED)
    for expected in ORDINARY:
        assert figures(found[expected[0]]) == expected
        assert "infrastructure" not in found[expected[0]]["metadata"]


def test_metrics_says_what_was_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The records kept with their mark: metrics leaves them out by default and says so in its summary."""
    out = tmp_path / "out.jsonl"
    assert score("agents-sdk", out, "--keep-infrastructure-failures") == 0
    capsys.readouterr()
    assert main(["metrics", str(out), "--resamples", "50", "--format", "json"]) == 0
    text = capsys.readouterr()
    summary = json.loads(text.out)
    assert summary["infrastructure"] == {
        "label": LABEL,
        "kept": False,
        "count": 3,
        "N_with": 5,
        "N_without": 2,
        "rollouts": NAMED,
    }
    assert summary["conditions"][0]["N"] == 2
    assert LEFT_OUT in text.err


@pytest.mark.parametrize("pair", [p for p in PAIRS if p != "pydantic-ai"])
def test_the_retried_run_holds_its_failed_call(pair: str) -> None:
    """status-3's trace has the failed model call (a 500) before the calls that followed: the fixture tests what it
    means to. pydantic-ai's RetryOnModelErrors keeps both attempts in one chat span (the failed one in a
    'model request attempt' span that is no model span), so its trace holds no failed model call."""
    path = CRASH / f"{pair}.jsonl"
    task_field = "session.id" if pair == "openinference-agents" else None
    identity = Identity({}, {"model": "m"}, {"method": "default", "trial": None, "dataset": "d", "success": None})
    file = TraceFile(path, TraceIdentity(identity, task_field=task_field), tolerant=False)
    tasks = {t.rollout.metadata["trace_id"]: t.rollout.task_id for t in file if isinstance(t, Transcript)}
    found: dict[str, list[str | None]] = {}
    for trace in traces(file._spans(), str(path)):  # the spans of each trace, as the reader grouped them
        assert isinstance(trace, Trace)
        calls = sorted((s for s in trace.spans if s.kind == "llm"), key=lambda s: s.start)
        found[tasks[trace.trace_id]] = [s.model_error for s in calls]
    failed = [i for i, error in enumerate(found["status-3"]) if error]
    assert failed and max(failed) < len(found["status-3"]) - 1  # failed, then answered
    assert "500" in found["status-3"][failed[0]]
    assert all(found[task][-1] for task in ("cancel-1", "cancel-2", "cancel-6", "email-7"))


@pytest.mark.parametrize("pair", ["otel-genai", "otel-genai-events", "openinference-openai"])
def test_the_trace_and_the_transcript_of_a_crashed_run_score_alike(pair: str, tmp_path: Path) -> None:
    """Each run's transcript, with the exception that ended it as its ``error`` (as AgentDojo writes one)."""
    assert score(pair, tmp_path / "trace.jsonl", "--keep-infrastructure-failures") == 0
    transcript = ["score", "transcripts", str(CRASH / f"transcripts-{pair}.jsonl"), "--tools", str(TOOLS)]
    argv = [*transcript, "--keep-infrastructure-failures", "--workers", "1", "--out", str(tmp_path / "told.jsonl")]
    assert main(argv) == 0

    def scored(name: str) -> list[tuple[Any, ...]]:
        return [(r["task_id"], r["T"], r["fed"], r["label"]) for r in rows(tmp_path / name)]

    assert scored("trace.jsonl") == scored("told.jsonl")


@pytest.mark.parametrize("pair", ["agents-sdk", "openinference-agents"])
def test_the_agents_sdk_transcript_marks_the_same_runs(pair: str, tmp_path: Path) -> None:
    """The SDK's to_input_list() loses the turn a crash ended (as for status-4 in the shop's files), so only the
    marks agree: the runs the server ended, and no other."""
    transcript = ["score", "transcripts", str(CRASH / f"transcripts-{pair}.jsonl"), "--tools", str(TOOLS)]
    argv = [*transcript, "--keep-infrastructure-failures", "--workers", "1", "--out", str(tmp_path / "told.jsonl")]
    assert main(argv) == 0
    marked = [r["task_id"] for r in rows(tmp_path / "told.jsonl") if r["label"] == LABEL]
    assert marked == [task for task, *_ in CRASHED]
