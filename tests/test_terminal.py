"""The CLI's output is safe on a terminal (prefix_exec.terminal): input's control characters are shown escaped."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from prefix_exec.cli import main
from prefix_exec.terminal import Escaping, draws_bars, escaped, escaping_output, unescaped

ESCAPE = "\x1b]0;pwned\x07\x1b[2J\rdone\x9b31m"
TICKETING = Path(__file__).resolve().parents[1] / "examples" / "ticketing"


def test_escaped_names_each_control_character_and_keeps_lines_tabs_and_text() -> None:
    assert escaped(ESCAPE) == "\\u001b]0;pwned\\u0007\\u001b[2J\\rdone\\u009b31m"
    assert escaped("a\tb\nc Zürich 東京 \u2028") == "a\tb\nc Zürich 東京 \u2028"
    assert escaped("\x00\x7f") == "\\u0000\\u007f"


def test_json_printed_through_the_escaping_reads_back_the_same() -> None:
    value = {"method": "x\x85y", "n": [1, 2]}
    sink = io.StringIO()
    Escaping(sink).write(json.dumps(value, ensure_ascii=False))
    assert "\x85" not in sink.getvalue()
    assert json.loads(sink.getvalue()) == value


def test_the_streams_are_wrapped_once_and_restored(capsys: pytest.CaptureFixture[str]) -> None:
    before = sys.stdout, sys.stderr
    with escaping_output():
        outer = sys.stderr
        with escaping_output():
            assert sys.stderr is outer
        print(ESCAPE, file=sys.stderr)
        assert unescaped(sys.stderr) is before[1]
    assert (sys.stdout, sys.stderr) == before
    assert capsys.readouterr().err == escaped(ESCAPE) + "\n"
    assert unescaped(before[1]) is before[1]


def test_a_name_from_a_log_reaches_neither_stream_raw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = (TICKETING / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    hostile = {**json.loads(rows[0]), "task_id": "elsewhere", "dataset": ESCAPE, "method": ESCAPE}
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join([rows[0], json.dumps(hostile), rows[1]]) + "\n", encoding="utf-8")
    args = ["--tools", str(TICKETING / "tools.yaml"), str(source), "--out", str(tmp_path / "o.jsonl")]
    assert main(["score", "custom", *args, "--keep-going"]) in (0, 2)  # 2: a unit could not be scored
    captured = capsys.readouterr()
    assert "\x1b" not in captured.err + captured.out
    assert "dataset=\\u001b]0;pwned" in captured.err


class Tty(io.StringIO):
    """A stream that says it is a terminal, on descriptor 2."""

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return 2


@pytest.mark.parametrize(("columns", "drawn"), [(80, True), (0, False)])
def test_a_bar_is_drawn_on_a_terminal_of_known_width_only(
    monkeypatch: pytest.MonkeyPatch, columns: int, drawn: bool
) -> None:
    """Both progress displays (score's bar, the runner's) ask draws_bars: a terminal with a width, through the
    CLI's Escaping stream too; not one of unknown width (0 columns), a file, or a stream with no descriptor."""
    monkeypatch.setattr("os.get_terminal_size", lambda fd=1: os.terminal_size((columns, 24)))
    assert draws_bars(Tty()) is drawn
    assert draws_bars(Escaping(Tty())) is drawn
    assert draws_bars(io.StringIO()) is False
