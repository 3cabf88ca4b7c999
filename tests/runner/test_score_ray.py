"""``score --launcher ray``: the replays on Ray actors (the runner tests' one Ray instance), the records those of
``--workers 1``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from prefix_exec.cli import main

if TYPE_CHECKING:
    from runner.conftest import RaySession


@pytest.mark.slow
def test_score_on_ray_actors_writes_the_records_of_one_worker(
    ray_session: RaySession, ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A spec with a hooks module reaches each actor as its recipe; no rollout is replayed in this process."""
    args = ["score", "custom", "--tools", str(ticketing / "tools.yaml"), str(ticketing / "rollouts.jsonl")]
    one, ray = tmp_path / "one.jsonl", tmp_path / "ray.jsonl"
    assert main([*args, "--out", str(one), "--workers", "1"]) == 0
    capsys.readouterr()
    assert main([*args, "--out", str(ray), "--workers", "2", "--launcher", "ray"]) == 0
    err = capsys.readouterr().err
    assert "cannot be sent to worker processes" not in err
    assert "scored 12 rollouts" in err
    assert ray.read_bytes() == one.read_bytes()


@pytest.mark.slow
def test_transcripts_decoded_on_ray_actors_write_the_records_of_one_worker(
    ray_session: RaySession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a --tools spec each actor decodes the conversations it is sent (tau-bench's 200, real)."""
    tau_bench = Path(__file__).resolve().parents[1] / "data" / "tau-bench"
    args = ["score", "transcripts", str(tau_bench / "gpt-4o-airline.json")]
    args += ["--tools", str(tau_bench / "airline-tools.json"), "--model", "gpt-4o"]
    one, ray = tmp_path / "one.jsonl", tmp_path / "ray.jsonl"
    assert main([*args, "--out", str(one), "--workers", "1"]) == 0
    capsys.readouterr()
    assert main([*args, "--out", str(ray), "--workers", "2", "--launcher", "ray"]) == 0
    assert "scored 200 rollouts" in capsys.readouterr().err
    assert ray.read_bytes() == one.read_bytes()
