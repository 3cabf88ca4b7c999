from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ticketing_cli import score_example

from prefix_exec.cli import build_parser, main

TICKETING = Path(__file__).resolve().parents[2] / "examples" / "ticketing"


def test_score_then_metrics_json(ticketing, tmp_path, capsys):
    records = tmp_path / "rec.jsonl"
    assert score_example(ticketing, records) == 0
    assert len(records.read_text().splitlines()) == 12
    assert main(["metrics", str(records), "--resamples", "500", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_method = {c["method"]: c for c in doc["conditions"]}
    react, plan = by_method["react"], by_method["plan-conditioned"]
    assert react["N"] == 6
    assert react["TER"]["point"] == 1.0
    assert react["RR"] is None
    assert plan["TER"]["point"] == 0.0
    assert plan["RR_eligible"] == 6
    assert plan["RR"]["point"] == pytest.approx(4 / 6)
    assert plan["labels"] == {"dependency": 1, "schema": 1, "precondition": 1, "information": 1, "state_consistency": 2}
    assert react["PEC"][0] == 1.0
    assert react["n_k"][0] == 6


@pytest.mark.parametrize("fmt", ["md", "csv"])
def test_metrics_other_formats_to_file(ticketing, tmp_path, fmt):
    records = tmp_path / "rec.jsonl"
    score_example(ticketing, records)
    out = tmp_path / f"m.{fmt}"
    assert main(["metrics", str(records), "--resamples", "200", "--format", fmt, "--out", str(out)]) == 0
    text = out.read_text()
    assert "plan-conditioned" in text
    if fmt == "md":
        assert "undefined" in text  # react never failed: RR is undefined, not 0


def test_bad_input_exits_2_without_traceback(ticketing, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"dataset": "ticketing", "task_id": "new-laptop", "model": "m", "method": "x", "success": 1,'
        ' "actions": [{"arguments": {}}]}\n'
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "prefix_exec.cli",
            "score",
            "custom",
            "--tools",
            str(ticketing / "tools.yaml"),
            str(bad),
            "--out",
            str(tmp_path / "o.jsonl"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{bad}:1: field 'actions[0].name': missing" in proc.stderr


def test_keep_going_scores_the_rest_and_reports_the_bad_row(ticketing, tmp_path, capsys):
    rollouts = tmp_path / "mixed.jsonl"
    lines = (ticketing / "rollouts.jsonl").read_text().splitlines()
    rollouts.write_text("\n".join([lines[0], '{"dataset": 1}', lines[1], "{oops"]) + "\n")
    out = tmp_path / "o.jsonl"
    code = main(
        ["score", "custom", "--tools", str(ticketing / "tools.yaml"), str(rollouts), "--out", str(out), "--keep-going"]
    )
    assert code == 2
    assert len(out.read_text().splitlines()) == 2
    err = capsys.readouterr().err
    assert f"skipped {rollouts}:2: field 'task_id': missing" in err
    assert f"skipped {rollouts}:4: not valid JSON" in err
    assert "2 could not be scored" in err


def test_resume_skips_finished_rollouts(ticketing, tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    score_example(ticketing, out)
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:5]) + "\n" + lines[5][:40])  # a kill mid-write
    assert score_example(ticketing, out, "--resume") == 0
    final = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(final) == 12
    assert len({(r["task_id"], r["method"]) for r in final}) == 12
    assert "5 already in the output were kept" in capsys.readouterr().err


def test_metrics_rejects_rows_without_required_fields(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_text('{"dataset": "d", "task_id": "t", "model": "m", "method": "x", "T": 1}\n')
    assert main(["metrics", str(path)]) == 2
    assert "field 'fed': missing" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["score"], ["score", "custom"], ["metrics"]])
def test_help_for_every_command(argv, capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args([*argv, "--help"])
    assert info.value.code == 0
    assert "usage: prefix-exec" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "module"),
    [(["score", "transcripts"], "score_transcripts"), (["run"], "run")],
)
def test_a_command_loads_only_its_own_module(argv, module):
    """The parser of a named subcommand registers that one alone: no other command's module (nor numpy, for a
    score command) is imported to run it. In a fresh interpreter: this one has imported everything."""
    code = (
        "import json, sys\n"
        "from prefix_exec.cli import build_parser\n"
        f"build_parser({argv!r})\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('prefix_exec.cli.'))))\n"
        "print('numpy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded, numpy = done.stdout.splitlines()
    assert f"prefix_exec.cli.{module}" in json.loads(loaded)
    others = {f"prefix_exec.cli.{name}" for name in ("metrics", "report", "demo", "guard", "sample", "score_tau")}
    assert not others.intersection(json.loads(loaded)) - {f"prefix_exec.cli.{module}"}
    if argv[0] == "score":
        assert numpy == "False"


#: Modules a command's start need not import to score a JSON tools list's transcripts or BFCL results, off a
#: terminal: PyYAML and ``regex`` (a YAML spec, a schema's ``pattern``), tqdm (a bar on a terminal), and what the
#: tau package's domain needs (asyncio, importlib.metadata, tomllib). About 0.1 s of every start (2026-12-08).
NOT_AT_START = ("yaml", "regex", "tqdm", "asyncio", "importlib.metadata", "tomllib")


def test_scoring_imports_no_module_it_does_not_use(tmp_path):
    """``score transcripts`` on a JSON tools list with no ``pattern``, and the BFCL environment, import none of
    NOT_AT_START: a command's start is paid by every short command and, with workers, by each of them. In a
    fresh interpreter, stderr a pipe (no terminal)."""
    tau_bench = Path(__file__).resolve().parents[2] / "tests" / "data" / "tau-bench"  # its tools: no pattern
    conversations = tmp_path / "two.json"
    conversations.write_text(json.dumps(json.loads((tau_bench / "gpt-4o-airline.json").read_bytes())[:2]))
    argv = ["score", "transcripts", str(conversations), "--tools", str(tau_bench / "airline-tools.json")]
    argv += ["--model", "gpt-4o"]
    code = (
        "import json, sys\n"
        "from prefix_exec.cli import main\n"
        f"code = main({[*argv, '--out', str(tmp_path / 'records.jsonl'), '--workers', '1']!r})\n"
        "import prefix_exec.envs.bfcl\n"
        f"print(json.dumps([code, sorted(m for m in {list(NOT_AT_START)!r} if m in sys.modules)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == [0, []], done.stderr
    assert (tmp_path / "records.jsonl").read_bytes().count(b"\n") >= 1


def test_a_parser_built_without_argv_has_every_command(monkeypatch):
    """build_parser() (tests, a caller parsing its own list) never narrows itself by this process's sys.argv."""
    monkeypatch.setattr(sys, "argv", ["prefix-exec", "metrics"])
    assert build_parser().parse_args(["run", "grid.toml", "--out", "x"]).command == "run"


def test_version_and_an_unknown_command_see_every_command(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("prefix-exec ")
    with pytest.raises(SystemExit) as info:
        main(["scor"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'scor'" in err and "'metrics'" in err and "'guard'" in err


def test_metrics_compare_gives_paired_differences(ticketing, tmp_path, capsys):
    records = tmp_path / "rec.jsonl"
    score_example(ticketing, records)
    capsys.readouterr()
    assert (
        main(["metrics", str(records), "--resamples", "300", "--format", "json", "--compare", "plan-conditioned:react"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    (pair,) = doc["paired"]
    assert (pair["a"]["method"], pair["b"]["method"]) == ("plan-conditioned", "react")
    assert pair["common_tasks"] == 6
    # Every plan-conditioned rollout failed and every react one was executable, on the same tasks.
    assert pair["differences"]["TER"] == {"point": -1.0, "low": -1.0, "high": -1.0}
    with pytest.raises(SystemExit) as info:  # a malformed pair is a usage error
        main(["metrics", str(records), "--compare", "react"])
    assert info.value.code == 2
    assert main(["metrics", str(records), "--compare", "react:nope"]) == 2
    err = capsys.readouterr().err
    assert "--compare react:nope: the right side 'nope' names no condition (the left side does)" in err
    assert "plan-conditioned" in err


def test_duplicate_input_rollouts_are_reported_not_silently_merged(ticketing, tmp_path, capsys):
    rollouts = str(ticketing / "rollouts.jsonl")
    out = tmp_path / "o.jsonl"
    code = main(
        [
            "score",
            "custom",
            "--tools",
            str(ticketing / "tools.yaml"),
            rollouts,
            rollouts,
            "--out",
            str(out),
            "--keep-going",
        ]
    )
    assert code == 2
    assert len(out.read_text().splitlines()) == 12
    err = capsys.readouterr().err
    assert "duplicate: the input holds this rollout twice" in err
    assert "12 could not be scored" in err
    assert "--resume" not in err


def test_existing_output_is_never_erased_without_a_flag(ticketing, tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    assert score_example(ticketing, out) == 0
    before = out.read_text()
    assert score_example(ticketing, out) == 2
    assert out.read_text() == before
    assert "--resume to continue it, --overwrite to replace it" in capsys.readouterr().err
    assert score_example(ticketing, out, "--overwrite") == 0
    assert len(out.read_text().splitlines()) == 12


def test_metrics_refuses_a_rollout_counted_twice(ticketing, tmp_path, capsys):
    records = tmp_path / "rec.jsonl"
    score_example(ticketing, records)
    assert main(["metrics", str(records), str(records)]) == 2
    assert f"is already at {records}:1" in capsys.readouterr().err


def test_binary_input_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'\x80\x81\xfe binary\n{"a": 1}')  # the first bad line is the error
    assert main(["metrics", str(path)]) == 2
    err = capsys.readouterr().err
    assert "x.jsonl:1: not UTF-8 text" in err
    assert "Traceback" not in err


def test_negative_seed_is_a_usage_error(ticketing, tmp_path):
    with pytest.raises(SystemExit) as info:
        main(["metrics", str(tmp_path / "any.jsonl"), "--seed", "-1"])
    assert info.value.code == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["score", "bfcl", "--ground-truth", "--time-limit", "nan", "--out", "x"],
        ["score", "bfcl", "--ground-truth", "--time-limit", "0", "--out", "x"],
        ["score", "toolsandbox", "runs", "--success-threshold", "1.5", "--out", "x"],
        ["score", "toolsandbox", "runs", "--success-threshold", "nan", "--out", "x"],
        ["metrics", "r.jsonl", "--resamples", "0"],
    ],
)
def test_out_of_range_options_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "must lie in" in err or "must be >= 1" in err


def test_a_raising_user_hook_skips_its_rollouts_and_scores_the_rest(ticketing, tmp_path):
    example = tmp_path / "ticketing"
    shutil.copytree(ticketing, example)
    hooks = example / "hooks.py"
    hooks.write_text(hooks.read_text() + "\n\ndef search_tickets(state, args):\n    raise RuntimeError('hook bug')\n")
    out = tmp_path / "o.jsonl"
    argv = ["score", "custom", "--tools", str(example / "tools.yaml"), str(example / "rollouts.jsonl")]
    proc = subprocess.run(
        [sys.executable, "-m", "prefix_exec.cli", *argv, "--out", str(out), "--keep-going"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "the effect hook 'search_tickets' of tool 'search_tickets' raised RuntimeError: hook bug" in proc.stderr
    skipped = [line for line in proc.stderr.splitlines() if line.startswith("prefix-exec: skipped ")]
    assert len(skipped) >= 1
    assert all("hook bug" in line for line in skipped)
    assert len(out.read_text().splitlines()) == 12 - len(skipped)


def test_one_line_that_is_not_utf8_loses_only_that_line_with_keep_going(tmp_path, capsys):
    rollouts = (TICKETING / "rollouts.jsonl").read_bytes().splitlines()
    path = tmp_path / "in.jsonl"
    path.write_bytes(rollouts[0] + b"\n" + b'{"task_id": "\xff"}\n' + b"\n".join(rollouts[1:]) + b"\n")
    out = tmp_path / "out.jsonl"
    argv = ["score", "custom", "--tools", str(TICKETING / "tools.yaml"), str(path), "--out", str(out)]
    assert main([*argv, "--keep-going"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: not UTF-8 text" in err
    assert len(out.read_text(encoding="utf-8").splitlines()) == len(rollouts)
