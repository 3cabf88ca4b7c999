"""Numbers from input are validated where they enter (issue 45): a reward past float's range, infinite or NaN,
a trial past 2^31 - 1, a ``--trial-field`` index of thousands of digits, a ``--workers`` of a non-ASCII digit, each
end as that record's (or that option's) input error, and the records around it are scored. Before, each was a
traceback (``OverflowError``, ``ValueError: Exceeds the limit (4300 digits)``) that lost the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.cli import main
from prefix_exec.importers.trials import MAX_TRIAL, TrialError, lookup, trial_number

TOOLS = [{"type": "function", "function": {"name": "login", "parameters": {"type": "object"}}}]
CHAT = [
    {"role": "user", "content": "log in"},
    {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "login", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
]


def tau_bench(task: str, reward: str, trial: str = "0") -> str:
    """One tau-bench record as JSON text, its reward and trial as raw JSON (json.dumps cannot write 1e309)."""
    head = json.dumps({"task_id": task, "info": {}, "traj": CHAT, "model": "m"})[:-1]
    return f'{head}, "reward": {reward}, "trial": {trial}}}'


def _score(tmp_path: Path, lines: list[str], *extra: str) -> tuple[int, list[str], str, Any]:
    source, tools, out = tmp_path / "in.jsonl", tmp_path / "tools.json", tmp_path / "out.jsonl"
    source.write_text("\n".join(lines) + "\n")
    tools.write_text(json.dumps(TOOLS))
    code = main(["score", "transcripts", str(source), "--tools", str(tools), "--keep-going", "--out", str(out), *extra])
    scored = [json.loads(line)["task_id"] for line in out.read_text().splitlines()] if out.exists() else []
    return code, scored, str(out), None


@pytest.mark.parametrize(
    ("reward", "trial"),
    [
        ("1" + "0" * 309, "0"),  # an integer past float's range
        ("1" + "0" * 5000, "0"),  # past Python's digit limit too (the reader refuses it as JSON)
        ("Infinity", "0"),
        ("NaN", "0"),
        ("-Infinity", "0"),
        ("1.0", str(2**31)),
        ("1.0", "1" + "0" * 400),
    ],
)
def test_a_bad_reward_or_trial_is_that_records_error(
    reward: str, trial: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [tau_bench("a", "1.0"), tau_bench("bad", reward, trial), tau_bench("b", "0.0")]
    code, scored, _, _ = _score(tmp_path, lines)
    err = capsys.readouterr().err
    assert code == 2 and scored == ["a", "b"], err
    assert "Traceback" not in err and ":2" in err


def test_an_integer_reward_of_one_is_a_success(tmp_path: Path) -> None:
    code, _, out, _ = _score(tmp_path, [tau_bench("a", "1"), tau_bench("b", "0")])
    rows = [json.loads(line) for line in Path(out).read_text().splitlines()]
    assert code == 0 and [r["success"] for r in rows] == [1, 0]


def test_trials_are_bounded_and_indices_are_short_ascii_digits() -> None:
    assert trial_number(MAX_TRIAL, "trial") == MAX_TRIAL
    for bad in (MAX_TRIAL + 1, 10**5000, -1, True, 1.0):
        with pytest.raises(TrialError):
            trial_number(bad, "trial")
    assert lookup({"m": [5, 6]}, "m.1") == (True, 6)
    assert lookup({"m": [5, 6]}, "m.²") == (False, None)
    assert lookup({"m": [5, 6]}, "m." + "1" * 5000) == (False, None)


def test_a_trial_field_of_thousands_of_digits_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, scored, _, _ = _score(tmp_path, [tau_bench("a", "1.0")], "--trial-field", "traj." + "9" * 5000)
    err = capsys.readouterr().err
    assert code == 2 and scored == [] and "Traceback" not in err and "missing" in err


@pytest.mark.parametrize("value", ["²", "1" * 40])
def test_workers_of_other_digits_are_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["score", "transcripts", "in.jsonl", "--workers", value, "--out", "o.jsonl"])
    assert ended.value.code == 2 and "--workers" in capsys.readouterr().err
