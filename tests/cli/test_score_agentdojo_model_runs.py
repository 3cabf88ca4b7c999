"""``score transcripts`` on AgentDojo's published runs by real models (tests/data/agentdojo-runs: gpt-4o-2024-05-13,
claude-3-opus-20240229, command-r-plus and gemini-1.5-pro-001 on every user task of the four suites, taken from
AgentDojo's own ``runs/`` folder; README.md there says from where), each suite on its tools list: every conversation
is read, FED is at the first recorded error of every conversation that has one (found here from the run files
alone, without our code), the model servers' 500s are infrastructure and left out, and the first failures'
labels are docs/custom.md's table ("AgentDojo's runs by real models"), with the classifier of issue 43 and with the
one before it."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "agentdojo-runs" / "runs"
TOOLS = ROOT / "tests" / "data" / "agentdojo"  # the suites' tools, unchanged since these runs (README.md)
IDENTITY = ["--task-id-field", "suite_name,user_task_id", "--success-field", "utility", "--model-field"]
PIPELINES = ("claude-3-opus-20240229", "command-r-plus", "gemini-1.5-pro-001", "gpt-4o-2024-05-13")

_spec = importlib.util.spec_from_file_location("default_labels", ROOT / "scripts" / "default_labels.py")
assert _spec is not None and _spec.loader is not None
default_labels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(default_labels)

#: docs/custom.md's table: suite -> (runs, runs the model server's 500 ended, runs with a recorded error,
#: first-failure labels now, the same before issue 43's rules).
TABLE: dict[str, tuple[int, set[str], int, dict[str, int], dict[str, int]]] = {
    "workspace": (
        160,
        {"command-r-plus/user_task_35", "gemini-1.5-pro-001/user_task_26"},
        36,
        {"dependency": 28, "schema": 9},
        {"precondition": 32, "schema": 4, "dependency": 1},
    ),
    "slack": (84, set(), 5, {"dependency": 4, "state_consistency": 1}, {"dependency": 4, "state_consistency": 1}),
    "travel": (80, {"gemini-1.5-pro-001/user_task_6"}, 19, {"schema": 21}, {"schema": 21}),
    "banking": (64, set(), 2, {"schema": 2}, {"schema": 2}),
}
#: Calls our schema check rejects that the run records as a success (the consistency report's extra-check): an
#: argument of the wrong type that AgentDojo's tool of the time took anyway (docs/custom.md).
STRICTER = {
    "workspace": {"command-r-plus/user_task_33": 2},
    "travel": {"gpt-4o-2024-05-13/user_task_16": 4, "gpt-4o-2024-05-13/user_task_19": 17},
}


def runs(suite: str) -> list[Path]:
    return sorted(DATA.glob(f"*/{suite}/user_task_*/none/none.json"))


def first_error(path: Path) -> tuple[int, int, str] | None:
    """``(position, calls, text)``: the 1-based position, in call order, of the first call whose tool reply holds an
    ``error``, the number of calls and that error; ``None`` without one. A reply answers the waiting call of its
    ``tool_call_id``, or without one (Cohere's and Gemini's runs) the oldest waiting call without an id."""
    calls: list[dict[str, Any]] = []
    waiting: list[int] = []
    errors: list[tuple[int, str]] = []
    for message in json.loads(path.read_text(encoding="utf-8"))["messages"]:
        if message["role"] == "assistant":
            for call in message.get("tool_calls") or []:
                waiting.append(len(calls))
                calls.append(call)
        elif message["role"] == "tool":
            wanted = message.get("tool_call_id") or None
            k = next(i for i in waiting if (calls[i].get("id") or None) == wanted)
            waiting.remove(k)
            if message.get("error"):
                errors.append((k + 1, message["error"]))
    return (min(errors)[0], len(calls), min(errors)[1]) if errors else None


def score(suite: str, out: Path, *extra: str) -> list[dict[str, Any]]:
    files = [str(p) for p in runs(suite)]
    argv = ["score", "transcripts", *files, "--tools", str(TOOLS / f"{suite}-tools.json"), *IDENTITY]
    assert main([*argv, "pipeline_name", "--workers", "1", "--out", str(out), *extra]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def path_of(record: dict[str, Any]) -> Path:
    suite, task = record["task_id"].split("/")
    return DATA / record["model"] / suite / task / "none" / "none.json"


def label_before(record: dict[str, Any]) -> str:
    """The first failure's label by the classifier before issue 43 (scripts/default_labels.py's table)."""

    def recorded_error() -> str:
        found = first_error(path_of(record))
        assert found is not None
        return found[2]

    return str(default_labels.record_label_before(record, recorded_error))


@pytest.mark.parametrize("suite", sorted(TABLE))
def test_every_run_is_read_and_fails_at_its_first_recorded_error(
    suite: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conversations, crashed, with_error, now, was = TABLE[suite]
    records = score(suite, tmp_path / "o.jsonl")
    err = capsys.readouterr().err
    assert len(runs(suite)) == conversations
    assert err.count("1 conversation read as OpenAI Chat (detected)") == conversations
    assert len(records) == conversations - len(crashed)  # the 500s are left out by default
    assert Counter(r["model"] for r in records) == {
        p: conversations // 4 - sum(c.startswith(p + "/") for c in crashed) for p in PIPELINES
    }
    errors = 0
    for record in records:
        found = first_error(path_of(record))
        key = f"{record['model']}/{record['task_id'].split('/')[1]}"
        if found is None:
            calls = sum(len(m.get("tool_calls") or []) for m in json.loads(path_of(record).read_text())["messages"])
            assert record["T"] == max(calls, 1) and record["no_tool"] == (calls == 0), key
            assert record["fed"] == STRICTER.get(suite, {}).get(key, record["T"] + 1), key
            continue
        errors += 1
        position, calls, text = found
        assert (record["T"], record["fed"]) == (calls, position), key
        refused = record["actions"][position - 1]
        assert refused["observation"] == {"content": text, "error": True}, key
    assert errors == with_error
    failed = [r for r in records if not r["executable"]]
    assert Counter(r["label"] for r in failed) == now
    assert Counter(label_before(r) for r in failed) == was


@pytest.mark.parametrize("suite", ["travel", "workspace"])
def test_the_model_servers_500s_are_infrastructure(
    suite: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """AgentDojo writes a model server's 500 in the run's own ``error`` (``Skipping task ... because of internal
    server error: status_code: 500 ...``): left out by default, each named on stderr with N with and without
    them; with --keep-infrastructure-failures counted under 'infrastructure', never as the agent's failure."""
    conversations, crashed, *_ = TABLE[suite]
    score(suite, tmp_path / "left.jsonl")
    err = capsys.readouterr().err
    n = len(crashed)
    assert f"{n} rollout{'s' if n > 1 else ''} ended by an infrastructure failure" in err
    assert f"N = {conversations - n} without them, {conversations} with them" in err
    for key in crashed:
        model, task = key.split("/")
        assert f"{suite}-tools/{suite}/{task} ({model}, default, trial 0)" in err
    kept = score(suite, tmp_path / "kept.jsonl", "--keep-infrastructure-failures")
    infra = {f"{r['model']}/{r['task_id'].split('/')[1]}": r for r in kept if r["label"] == "infrastructure"}
    assert set(infra) == crashed
    for record in infra.values():
        assert record["reason"].startswith("infrastructure failure (the system's, not the agent's): Skipping task")
        assert "internal server error" in record["reason"]


def test_consistency_lines_name_the_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three of the four models' searches for workspace/user_task_18 find nothing: three entries, each naming its
    model (they were three identical lines before)."""
    score("workspace", tmp_path / "o.jsonl")
    err = capsys.readouterr().err
    lines = [line.strip() for line in err.splitlines() if "workspace/user_task_18 (" in line]
    assert sorted(line.split(" (")[1].split(",")[0] for line in lines) == [
        "claude-3-opus-20240229",
        "command-r-plus",
        "gemini-1.5-pro-001",
    ]
    assert all("search_emails: recorded error: ValueError: No emails found." in line for line in lines)
    report = json.loads((tmp_path / "o.jsonl.consistency.json").read_text())
    assert sorted(e["model"] for e in report if e["task_id"] == "workspace/user_task_18") == sorted(
        line.split(" (")[1].split(",")[0] for line in lines
    )


def test_table_2_counts_the_agents_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The records written with --keep-infrastructure-failures, read by ``metrics``: the three 500s are left out
    of Table 2's rows (command-r-plus and gemini-1.5-pro-001 have 39 workspace rollouts, gemini 19 travel ones),
    never under one of the five labels, and Table 2's note and the JSON summary say how many and which."""
    parts = [score(suite, tmp_path / f"{suite}.jsonl", "--keep-infrastructure-failures") for suite in TABLE]
    both = tmp_path / "records.jsonl"
    both.write_text("".join((tmp_path / f"{suite}.jsonl").read_text() for suite in TABLE), encoding="utf-8")
    assert sum(len(p) for p in parts) == 388
    out = tmp_path / "m.json"
    assert main(["metrics", str(both), "--format", "json", "--resamples", "200", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert {k: doc["infrastructure"][k] for k in ("count", "N_with", "N_without", "kept")} == {
        "count": 3,
        "N_with": 388,
        "N_without": 385,
        "kept": False,
    }
    assert sorted(doc["infrastructure"]["rollouts"]) == [
        "travel-tools/travel/user_task_6 (gemini-1.5-pro-001, default, trial 0)",
        "workspace-tools/workspace/user_task_26 (gemini-1.5-pro-001, default, trial 0)",
        "workspace-tools/workspace/user_task_35 (command-r-plus, default, trial 0)",
    ]
    rows = {(c["dataset"], c["model"]): c for c in doc["conditions"]}
    assert len(rows) == 16
    assert rows[("workspace-tools", "command-r-plus")]["N"] == 39
    assert rows[("workspace-tools", "gemini-1.5-pro-001")]["N"] == 39
    assert rows[("travel-tools", "gemini-1.5-pro-001")]["N"] == 19
    assert rows[("workspace-tools", "gpt-4o-2024-05-13")]["N"] == 40
    assert all("infrastructure" not in c["labels"] for c in doc["conditions"])
    capsys.readouterr()
    assert main(["metrics", str(both), "--resamples", "200"]) == 0
    text = capsys.readouterr().out
    assert "Here: 3 rollouts ended by an infrastructure failure (the system's, not the agent's) left out: N = 385" in (
        text
    )
