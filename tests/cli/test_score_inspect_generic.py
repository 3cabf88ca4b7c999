"""``prefix-exec score inspect`` on real logs of tasks of no benchmark (tests/fakes/inspect_notes_task.py, run
here by ``inspect eval``): each sample's own tool list as its spec without ``--tools`` (an empty list
included), inspect's recorded tool errors as evidence, the no-tool rule, and stderr free of inspect's registry
noise while our own lines stay."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main

pytestmark = pytest.mark.slow

NOISE = ("Unexpected exception loading entrypoints", "Could not find sandbox environment plugin")


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score(log: Path, out: Path, *extra: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["score", "inspect", str(log), "--out", str(out), "--model", "m", "--method", "x", *extra])
    return code, err.getvalue()


def _rewritten(log: Path, target: Path, change: Any) -> Path:
    """A copy of ``log`` changed by ``change(EvalLog)``, written by inspect's own writer."""
    from inspect_ai.log import read_eval_log, write_eval_log

    parsed = read_eval_log(str(log))
    change(parsed)
    write_eval_log(parsed, str(target))
    return target


def test_each_sample_is_checked_against_its_own_tool_list(inspect_notes: tuple[Path, Path], tmp_path: Path) -> None:
    notes, _ = inspect_notes
    out = tmp_path / "notes.jsonl"
    code, err = score(notes, out)
    assert code == 0, err
    records = {r["task_id"]: r for r in rows(out)}
    assert sorted(records) == ["ask", "write"]
    write, ask = records["write"], records["ask"]
    # append_note(N-9) passes the schema checks; inspect recorded the tool's refusal (a ToolError), which rejects it
    assert [a["name"] for a in write["actions"]] == ["create_note", "append_note", "append_note"]
    assert (write["T"], write["fed"], write["label"], write["success"]) == (3, 2, "dependency", 1)
    assert write["actions"][1]["observation"] == {
        "content": "note N-9 not found",
        "error": True,
        "error_type": "unknown",
    }
    assert write["verdicts"][1]["notes"] == [
        "source: recorded outcome (error flag)",
        "classifier: not found -> dependency",
    ]
    assert (
        write["reason"]
        == 'the recorded outcome refused the call (the log\'s error flag) [unknown]: "note N-9 not found"'
    )
    assert write["verdicts"][0]["notes"] == ["source: our check"]
    # a sample answered without a call, on a tool list alone: executable, and its verdict says why
    assert (ask["no_tool"], ask["T"], ask["fed"], ask["success"]) == (True, 1, 2, 1)
    assert ask["verdicts"][0]["notes"] == [
        "source: our check",
        "no-tool rule: the spec is the sample's own tools list, which does not say that a task needs a tool",
    ]
    for record in (write, ask):
        assert record["metadata"]["spec_note"] == (
            "schema checks only: the sample's own tools list served as the spec (no --tools)"
        )
    assert write["metadata"]["tools_digest"] == ask["metadata"]["tools_digest"]
    assert "no --tools: each sample of a task other than BFCL and tau2 is checked against its own tool list" in err
    assert "consistency: 1 disagreement(s) (1 recorded-refusal) in 2 calls compared" in err
    report = json.loads(Path(f"{out}.consistency.json").read_text())
    assert [(e["task_id"], e["depth"], e["kind"]) for e in report] == [("write", 2, "recorded-refusal")]
    assert not any(noise in err for noise in NOISE)


def test_the_own_list_checks_the_arguments(inspect_notes: tuple[Path, Path], tmp_path: Path) -> None:
    notes, _ = inspect_notes

    def misspell(parsed: Any) -> None:
        (sample,) = [s for s in parsed.samples if s.id == "write"]
        for message in sample.messages:
            for call in getattr(message, "tool_calls", None) or ():
                if call.function == "create_note":
                    call.arguments = {"txt": "hi"}

    changed = _rewritten(notes, tmp_path / "changed.eval", misspell)
    out = tmp_path / "out.jsonl"
    code, err = score(changed, out)
    assert code == 0, err
    write = next(r for r in rows(out) if r["task_id"] == "write")
    assert (write["fed"], write["label"]) == (1, "schema")
    assert "'text' is a required property" in write["reason"]
    assert write["verdicts"][0]["notes"] == ["source: our check"]


def test_an_empty_tool_list_and_require_tools(inspect_notes: tuple[Path, Path], tmp_path: Path) -> None:
    notes, qa = inspect_notes
    out = tmp_path / "qa.jsonl"
    code, err = score(qa, out)
    assert code == 0, err
    (record,) = rows(out)
    assert (record["no_tool"], record["fed"], record["success"]) == (True, 2, 1)  # was [] should be non-empty
    assert record["verdicts"][0]["notes"][1].startswith("no-tool rule: the spec is the sample's own tools list")
    # --require-tools: both no-tool samples fail at depth 1; the note says which rule
    again = tmp_path / "again.jsonl"
    code, err = score(qa, again, "--require-tools")
    assert code == 0, err
    code, err = score(notes, again, "--require-tools", "--resume")
    assert code == 0, err
    failed = {r["task_id"]: r for r in rows(again) if r["no_tool"]}
    assert sorted(failed) == ["ask", "q1"]
    for record in failed.values():
        assert (record["fed"], record["label"]) == (1, "precondition")
        assert record["verdicts"][0]["notes"] == ["source: our check", "no-tool rule: --require-tools"]


def test_with_a_spec_and_a_side_file_the_recorded_results_feed_produces(
    inspect_notes: tuple[Path, Path], tmp_path: Path
) -> None:
    """The issue's case on a real log: create_note's recorded result gives N-1, so the reference check rejects
    N-9 itself (our check, the same step the tool refused) and the report finds the two agreeing."""
    notes, _ = inspect_notes
    tools = tmp_path / "tools.json"
    text = {"type": "string"}
    tools.write_text(
        json.dumps(
            [
                {"name": "create_note", "parameters": {"type": "object", "properties": {"text": text}}},
                {
                    "name": "append_note",
                    "parameters": {"type": "object", "properties": {"note_id": text, "text": text}},
                },
            ]
        )
    )
    side = tmp_path / "side.yaml"
    side.write_text("tools:\n  create_note: {produces: {note: note_id}}\n  append_note: {refs: {note_id: note}}\n")
    out = tmp_path / "out.jsonl"
    code, err = score(notes, out, "--tools", str(tools), "--hooks", str(side))
    assert code == 0, err
    write = next(r for r in rows(out) if r["task_id"] == "write")
    assert (write["fed"], write["label"]) == (2, "dependency")
    assert write["verdicts"][1]["notes"] == ["source: our check"]
    assert "note_id='N-9' is no note that an earlier call produced" in write["reason"]
    assert "replay agrees with every recorded outcome (2 calls)" in err
    assert "spec_note" not in write["metadata"]
    # the samples' own lists are not read with a spec: no-tool follows the spec (a tools list: allowed)
    ask = next(r for r in rows(out) if r["task_id"] == "ask")
    assert ask["fed"] == 2


def test_a_sample_with_no_model_event_has_no_tool_list(inspect_notes: tuple[Path, Path], tmp_path: Path) -> None:
    notes, _ = inspect_notes

    def drop_events(parsed: Any) -> None:
        (sample,) = [s for s in parsed.samples if s.id == "write"]
        sample.events = []

    bare = _rewritten(notes, tmp_path / "bare.eval", drop_events)
    out = tmp_path / "out.jsonl"
    code, err = score(bare, out, "--keep-going")
    assert code == 2
    assert "sample write epoch 1: the sample records no tool list (no model call in its events); pass --tools" in err
    assert [r["task_id"] for r in rows(out)] == ["ask"]


def test_registry_noise_is_silenced_and_our_lines_stay(inspect_notes: tuple[Path, Path], tmp_path: Path) -> None:
    """A log run in a k8s sandbox (not installed here): inspect's registry warns on reading it, and inspect_evals'
    entry point fails to load (a dependency of one of its evals is not installed). The same command with the
    filter disabled shows that the noise is real in this environment."""
    from inspect_ai.util import SandboxEnvironmentSpec

    _, qa = inspect_notes

    def in_k8s(parsed: Any) -> None:
        parsed.eval.sandbox = SandboxEnvironmentSpec("k8s", {"values": "values.yaml"})

    log = _rewritten(qa, tmp_path / "k8s.eval", in_k8s)
    program = (
        "import sys\n"
        "import prefix_exec.importers.inspect.log as reader\n"
        "if sys.argv[1] == 'off': reader.quiet_registry = lambda: None\n"
        "from prefix_exec.cli import main\n"
        "sys.exit(main(['score', 'inspect', sys.argv[2], '--out', sys.argv[3]]))\n"
    )
    errs = {}
    for mode in ("on", "off"):
        done = subprocess.run(
            [sys.executable, "-c", program, mode, str(log), str(tmp_path / f"{mode}.jsonl")],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        errs[mode] = done.stderr
    assert all(noise in errs["off"] for noise in NOISE), errs["off"]
    assert not any(noise in errs["on"] for noise in NOISE), errs["on"]
    assert "prefix-exec: k8s.eval: task qa, 1 sample(s), status success" in errs["on"]
    assert "prefix-exec: scored 1 rollouts (1 fully executable)" in errs["on"]
    assert rows(tmp_path / "on.jsonl") == rows(tmp_path / "off.jsonl")


def test_a_sample_the_model_server_ended_is_an_infrastructure_failure(
    inspect_server_error: Path, tmp_path: Path
) -> None:
    """A real log whose first sample errored after the model server's 500s (inspect wrote
    ``RetryError(... raised InternalServerError)`` and no score): the system's failure, left out like BFCL's
    inference crashes by default (before, the sample stopped the run as unscorable), or kept under its label."""
    out = tmp_path / "r.jsonl"
    code, err = score(inspect_server_error, out)
    assert code == 0
    (scored,) = rows(out)
    assert scored["label"] != "infrastructure" and "infrastructure" not in scored["metadata"]
    assert "1 rollout ended by an infrastructure failure (the system's, not the agent's) left out" in err
    kept = tmp_path / "k.jsonl"
    code, err = score(inspect_server_error, kept, "--keep-infrastructure-failures")
    assert code == 0
    failed = [r for r in rows(kept) if r["label"] == "infrastructure"]
    assert len(failed) == 1 and len(rows(kept)) == 2
    assert failed[0]["success"] == 0 and failed[0]["T"] == 1  # no call was made: the model never answered
    assert "InternalServerError" in failed[0]["metadata"]["infrastructure"]
    assert failed[0]["metadata"]["infrastructure"].startswith("the sample errored in inspect: RetryError(")
