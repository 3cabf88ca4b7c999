"""OTLP protobuf trace files (the ``otlp`` extra): the frames of tests/data/traces/otel-genai.binpb (the same spans as
otel-genai.jsonl, from the SDK's own OTLP encoder) read as the JSON lines are; without opentelemetry-proto, exit 2
naming the extra, nothing written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from prefix_exec.cli import main

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
TOOLS = Path(__file__).resolve().parents[2] / "examples" / "transcripts" / "tools.json"


def scored(path: Path) -> list[tuple[object, ...]]:
    return [(r["task_id"], r["T"], r["fed"], r["label"]) for r in map(json.loads, path.read_text().splitlines())]


def test_protobuf_frames_score_as_their_json_lines(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.proto")
    for name in ("otel-genai.binpb", "otel-genai.jsonl"):
        argv = ["score", "traces", str(TRACES / name), "--tools", str(TOOLS), "--workers", "1"]
        assert main([*argv, "--out", str(tmp_path / f"{name}.out")]) == 0
    assert scored(tmp_path / "otel-genai.binpb.out") == scored(tmp_path / "otel-genai.jsonl.out")
    assert len(scored(tmp_path / "otel-genai.binpb.out")) == 7


def test_a_truncated_frame_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("opentelemetry.proto")
    cut = tmp_path / "cut.binpb"
    cut.write_bytes((TRACES / "otel-genai.binpb").read_bytes()[:-10])
    assert main(["score", "traces", str(cut), "--tools", str(TOOLS), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "a truncated frame" in capsys.readouterr().err


def test_without_the_extra_the_command_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.proto", None)
    out = tmp_path / "o.jsonl"
    assert main(["score", "traces", str(TRACES / "otel-genai.binpb"), "--tools", str(TOOLS), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "pip install 'prefix-exec[otlp]'" in err and "Traceback" not in err
