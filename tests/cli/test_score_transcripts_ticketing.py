"""``score transcripts``: the ticketing example exported as OpenAI messages scores as ``score custom`` does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from prefix_exec.cli import main
from prefix_exec.envs.custom.environment import load_spec
from prefix_exec.records.codec import call_to_json, read_rollouts, rollout_to_json
from prefix_exec.trajectory import Rollout


def openai_tools(ticketing: Path) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": t["parameters"]},
        }
        for t in yaml.safe_load((ticketing / "tools.yaml").read_text())["tools"]
    ]


def export(rollout: Rollout, ticketing: Path, number: int, *, layout: str) -> dict[str, Any]:
    """One canonical rollout as the conversation an OpenAI-style agent would log: the task as the user message,
    the calls as assistant tool_calls (two per message where there are two, as parallel calls), each answered
    by a tool message with what the ticketing server returns (the native environment's result or refusal),
    and a closing assistant text."""
    spec = yaml.safe_load((ticketing / "tools.yaml").read_text())
    session = load_spec(ticketing / "tools.yaml").start(rollout.task_id)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a help-desk agent."},
        {"role": "user", "content": spec["tasks"][rollout.task_id]["description"]},
    ]
    actions = list(rollout.actions)
    for start in range(0, len(actions), 2):
        group = actions[start : start + 2]
        ids = [f"call_{number}_{start + k}" for k in range(len(group))]
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": i, "type": "function", "function": {"name": a.name, "arguments": json.dumps(a.arguments)}}
                    for i, a in zip(ids, group, strict=True)
                ],
            }
        )
        for i, action in zip(ids, group, strict=True):
            verdict = session.step(action)
            content = json.dumps(verdict.result) if verdict.accepted else f"Error: {verdict.reason}"
            messages.append({"role": "tool", "tool_call_id": i, "content": content})
    messages.append({"role": "assistant", "content": "Done."})
    conversation: dict[str, Any] = {"messages": messages, "tools": openai_tools(ticketing)}
    if layout == "named":  # identity in fields the user names with --*-field
        conversation |= {
            "id": f"conv-{number}",
            "model": rollout.model,
            "metadata": {"task": rollout.task_id, "agent": rollout.method, "passed": bool(rollout.success)},
        }
    else:  # identity where the defaults look
        conversation |= {
            "task_id": rollout.task_id,
            "model": rollout.model,
            "method": rollout.method,
            "success": rollout.success,
        }
    return conversation


NAMED = ["--task-id-field", "metadata.task", "--method-field", "metadata.agent", "--success-field", "metadata.passed"]


def transcripts(ticketing: Path, tmp_path: Path, layout: str = "named") -> Path:
    path = tmp_path / f"transcripts-{layout}.jsonl"
    rollouts = list(read_rollouts(ticketing / "rollouts.jsonl"))
    path.write_text("".join(json.dumps(export(r, ticketing, n, layout=layout)) + "\n" for n, r in enumerate(rollouts)))
    return path


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def scored(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what only the transcript has: its source in metadata, and each action's call id and
    recorded tool reply (the canonical rollouts carry none)."""
    keep = {k: v for k, v in record.items() if k != "metadata"}
    keep["actions"] = [{k: a[k] for k in ("name", "arguments", "turn")} for a in record["actions"]]
    return keep


def custom_records(ticketing: Path, tmp_path: Path, tools: str = "tools.yaml") -> list[dict[str, Any]]:
    out = tmp_path / f"custom-{tools}.jsonl"
    argv = ["score", "custom", "--tools", str(ticketing / tools), str(ticketing / "rollouts.jsonl"), "--out", str(out)]
    assert main(argv) == 0
    return read(out)


@pytest.mark.parametrize(("layout", "flags"), [("named", NAMED), ("defaults", [])])
def test_transcripts_score_as_score_custom(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str, flags: list[str]
) -> None:
    want = custom_records(ticketing, tmp_path)
    out = tmp_path / "openai.jsonl"
    path = transcripts(ticketing, tmp_path, layout)
    argv = ["score", "transcripts", str(path), "--tools", str(ticketing / "tools.yaml"), "--out", str(out), *flags]
    assert main(argv) == 0
    got = read(out)
    assert len(got) == len(want) == 12
    assert [scored(r) for r in got] == want
    assert got[0]["metadata"] == {"source": f"{path.name}:1"}
    # The transcript's own details are kept: call ids and the recorded tool replies.
    first = got[0]["actions"][0]
    assert first["call_id"] == "call_0_0"
    assert first["observation"] == {"content": '{"user": "sam"}', "error": None}
    assert "only schema checks" not in capsys.readouterr().err


def test_an_mcp_list_with_the_side_file_as_the_spec(ticketing: Path, tmp_path: Path) -> None:
    want = custom_records(ticketing, tmp_path)
    out = tmp_path / "openai.jsonl"
    argv = [
        "score",
        "transcripts",
        str(transcripts(ticketing, tmp_path)),
        *("--tools", str(ticketing / "mcp-tools-list.json"), "--hooks", str(ticketing / "mcp-hooks.yaml")),
        *("--out", str(out), *NAMED),
    ]
    assert main(argv) == 0
    assert [scored(r) for r in read(out)] == want


def test_without_tools_the_transcripts_own_list_checks_schemas_only(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The own list (tools.yaml's schemas as OpenAI tools) gives the records of the MCP list without hooks when
    the replies' text is not evidence (--no-error-pattern), each saying in its metadata that only schema checks
    applied; stderr says so once."""
    want = custom_records(ticketing, tmp_path, "mcp-tools-list.json")
    capsys.readouterr()
    out = tmp_path / "openai.jsonl"
    path = transcripts(ticketing, tmp_path)
    argv = ["score", "transcripts", str(path), "--dataset", "ticketing", "--out", str(out), *NAMED]
    assert main([*argv, "--no-error-pattern"]) == 0
    err = capsys.readouterr().err
    assert "no --tools" in err
    assert "only schema checks" in err
    got = read(out)
    # the no-tool verdict names its own list where the MCP list's names the file's form
    rule = "no-tool rule: the spec is {}, which does not say that a task needs a tool"
    (no_tool,) = [(g, w) for g, w in zip(got, want, strict=True) if g["no_tool"]]
    assert no_tool[0]["verdicts"][0]["notes"][1] == rule.format("the conversation's own tools list")
    assert no_tool[1]["verdicts"][0]["notes"][1] == rule.format("only a tools list (an MCP tools/list result)")
    no_tool[0]["verdicts"][0]["notes"] = no_tool[1]["verdicts"][0]["notes"]
    assert [scored(r) for r in got] == want
    assert {r["metadata"]["spec_note"] for r in got} == {
        "schema checks only: the conversation's own tools list served as the spec (no --tools)"
    }
    assert len({r["metadata"]["tools_digest"] for r in got}) == 1
    assert sum(not r["executable"] for r in got) == 1  # the no-tool conversation is executable (a tools list)
    # without the pattern no reply is a refusal, so the schema failure (the server's "Error: ..." reply) is the
    # one call where our check rejected what the log shows as a success
    assert "consistency: 1 disagreement(s) (1 extra-check) in 29 calls compared" in err
    assert (
        "ticketing/new-laptop (example-model, plan-conditioned, trial 0) call 2 create_ticket: recorded accepted; "
        "replay rejected (schema: " in err
    )


def test_recorded_errors_reject_what_the_schemas_accept(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """By default a reply beginning 'Error' is the tool's refusal: on the own list (schemas only) each rollout
    now fails where the ticketing server refused, as with the full spec, but labelled by the classifier from the
    recorded text; the consistency report lists those steps (our checks accepted them)."""
    full = {(r["task_id"], r["method"]): r for r in custom_records(ticketing, tmp_path)}
    capsys.readouterr()
    out = tmp_path / "openai.jsonl"
    path = transcripts(ticketing, tmp_path)
    assert main(["score", "transcripts", str(path), "--dataset", "ticketing", "--out", str(out), *NAMED]) == 0
    err = capsys.readouterr().err
    got = {(r["task_id"], r["method"]): r for r in read(out)}
    # same first-error depths as the spec with refs and hooks: the server's refusals are where it refused
    assert {k: r["fed"] for k, r in got.items()} == {k: r["fed"] for k, r in full.items()}
    recorded = [r for r in got.values() if not r["executable"] and r["verdicts"][-1]["notes"][0] != "source: our check"]
    assert recorded, "some failures come from the recorded outcome"
    for record in recorded:
        verdict = record["verdicts"][-1]
        assert verdict["notes"][0] == "source: recorded outcome (error pattern)"
        assert verdict["notes"][1].startswith("classifier: ")
        assert verdict["reason"].startswith("the recorded outcome refused the call (the reply matches the error")
        assert '"Error: ' in verdict["reason"]
    report = json.loads((tmp_path / "openai.jsonl.consistency.json").read_text())
    assert {e["kind"] for e in report} == {"recorded-refusal"}
    assert sorted((e["task_id"], e["depth"]) for e in report) == sorted((r["task_id"], r["fed"]) for r in recorded)
    assert f"{len(report)} disagreement(s) ({len(report)} recorded-refusal)" in err
    # --require-tools makes the no-tool conversation a failure
    again = tmp_path / "again.jsonl"
    argv = ["score", "transcripts", str(path), "--dataset", "ticketing", "--out", str(again), *NAMED, "--require-tools"]
    assert main(argv) == 0
    (no_tool,) = [r for r in read(again) if r["no_tool"]]
    assert (no_tool["fed"], no_tool["label"]) == (1, "precondition")
    assert no_tool["verdicts"][0]["notes"] == ["source: our check", "no-tool rule: --require-tools"]


@pytest.mark.parametrize("pattern", ["(unclosed", "*x"])
def test_a_bad_error_pattern_is_an_input_error(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], pattern: str
) -> None:
    out = tmp_path / "out.jsonl"
    path = transcripts(ticketing, tmp_path)
    assert main(["score", "transcripts", str(path), "--out", str(out), "--error-pattern", pattern]) == 2
    err = capsys.readouterr().err
    assert "--error-pattern" in err
    assert "not a valid regular expression" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_a_fixed_model_and_a_json_list(ticketing: Path, tmp_path: Path) -> None:
    conversations = [json.loads(line) for line in transcripts(ticketing, tmp_path).read_text().splitlines()]
    path = tmp_path / "all.json"
    path.write_text(json.dumps(conversations))
    out = tmp_path / "openai.jsonl"
    argv = ["score", "transcripts", str(path), "--tools", str(ticketing / "tools.yaml"), "--model", "gpt-x", *NAMED]
    assert main([*argv, "--out", str(out)]) == 0
    got = read(out)
    assert {r["model"] for r in got} == {"gpt-x"}
    assert got[3]["metadata"] == {"source": "all.json[3]"}
    assert main([*argv, "--model-field", "model", "--out", str(tmp_path / "x.jsonl")]) == 2


def test_bad_conversations_are_reported_and_the_rest_scored(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = [json.loads(line) for line in transcripts(ticketing, tmp_path, "defaults").read_text().splitlines()]
    no_reply_target = json.loads(json.dumps(good[1]))
    no_reply_target["messages"][3]["tool_call_id"] = "call_nowhere"
    no_success = {k: v for k, v in good[2].items() if k != "success"}
    hosted_tool = json.loads(json.dumps(good[3]))
    hosted_tool["messages"][2]["tool_calls"][0]["type"] = "web_search_call"
    lines = [
        json.dumps(good[0]),
        "{not json",
        json.dumps({"task_id": "x", "model": "m", "success": 1}),
        json.dumps(no_reply_target),
        json.dumps(no_success),
        json.dumps(hosted_tool),
        json.dumps(good[4]),
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "openai.jsonl"
    argv = ["score", "transcripts", str(path), "--tools", str(ticketing / "tools.yaml"), "--out", str(out)]
    capsys.readouterr()
    assert main([*argv, "--keep-going"]) == 2
    err = capsys.readouterr().err
    assert [r["task_id"] for r in read(out)] == [good[0]["task_id"], good[4]["task_id"]]
    for fragment in (
        f"{path}:2",
        "not valid JSON",
        f"{path}:3",
        "field 'messages': missing",
        f"{path}:4",
        "field 'messages[3].tool_call_id': no earlier tool call has the id 'call_nowhere'",
        f"{path}:5",
        "no success",
        f"{path}:6",
        "field 'messages[2].tool_calls[0].type'",
    ):
        assert fragment in err
    assert "Traceback" not in err
    assert main([*argv, "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: not valid JSON" in err


def test_a_conversation_without_tools_needs_a_spec(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    # A tool call with no tools list to check it against (a conversation with no call is one allowed no-tool
    # action on an empty list: tests/cli/test_score_transcripts.py).
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [call]}]
    row = {"task_id": "t", "model": "m", "success": 1, "messages": messages}
    path.write_text(json.dumps(row) + "\n")
    assert main(["score", "transcripts", str(path), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "field 'tools'" in err
    assert "--tools SPEC" in err
    hooks = ["--hooks", str(ticketing / "mcp-hooks.yaml")]
    assert main(["score", "transcripts", str(path), *hooks, "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "--hooks layers onto a --tools spec" in capsys.readouterr().err


def test_score_custom_takes_the_mcp_list_and_says_when_only_schemas_are_checked(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    want = custom_records(ticketing, tmp_path)
    capsys.readouterr()
    out = tmp_path / "layered.jsonl"
    argv = ["score", "custom", "--tools", str(ticketing / "mcp-tools-list.json"), str(ticketing / "rollouts.jsonl")]
    assert main([*argv, "--hooks", str(ticketing / "mcp-hooks.yaml"), "--out", str(out)]) == 0
    assert read(out) == want
    assert "only schema checks" not in capsys.readouterr().err
    assert main([*argv, "--out", str(tmp_path / "bare.jsonl")]) == 0
    assert "(an MCP tools/list result) declares argument schemas only" in capsys.readouterr().err


def test_the_export_round_trips_the_actions(ticketing: Path, tmp_path: Path) -> None:
    """The converter above is faithful: the importer reads back exactly the canonical actions."""
    from prefix_exec.importers.transcripts import Identity, TranscriptFile

    rollouts = list(read_rollouts(ticketing / "rollouts.jsonl"))
    identity = Identity({}, {}, {"method": "default", "trial": 0, "dataset": "ticketing"})
    got = [c.rollout for c in TranscriptFile(transcripts(ticketing, tmp_path, "defaults"), identity, tolerant=False)]
    for mine, theirs in zip(got, rollouts, strict=True):
        assert [
            {k: v for k, v in call_to_json(a).items() if k in ("name", "arguments", "turn")} for a in mine.actions
        ] == (rollout_to_json(theirs)["actions"])
        assert mine.key == theirs.key
        assert mine.success == theirs.success
