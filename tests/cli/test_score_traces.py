"""``score traces`` on traces real frameworks wrote (tests/data/traces, made by scripts/traces/generate.py): the
shop's seven conversations of examples/transcripts, run by four framework/instrumentation pairs, score to the
same T, FED and label as their transcript form; the command's identity options, its notes and its errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "tests" / "data" / "traces"
TOOLS = ROOT / "examples" / "transcripts" / "tools.json"
#: Each pair's file and the span attribute its run put Y in.
PAIRS = {
    "otel-genai.jsonl": "shop.success",  # openai + opentelemetry-instrumentation-openai-v2, execute_tool spans
    "otel-genai-events.jsonl": "shop.success",  # the same, content in log events (resourceLogs), not on spans
    "openinference-openai.jsonl": "metadata.success",  # openai + openinference-instrumentation-openai
    "agents-sdk.jsonl": "metadata.success",  # the Agents SDK's own tracing, a processor's JSON lines
    "agents-sdk-ingest.json": "metadata.success",  # the same items as the SDK's ingest payload
    "openinference-agents.jsonl": "metadata.success",  # the Agents SDK + openinference-instrumentation-openai-agents
    "pydantic-ai.jsonl": "shop.success",  # pydantic-ai's built-in instrumentation (GenAI conventions, tools' spans)
}
#: (task, T, FED, label, Y): examples/transcripts' table (tests/cli/test_score_transcripts.py).
EXPECTED = [
    ("cancel-1", 3, 4, None, 1),  # a valid run
    ("cancel-2", 3, 2, "schema", 1),  # a call the tool rejected for its arguments (reason outside the enum)
    ("status-3", 3, 4, None, 1),  # two parallel calls in one model turn, then a second user turn
    ("status-4", 2, 2, "schema", 0),  # a tool that does not exist
    ("faq-5", 1, 2, None, 1),  # no tool call
    ("cancel-6", 2, 1, "dependency", 0),  # an invented order id, the tool's recorded error
    ("email-7", 1, 1, "schema", 0),  # a required argument missing
]
#: The Agents SDK redacts a failed tool's error from its reply and its span ("An error occurred while running the
#: tool. Please try again."): the span's error flag is still there, but the text no longer says "not found".
AGENTS_CANCEL_6 = ("cancel-6", 2, 1, "precondition", 0)


def expected(name: str) -> list[tuple[Any, ...]]:
    if "agents" in name:
        return [AGENTS_CANCEL_6 if row[0] == "cancel-6" else row for row in EXPECTED]
    return EXPECTED


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def scored(path: Path) -> list[tuple[Any, ...]]:
    return [(r["task_id"], r["T"], r["fed"], r["label"], r["success"]) for r in rows(path)]


def score(*argv: str) -> int:
    return main(["score", "traces", *argv, "--workers", "1"])


@pytest.mark.parametrize("name", PAIRS)
def test_every_pair_scores_the_shop_conversations(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    argv = [str(TRACES / name), "--tools", str(TOOLS), "--success-field", PAIRS[name]]
    if name == "openinference-agents.jsonl":
        argv += ["--task-id-field", "session.id"]
    assert score(*argv, "--out", str(out)) == 0
    assert scored(out) == expected(name)
    assert "7 traces read as" in capsys.readouterr().err
    assert all(r["model"] == "gpt-4o-mini" and "success_given" not in r["metadata"] for r in rows(out))


@pytest.mark.parametrize(
    "pair", ["otel-genai", "otel-genai-events", "openinference-openai", "agents-sdk", "openinference-agents"]
)
def test_the_trace_and_the_transcript_of_a_run_score_alike(pair: str, tmp_path: Path) -> None:
    """Each run's transcript (the messages its agent sent; the SDK's to_input_list()) against its trace."""
    name = f"{pair}.jsonl"
    argv = [str(TRACES / name), "--tools", str(TOOLS), "--success-field", PAIRS[name]]
    assert score(*argv, "--out", str(tmp_path / "trace.jsonl")) == 0  # task ids: the default attributes
    transcript = ["score", "transcripts", str(TRACES / f"transcripts-{pair}.jsonl"), "--tools", str(TOOLS)]
    assert main([*transcript, "--workers", "1", "--out", str(tmp_path / "transcript.jsonl")]) == 0
    trace = {r[0]: r[1:4] for r in scored(tmp_path / "trace.jsonl")}
    told = {r[0]: r[1:4] for r in scored(tmp_path / "transcript.jsonl")}
    if "agents" not in pair:
        assert trace == told
        return
    # The SDK's transcript lacks two things its trace holds: the aborted run of status-4 (the SDK raised on the
    # unknown tool, so to_input_list() never had the call) and cancel-6's error flag (Responses items have none).
    differ = {task for task in trace if trace[task] != told[task]}
    assert differ == {"status-4", "cancel-6"}
    assert told["status-4"] == (1, 2, None) and told["cancel-6"] == (2, 3, None)


def test_without_success_field_y_is_absent_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    assert score(str(TRACES / "otel-genai.jsonl"), "--tools", str(TOOLS), "--out", str(out)) == 0
    assert "no --success-field" in capsys.readouterr().err
    found = rows(out)
    assert [r["success"] for r in found] == [None] * 7  # "success": null, not 0
    assert all("success_given" not in r["metadata"] for r in found)
    # T, FED and label do not depend on Y: the same as with --success-field
    assert [r[:4] for r in scored(out)] == [r[:4] for r in EXPECTED]


def test_without_tools_the_traces_own_tool_definitions_are_the_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OpenInference's model spans carry llm.tools: schema checks only, and the records say so."""
    out = tmp_path / "out.jsonl"
    argv = [str(TRACES / "openinference-openai.jsonl"), "--success-field", "metadata.success"]
    assert score(*argv, "--out", str(out)) == 0
    assert scored(out) == EXPECTED
    assert "only schema checks" in capsys.readouterr().err
    assert all("spec_note" in r["metadata"] for r in rows(out))


def test_a_trace_without_tools_or_a_spec_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The GenAI chat spans of openai-v2 carry no tool definitions: each trace with calls is unscorable."""
    out = tmp_path / "out.jsonl"
    assert score(str(TRACES / "otel-genai.jsonl"), "--keep-going", "--out", str(out)) == 2  # 6 units unscorable
    assert [r["task_id"] for r in rows(out)] == ["faq-5"]
    err = capsys.readouterr().err
    assert "nothing to check its tool calls against" in err and "otel-genai.jsonl:" in err


def test_workers_write_the_same_records(tmp_path: Path) -> None:
    argv = [str(TRACES / "agents-sdk.jsonl"), str(TRACES / "otel-genai.jsonl"), "--tools", str(TOOLS)]
    assert main(["score", "traces", *argv, "--workers", "1", "--out", str(tmp_path / "one.jsonl")]) == 0
    assert main(["score", "traces", *argv, "--workers", "2", "--out", str(tmp_path / "two.jsonl")]) == 0
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()


def test_a_bad_line_is_named_and_the_rest_scored_with_keep_going(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (TRACES / "otel-genai.jsonl").read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "\n".join([lines[0], '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 7}]}]}]}', *lines[1:]]) + "\n"
    )
    out = tmp_path / "out.jsonl"
    assert score(str(bad), "--tools", str(TOOLS), "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:2" in err and "resourceSpans[0].scopeSpans[0].spans[0].traceId" in err
    assert "Traceback" not in err
    assert score(str(bad), "--tools", str(TOOLS), "--keep-going", "--out", str(tmp_path / "k.jsonl")) == 2
    assert len(rows(tmp_path / "k.jsonl")) == 7


def test_a_named_attribute_that_no_span_carries_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(TRACES / "agents-sdk.jsonl"), "--tools", str(TOOLS), "--task-id-field", "nope"]
    assert score(*argv, "--out", str(tmp_path / "o.jsonl")) == 2
    assert "no span carries the attribute 'nope'" in capsys.readouterr().err


def test_help_names_the_formats(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["score", "traces", "--help"])
    out = capsys.readouterr().out
    assert "OTLP/JSON" in out and "Agents SDK" in out and "LangSmith" in out and "--success-field" in out


def test_metrics_shows_y_absent_as_na_and_the_rest_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real fixture scored without --success-field: metrics says success and RR are not recorded (n/a with the
    count, null in JSON, never 0.00), and every figure that does not use Y equals the one of the same traces
    scored with their Y."""
    name = "agents-sdk.jsonl"
    without, given = tmp_path / "without.jsonl", tmp_path / "given.jsonl"
    assert score(str(TRACES / name), "--tools", str(TOOLS), "--out", str(without)) == 0
    assert score(str(TRACES / name), "--tools", str(TOOLS), "--success-field", PAIRS[name], "--out", str(given)) == 0
    capsys.readouterr()
    assert main(["metrics", str(without), "--resamples", "50"]) == 0
    text = capsys.readouterr()
    assert "success: not recorded for 7 of 7 records" in text.err
    row = next(line for line in text.out.splitlines() if line.startswith("| tools |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[-2:] == ["n/a (not recorded for 4 of 4)", "n/a (not recorded for 7 of 7)"]  # RR, success
    assert "0.00 [" not in cells[-1]
    docs = []
    for path in (without, given):
        assert main(["metrics", str(path), "--resamples", "50", "--format", "json"]) == 0
        docs.append(json.loads(capsys.readouterr().out)["conditions"][0])
    absent, known = docs
    assert (absent["success"], absent["RR"], absent["decomposition"]) == (None, None, None)
    assert (absent["success_known"], absent["RR_known"], absent["RR_eligible"]) == (0, 0, 4)
    assert known["success_known"] == 7 and known["success"]["point"] == pytest.approx(4 / 7)
    for field in ("N", "TER", "AUC_PEC", "mean_FED", "RR_eligible", "PEC", "PEC_CI", "PEC_elig", "n_k", "labels"):
        assert absent[field] == known[field], field


def test_resume_reads_back_records_without_y(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--resume keeps the records already written (success null read back as absent, for the consistency report)
    and scores the rest: the file is the one a single run writes."""
    argv = [str(TRACES / "otel-genai.jsonl"), "--tools", str(TOOLS)]
    whole, part = tmp_path / "whole.jsonl", tmp_path / "part.jsonl"
    assert score(*argv, "--out", str(whole)) == 0
    part.write_text("".join(whole.read_text().splitlines(keepends=True)[:3]))
    capsys.readouterr()
    assert score(*argv, "--resume", "--out", str(part)) == 0
    assert "3 already in the output were kept" in capsys.readouterr().err
    assert part.read_bytes() == whole.read_bytes()
    assert json.loads((tmp_path / "part.jsonl.consistency.json").read_text()) == json.loads(
        (tmp_path / "whole.jsonl.consistency.json").read_text()
    )
