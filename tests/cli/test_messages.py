"""What the CLI says when a newcomer's first hour goes wrong (issue 28): each message names the problem plainly, and
metrics' md and csv show the PEC checkpoints and n_k they promise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefix_exec.cli import main
from prefix_exec.envs.tau.tasks import TaskSetCheck
from prefix_exec.errors import InputError
from prefix_exec.records.codec import write_records
from prefix_exec.records.jsonl import iter_json_lines
from prefix_exec.trajectory import FailureLabel, PrefixRecord, ToolCall, Verdict

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _record(task: str, T: int, fed: int, method: str = "react") -> PrefixRecord:
    verdicts = [Verdict.accept() for _ in range(min(fed - 1, T))]
    if fed <= T:
        verdicts.append(Verdict.reject(FailureLabel.SCHEMA, "bad"))
    actions = tuple(ToolCall(f"tool_{i}", {}) for i in range(T))
    return PrefixRecord("d", task, "m", method, 0, T, fed, int(fed > T), tuple(verdicts), actions)


def _error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        list(iter_json_lines(path))
    return info.value


def test_a_broken_jsonl_line_says_what_is_wrong_once(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n{"a": "tab\there"}\n')
    error = _error(path)
    assert error.line == 2
    assert error.message == "not valid JSON (Invalid control character at column 11)"
    path.write_text('{"a": 1}\n{"a": 1,, "b": 2}\n{"a": 3}\n')
    assert _error(path).message == "not valid JSON (Expecting property name enclosed in double quotes at column 9)"


def test_a_cut_off_line_is_called_cut_off_and_a_torn_last_line_a_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    for torn in ('{"a": 1, "b": "some te', '{"a": 1, "b": [1, 2', '{"a": 1, "b":'):
        path.write_text('{"a": 1}\n' + torn)  # the last line, without its newline: a file cut short
        error = _error(path)
        assert error.line == 2
        assert error.message == (
            "the line is cut off: its JSON stops before the object is complete (the file may be truncated)"
        )
        assert "column" not in error.message  # json's column points where the string began, not where it broke
    path.write_text('{"a": 1, "b": "some te\n{"a": 2}\n')  # cut off, but the file goes on
    assert _error(path).message == "the line is cut off: its JSON stops before the object is complete"


def test_report_names_its_page_without_a_doubled_slash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "r.jsonl"
    write_records(records, [_record("t1", 2, 3), _record("t2", 2, 1)])
    out = f"{tmp_path / 'report'}/"
    assert main(["report", str(records), "--out", out, "--no-plots", "--resamples", "20"]) == 0
    err = capsys.readouterr().err
    assert f"-> {tmp_path / 'report' / 'report.html'} (" in err
    assert "//" not in err


def test_transcripts_without_tools_get_an_error_and_no_contradicting_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [json.loads(line) for line in (EXAMPLES / "transcripts" / "openai-chat.jsonl").read_text().splitlines()]
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "tools"}) + "\n" for r in rows))
    assert main(["score", "transcripts", str(bare), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "no --tools was given and this conversation carries no 'tools' list of its own" in err
    assert "only schema checks apply" not in err  # the note would promise a spec that is not there
    # with their own tools lists, the note says what is checked
    own = EXAMPLES / "transcripts" / "openai-chat.jsonl"
    assert main(["score", "transcripts", str(own), "--out", str(tmp_path / "p.jsonl")]) == 0
    assert "each conversation's own tools list is its spec, so only schema checks apply" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("given", "kind"),
    [
        (EXAMPLES / "ticketing" / "rollouts.jsonl", "a rollouts file"),
        (EXAMPLES / "transcripts" / "anthropic.jsonl", "a transcripts file"),
        (None, "a scored records file"),
    ],
)
def test_a_data_file_given_to_tools_is_named_for_what_it_is(
    given: Path | None, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if given is None:
        given = tmp_path / "records.jsonl"
        write_records(given, [_record("t1", 2, 3)])
    rollouts = EXAMPLES / "ticketing" / "rollouts.jsonl"
    assert main(["score", "custom", "--tools", str(given), str(rollouts), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"{given}: this is {kind}" in err and "not a tool spec" in err
    assert "--tools takes the tool list" in err
    assert "document start" not in err  # no YAML parser jargon


@pytest.mark.parametrize("command", ["metrics", "report"])
def test_a_rollouts_file_given_where_records_belong_says_score_it_first(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rollouts = EXAMPLES / "ticketing" / "rollouts.jsonl"
    extra = ["--out", str(tmp_path / "rep"), "--no-plots"] if command == "report" else []
    assert main([command, str(rollouts), *extra]) == 2
    err = capsys.readouterr().err
    assert f"{rollouts}:1: this is a rollouts file (tool calls not yet replayed), not scored records: score it" in err
    assert f"prefix-exec score custom --tools SPEC {rollouts} --out records.jsonl" in err
    assert "field 'T'" not in err and "field 'kind'" not in err


def test_a_tau_file_without_embedded_tasks_says_so() -> None:
    check = TaskSetCheck("airline", selected=50, expected=50, embedded=(), outside=(), differing=())
    text = check.describe()
    assert text.startswith("airline: the file embeds no task definitions")
    assert "installed tau2's task of the same id" in text
    assert "0/50" not in text
    # with embedded tasks, the count stays
    some = TaskSetCheck("airline", selected=50, expected=50, embedded=("1", "2"), outside=(), differing=())
    assert some.describe() == "airline: 2/50 of the paper's tasks in this file (paper: 50)"


@pytest.mark.parametrize("fmt", ["md", "csv"])
def test_metrics_md_and_csv_show_the_checkpoints_and_n_k(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # react: T = 3, 1, 3 and FED = 4, 2, 2 -> n_k = 3, 2, 2, 0; PEC = 1, 1/3, 1/3, 0; PEC_elig = 1, 1/2, 1/2, -
    records = tmp_path / "r.jsonl"
    write_records(records, [_record("t1", 3, 4), _record("t2", 1, 2), _record("t3", 3, 2)])
    argv = ["metrics", str(records), "--format", fmt, "--resamples", "50", "--checkpoints", "1,2,4"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    if fmt == "md":
        assert "### Table G.1: PEC@k checkpoints" in out
        assert "| d | m | react | 1.00 [1.00, 1.00] | 0.33 [" in out
        assert "| dataset | model | method | N | n_1 | n_2 | n_4 | PEC_elig@1 | PEC_elig@2 | PEC_elig@4 |" in out
        assert "| d | m | react | 3 | 3 | 2 | 0 | 1.00 | 0.50 | undefined |" in out
    else:
        assert "dataset,model,method,N,n_1,n_2,n_4,PEC_elig@1,PEC_elig@2,PEC_elig@4" in out
        assert "d,m,react,3,3,2,0,1.0,0.5," in out
        assert "dataset,model,method,PEC@1,PEC@1_low,PEC@1_high,PEC@2,PEC@2_low,PEC@2_high,PEC@4," in out
        assert "d,m,react,1.0,1.0,1.0,0.333333," in out
