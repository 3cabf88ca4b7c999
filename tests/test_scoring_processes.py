"""The worker processes of ``score --workers N`` (prefix_exec.scoring_spawn, prefix_exec.scoring_processes): their
pipes hold a megabyte, so a worker holds its queue of transcripts (16 KB each) in the pipe while the reading
process is busy (oracle: the kernel's own report of a pipe's size, F_GETPIPE_SZ); those the command starts as it
starts are the ones the pool uses, and those it does not use end."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from prefix_exec import scoring_pool, scoring_spawn
from prefix_exec.cli import start_workers
from prefix_exec.scoring import paired, score_to_file
from prefix_exec.scoring_processes import Processes
from prefix_exec.scoring_spawn import PIPE_BYTES, widen
from test_replay import CounterEnv, rollout


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")
def test_a_pipe_is_widened_to_a_megabyte_or_the_systems_most() -> None:
    most = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    read, write = os.pipe()
    try:
        assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) == 65536  # the default: four transcripts
        widen(write)
        assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) == min(PIPE_BYTES, most)
        assert fcntl.fcntl(read, fcntl.F_GETPIPE_SZ) == min(PIPE_BYTES, most)  # one buffer for both ends
    finally:
        os.close(read)
        os.close(write)


def test_a_worker_started_early_is_adopted_by_the_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker spawned as the command starts is the one the pool uses (it gets its settings as its first
    message); the records are those of one worker."""
    monkeypatch.setattr(scoring_pool, "REPLAY_HERE", False)
    scoring_spawn.start_early(1, "custom")
    early = scoring_spawn._early[0].process
    adopted: list[object] = []
    real = Processes.start

    def start(self: Processes, worker: int) -> None:
        real(self, worker)
        adopted.append(self.processes[worker])

    monkeypatch.setattr(Processes, "start", start)
    rollouts = [replace(rollout(("inc", {})), trial=trial) for trial in range(4)]
    score_to_file(paired(rollouts, CounterEnv()), tmp_path / "two.jsonl", workers=2, launcher="local")
    score_to_file(paired(rollouts, CounterEnv()), tmp_path / "one.jsonl")
    assert adopted[0] is early and len(adopted) == 2  # without REPLAY_HERE: two workers, the second new
    assert scoring_spawn._early == []
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


def test_a_worker_no_run_adopts_is_ended() -> None:
    """A worker started early for a command that then scores nothing (a usage error, a quick input) is ended by
    end_early (registered at exit): its pipe closed (it returns once its imports are done: see the next test), or
    killed when it is still importing."""
    scoring_spawn.start_early(1, "transcripts")
    process = scoring_spawn._early[0].process
    scoring_spawn.end_early()
    assert scoring_spawn._early == []
    assert not process.is_alive()


def test_a_worker_imports_only_the_warm_modules_it_knows() -> None:
    """The modules a worker imports early come from WARM, never from elsewhere (a name that is not there is
    ignored); its inbox closed before its settings came, it returns."""
    context = multiprocessing.get_context("spawn")
    inbox, to_worker = context.Pipe(duplex=False)
    _, outbox = context.Pipe(duplex=False)
    to_worker.close()
    assert "wave" not in sys.modules
    scoring_spawn.run(inbox, outbox, ("wave", "prefix_exec.envs.custom"))
    assert "wave" not in sys.modules
    assert "prefix_exec.envs.custom" in sys.modules


@pytest.mark.parametrize(
    ("argv", "cores", "started"),
    [
        (["score", "transcripts", "x.jsonl", "--tools", "t.json"], 4, [(3, "transcripts")]),
        (["score", "transcripts", "x.jsonl", "--workers", "2"], 4, [(1, "transcripts")]),
        (["score", "custom", "x.jsonl", "--workers=8"], 2, [(1, "custom")]),
        (["score", "bfcl", "results", "--workers", "1"], 4, [(0, "bfcl")]),
        (["score", "tau", "r.json", "--launcher", "ray"], 4, []),
        (["score", "tau", "r.json", "--launcher=ray", "--workers", "3"], 4, []),
        (["score", "transcripts", "--help"], 4, []),
        (["score", "nonsense", "x"], 4, []),
        (["metrics", "records.jsonl"], 4, []),
        (["score"], 4, []),
    ],
)
def test_the_command_line_starts_the_workers_score_starts_at_once(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], cores: int, started: list[tuple[int, str]]
) -> None:
    """As many as the pool starts at once: min(--workers, cores) - 1 (the reading process is one of them)."""
    calls: list[tuple[int, str]] = []
    monkeypatch.setattr(scoring_spawn, "start_early", lambda count, command: calls.append((count, command)))
    monkeypatch.setattr(scoring_spawn, "usable_cores", lambda: cores)
    start_workers(argv)
    assert calls == started
