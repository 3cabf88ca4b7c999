"""``score --launcher ray``: the replays on Ray actors (the runner tests' one Ray instance), the records those of
``--workers 1``."""

from __future__ import annotations

import io
import operator
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from prefix_exec import cluster
from prefix_exec.cli import main
from prefix_exec.errors import InputError
from prefix_exec.scoring.pool import ray as ray_pool

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


#: Appended to a copy of the ticketing hooks: the effect of update_ticket kills its own process (SIGKILL, as the
#: kernel's out-of-memory killer does) on the one rollout that assigns a ticket to "leo" (triage-vpn,
#: plan-conditioned), when a file "die" beside the module says so: "once" dies one time (the file goes first),
#: "always" every time, "hang" never returns (a call stuck in native code: nothing in the process interrupts it).
#: Armed only for the Ray run: the --workers 1 run of the same copy is the oracle.
KILLER = """

import os as _os
import pathlib as _pathlib
import signal as _signal
import time as _time

_update_ticket = update_ticket


def update_ticket(state, args):
    arm = _pathlib.Path(__file__).with_name("die")
    if args.get("assignee") == "leo" and arm.exists():
        if arm.read_text() == "hang":
            _time.sleep(3600)
        if arm.read_text() == "once":
            arm.unlink()
        _os.kill(_os.getpid(), _signal.SIGKILL)
    return _update_ticket(state, args)
"""


def _killer_copy(ticketing: Path, tmp_path: Path) -> Path:
    tools = tmp_path / "ticketing"
    shutil.copytree(ticketing, tools)
    with (tools / "hooks.py").open("a") as hooks:
        hooks.write(KILLER)
    return tools


def _score_custom(tools: Path, out: Path, *pool: str) -> list[str]:
    return [
        "score",
        "custom",
        "--tools",
        str(tools / "tools.yaml"),
        str(tools / "rollouts.jsonl"),
        "--out",
        str(out),
        *pool,
    ]


@pytest.mark.slow
def test_a_unit_whose_actor_is_killed_is_sent_again(
    ray_session: RaySession, ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The actor replaying a rollout is SIGKILLed once: the rollout goes again to a new actor and the records
    are those of one worker (before the bound, it was reported unscorable and the run stopped with exit 2)."""
    tools = _killer_copy(ticketing, tmp_path)
    one, ray = tmp_path / "one.jsonl", tmp_path / "ray.jsonl"
    assert main(_score_custom(tools, one, "--workers", "1")) == 0
    (tools / "die").write_text("once")
    assert main(_score_custom(tools, ray, "--launcher", "ray", "--workers", "2")) == 0
    assert not (tools / "die").exists()  # an actor died on it
    assert "scored 12 rollouts" in capsys.readouterr().err
    assert ray.read_bytes() == one.read_bytes()


@pytest.mark.slow
def test_a_unit_that_kills_every_actor_is_an_infrastructure_failure_and_the_rest_are_scored(
    ray_session: RaySession, ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each actor given the rollout dies: after ATTEMPTS it is listed as not scored, the system's failure (exit
    1, never a label of the agent's), and every other record is the one worker's, in its place."""
    tools = _killer_copy(ticketing, tmp_path)
    one, ray = tmp_path / "one.jsonl", tmp_path / "ray.jsonl"
    assert main(_score_custom(tools, one, "--workers", "1")) == 0
    (tools / "die").write_text("always")
    capsys.readouterr()
    assert main(_score_custom(tools, ray, "--launcher", "ray", "--workers", "2")) == 1
    err = capsys.readouterr().err
    assert f"the Ray actor replaying it was lost {ray_pool.ATTEMPTS} times" in err
    assert "an infrastructure failure (the system's, not the input's nor the agent's)" in err
    assert "1 not scored for an infrastructure failure" in err and "Traceback" not in err
    lines = one.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not ('"triage-vpn"' in line and '"plan-conditioned"' in line)]
    assert len(kept) == 11
    assert ray.read_text() == "".join(kept)
    (tools / "die").unlink()  # disarmed (in this process it would end the test's): --resume scores the rollout
    assert main(_score_custom(tools, ray, "--workers", "1", "--resume")) == 0
    assert sorted(ray.read_text().splitlines()) == sorted(one.read_text().splitlines())


@pytest.mark.slow
def test_a_pool_whose_actors_never_start_fails_at_the_start_bound(
    ray_session: RaySession,
    ticketing: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Actors asking for more CPUs than any node has are never placed: the run ends with an error naming the
    start bound (exit 2), not a wait without end (before the bound, the run waited for them for good)."""
    monkeypatch.setattr(ray_pool, "ACTOR_CPUS", 1000.0)
    monkeypatch.setattr(cluster, "START_SECONDS", 2.0)
    out = tmp_path / "ray.jsonl"
    assert main(_score_custom(ticketing, out, "--launcher", "ray", "--workers", "2")) == 2
    err = capsys.readouterr().err
    assert "no Ray actor started within 2 s (2 asked for, 1000 CPU each)" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.slow
def test_more_actors_than_cpus_score_on_those_that_start(
    ray_session: RaySession, ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three actors of one CPU on the session's two: the third is never placed, and is given nothing (before,
    it was given rollouts and the run waited for it for good)."""
    one, ray = tmp_path / "one.jsonl", tmp_path / "ray.jsonl"
    assert main(_score_custom(ticketing, one, "--workers", "1")) == 0
    assert main(_score_custom(ticketing, ray, "--launcher", "ray", "--workers", "3")) == 0
    assert ray.read_bytes() == one.read_bytes()


@pytest.mark.slow
def test_a_unit_past_its_budget_and_the_grace_is_lost_and_its_actor_killed(
    ray_session: RaySession,
    ticketing: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A hook that never returns holds its actor: at the rollout's budget plus GRACE_SECONDS the actor is killed
    and the rollout sent again, then lost as the system's failure; the others are scored (before the bound, the
    run waited on that actor as long as the hook slept)."""
    monkeypatch.setattr(ray_pool, "GRACE_SECONDS", 1.0)
    tools = _killer_copy(ticketing, tmp_path)
    one, ray = tmp_path / "one.jsonl", tmp_path / "ray.jsonl"
    assert main(_score_custom(tools, one, "--workers", "1")) == 0
    (tools / "die").write_text("hang")
    capsys.readouterr()
    assert main(_score_custom(tools, ray, "--launcher", "ray", "--workers", "2", "--rollout-budget", "1")) == 1
    err = capsys.readouterr().err
    assert f"lost {ray_pool.ATTEMPTS} times (the last: it did not answer within 2 s, the rollout's budget" in err
    kept = [line for line in one.read_text().splitlines(keepends=True) if '"leo"' not in line]
    assert len(kept) == 11 and ray.read_text() == "".join(kept)


class _Unloadable:
    """Settings that pickle here but raise as an actor loads them (ZeroDivisionError), as a replayer holding a
    function of a script's ``__main__`` fails on a cluster's workers."""

    rollout_seconds = 1.0

    def __reduce__(self) -> tuple[object, tuple[int, int]]:
        return operator.truediv, (1, 0)


@pytest.mark.slow
def test_a_pool_whose_actors_die_as_they_start_fails_with_their_error(ray_session: RaySession) -> None:
    """Each actor dies as it loads the settings: it is asked for again, MOST_FAILED_STARTS times in a row at
    most, then the pool fails naming the error (before, every unit sent to it was lost, one after the other)."""
    actors = ray_pool.RayActors(_Unloadable(), 1, frozenset(), io.StringIO())  # type: ignore[arg-type]
    try:
        with pytest.raises(InputError, match=r"no Ray actor could start: each died as it started, 3 times in a row"):
            while True:  # as the schedule asks: is it started? then waits for it
                assert not actors.available(0)
                actors.collect(1.0)
        assert actors.failed_starts == [ray_pool.MOST_FAILED_STARTS]
        assert actors.given_up[0].endswith("creation task: ZeroDivisionError: division by zero")
    finally:
        actors.close()
