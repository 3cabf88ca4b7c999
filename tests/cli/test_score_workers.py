"""``score --workers N``: the records of one worker, in its order, whatever the number of workers.

Oracle: the same command at ``--workers 1`` (the in-process path every other test checks against hand oracles).
With ``--launcher local`` the reading process replays too, whenever no ready worker has room; these small inputs
would mostly be done before a worker is ready, so most tests turn that off (``pool_dispatch.REPLAY_HERE``): every
rollout then goes through the worker processes. ``test_replayed_here_and_in_workers`` mixes both.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefix_exec.cli import main, score_transcripts
from prefix_exec.cli.common import add_scoring_options, output_options
from prefix_exec.scoring.pool import dispatch as pool_dispatch
from prefix_exec.scoring.pool import processes as pool_processes
from prefix_exec.scoring.pool import schedule as pool_schedule
from prefix_exec.scoring.pool.dispatch import pool_for
from prefix_exec.scoring.run import ScoreOptions, hold_lock
from prefix_exec.scoring.units import Batch, Undecoded
from prefix_exec.trajectory import Rollout

REPO = Path(__file__).resolve().parents[2]
TAU_BENCH = REPO / "tests" / "data" / "tau-bench"
TRANSCRIPTS = REPO / "examples" / "transcripts"


@pytest.fixture(autouse=True)
def pool_for_small_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_dispatch, "REPLAY_HERE", False)


def score(args: list[str], out: Path, workers: int, *extra: str) -> int:
    return main(["score", *args, "--out", str(out), "--workers", str(workers), *extra])


def same_at_one_and_two(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[str, str]:
    """Score ``args`` at --workers 1 and 2; assert the same exit code and byte-identical records; the stderr of
    each run."""
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    code_one = score(args, one, 1, *extra)
    err_one = capsys.readouterr().err
    code_two = score(args, two, 2, *extra)
    err_two = capsys.readouterr().err
    assert code_one == code_two, err_two
    assert one.read_bytes() == two.read_bytes()
    assert one.read_bytes().count(b"\n") >= 2  # something was scored: the comparison says something
    return err_one, err_two


def skipped_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("prefix-exec: skipped")]


def test_custom_with_hooks(ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A spec with a hooks module (which does not pickle) reaches the workers as its recipe."""
    args = ["custom", "--tools", str(ticketing / "tools.yaml"), str(ticketing / "rollouts.jsonl")]
    _, err_two = same_at_one_and_two(args, tmp_path, capsys)
    assert "cannot be sent to worker processes" not in err_two
    assert "scored 12 rollouts" in err_two


def test_transcripts_on_their_own_tools_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(TRANSCRIPTS / name) for name in ("openai-chat.jsonl", "anthropic.jsonl", "langchain.json")]
    _, err_two = same_at_one_and_two(["transcripts", *files], tmp_path, capsys)
    assert "cannot be sent to worker processes" not in err_two


def test_transcripts_on_a_tools_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tau-bench's real conversations on its tools list (200 rollouts)."""
    args = ["transcripts", str(TAU_BENCH / "gpt-4o-airline.json"), "--tools", str(TAU_BENCH / "airline-tools.json")]
    same_at_one_and_two([*args, "--model", "gpt-4o"], tmp_path, capsys)


def test_toolsandbox(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    same_at_one_and_two(["toolsandbox", str(shared_data / "toolsandbox" / "run_public")], tmp_path, capsys)


def bfcl_results(shared_data: Path, folder: Path, count: int) -> list[str]:
    """The ``score bfcl`` arguments of the first ``count`` base results of both models of the shared data (the
    same tasks, in the same order), written into ``folder``."""
    for model in ("glyphh-ada-1.1", "airev-agent-0.8b"):
        name = "BFCL_v4_multi_turn_base_result.json"
        lines = (shared_data / "bfcl" / model / name).read_text(encoding="utf-8").splitlines()
        (folder / model).mkdir()
        (folder / model / name).write_text("\n".join(lines[:count]) + "\n", encoding="utf-8")
    return ["bfcl", str(folder / "glyphh-ada-1.1"), str(folder / "airev-agent-0.8b")]


def test_bfcl(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A few real results of each format; BFCL's final-success check (``prepare``) runs in the workers."""
    pytest.importorskip("bfcl_eval")
    same_at_one_and_two(bfcl_results(shared_data, tmp_path, 4), tmp_path, capsys)


@pytest.mark.slow
def test_tau(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each worker builds the tau2 domain once from the file's recipe; the consistency reports agree too."""
    pytest.importorskip("tau2")
    args = ["tau", str(shared_data / "tau" / "gpt-4.1_airline_1trial.json")]
    _, err_two = same_at_one_and_two(args, tmp_path, capsys)
    assert "cannot be sent to worker processes" not in err_two
    one = json.loads((tmp_path / "one.jsonl.consistency.json").read_text(encoding="utf-8"))
    two = json.loads((tmp_path / "two.jsonl.consistency.json").read_text(encoding="utf-8"))
    assert one == two


@pytest.mark.slow
def test_inspect(inspect_notes: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("inspect_ai")
    same_at_one_and_two(["inspect", *map(str, inspect_notes)], tmp_path, capsys)


def test_resume_with_two_workers(ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run killed after 5 records, resumed with two workers, ends as one uninterrupted run."""
    args = ["custom", "--tools", str(ticketing / "tools.yaml"), str(ticketing / "rollouts.jsonl")]
    full = tmp_path / "full.jsonl"
    assert score(args, full, 1) == 0
    resumes_with_two_workers(args, full, tmp_path / "partial.jsonl", capsys)


def resumes_with_two_workers(args: list[str], full: Path, partial: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``full``'s first 5 records and a torn line, as a kill leaves them, resumed with two workers: ``full``."""
    lines = full.read_text(encoding="utf-8").splitlines(keepends=True)
    partial.write_text("".join(lines[:5]) + lines[5][:40], encoding="utf-8")
    capsys.readouterr()
    assert score(args, partial, 2, "--resume") == 0
    assert "5 already in the output were kept" in capsys.readouterr().err
    assert partial.read_bytes() == full.read_bytes()


def test_the_lock_holds_with_workers(ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    args = ["custom", "--tools", str(ticketing / "tools.yaml"), str(ticketing / "rollouts.jsonl")]
    with hold_lock(out):
        assert score(args, out, 2) == 2
    assert "another prefix-exec process is writing this output file" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == ""  # nothing was written beside the holder


def bad_rollouts(ticketing: Path, folder: Path) -> Path:
    """The example's rollouts with a malformed line after the 3rd and a rollout of an unknown task after the 7th."""
    lines = (ticketing / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    unknown = json.loads(lines[0])
    unknown["task_id"] = "no-such-task"
    path = folder / "bad.jsonl"
    path.write_text("\n".join([*lines[:3], "{not json", *lines[3:7], json.dumps(unknown), *lines[7:]]) + "\n")
    return path


def test_bad_units_stay_isolated(ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --keep-going each bad unit is listed, in input order, and every other rollout is scored."""
    args = ["custom", "--tools", str(ticketing / "tools.yaml"), str(bad_rollouts(ticketing, tmp_path))]
    err_one, err_two = same_at_one_and_two(args, tmp_path, capsys, "--keep-going")
    assert skipped_lines(err_two) == skipped_lines(err_one)
    assert len(skipped_lines(err_two)) == 2
    assert "scored 12 rollouts" in err_two


def test_the_first_bad_unit_stops_the_run_where_one_worker_stops(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --keep-going the records before the first bad unit are written, and none after it."""
    args = ["custom", "--tools", str(ticketing / "tools.yaml"), str(bad_rollouts(ticketing, tmp_path))]
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert score(args, one, 1) == 2
    assert score(args, two, 2) == 2
    assert two.read_bytes() == one.read_bytes()
    assert two.read_bytes().count(b"\n") == 3


def deadly_spec(ticketing: Path, folder: Path) -> tuple[Path, Path]:
    """The example's spec whose search hook kills its process (SIGKILL, as the kernel's OOM killer does) on the
    query 'die' when it runs in a worker process; the example's rollouts with such a search as the 6th."""
    spec = folder / "spec"
    shutil.copytree(ticketing, spec)
    hooks = spec / "hooks.py"
    hooks.write_text(
        hooks.read_text(encoding="utf-8").replace(
            "def search_tickets(state: State, args: Args) -> Any:\n",
            "def search_tickets(state: State, args: Args) -> Any:\n"
            "    import multiprocessing, os, signal\n"
            "    if args['query'] == 'die' and multiprocessing.parent_process() is not None:\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n",
        ),
        encoding="utf-8",
    )
    lines = (spec / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    deadly = json.loads(lines[0])
    deadly["task_id"] = "new-laptop"
    deadly["trial"] = 7
    assert deadly["actions"][1]["name"] == "search_tickets"
    deadly["actions"][1]["arguments"]["query"] = "die"
    rollouts = folder / "rollouts.jsonl"
    rollouts.write_text("\n".join([*lines[:5], json.dumps(deadly), *lines[5:]]) + "\n", encoding="utf-8")
    return spec / "tools.yaml", rollouts


def test_a_worker_that_dies_costs_one_rollout(
    ticketing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools, rollouts = deadly_spec(ticketing, tmp_path)
    args = ["custom", "--tools", str(tools), str(rollouts)]
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert score(args, one, 1) == 0  # in this process the hook does not kill
    capsys.readouterr()
    assert score(args, two, 2, "--keep-going") == 2
    err = capsys.readouterr().err
    [line] = skipped_lines(err)
    assert "task new-laptop (model example-model, method react, trial 7)" in line
    assert "the worker process died replaying it (killed by SIGKILL, perhaps out of memory)" in line
    kept = [row for row in one.read_text(encoding="utf-8").splitlines() if '"trial": 7' not in row]
    assert len(kept) == 12
    assert two.read_text(encoding="utf-8").splitlines() == kept


def slow_spec(ticketing: Path, folder: Path) -> tuple[Path, Path]:
    """The example whose every login takes 0.3 s, and its rollouts four times over (as trials 0 to 3)."""
    spec = folder / "spec"
    shutil.copytree(ticketing, spec)
    hooks = spec / "hooks.py"
    hooks.write_text(
        hooks.read_text(encoding="utf-8").replace(
            "def login(state: State, args: Args) -> Any:\n",
            "def login(state: State, args: Args) -> Any:\n    import time\n    time.sleep(0.3)\n",
        ),
        encoding="utf-8",
    )
    rows = [json.loads(line) for line in (spec / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()]
    rollouts = folder / "rollouts.jsonl"
    rollouts.write_text("".join(json.dumps({**r, "trial": t}) + "\n" for t in range(4) for r in rows))
    return spec / "tools.yaml", rollouts


@pytest.mark.slow
def test_sigterm_ends_the_pool_cleanly_and_resume_finishes(ticketing: Path, tmp_path: Path) -> None:
    """SIGTERM mid-run: exit 130 with the usual message and no traceback, no worker left behind; --resume then
    completes the file as one uninterrupted run writes it."""
    tools, rollouts = slow_spec(ticketing, tmp_path)
    out, full = tmp_path / "out.jsonl", tmp_path / "full.jsonl"
    args = ["score", "custom", "--tools", str(tools), str(rollouts), "--workers", "2"]
    command = [sys.executable, "-m", "prefix_exec.cli", *args, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 300
    while not (out.is_file() and out.read_bytes().count(b"\n") >= 1) and process.poll() is None:
        assert time.monotonic() < deadline, "no record was written"
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    if process.returncode == 0:
        pytest.skip("the run finished before SIGTERM reached it")  # a very fast machine: nothing to test
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted; records written so far are kept" in err
    assert subprocess.run([*command, "--resume"], env=env, capture_output=True, check=False).returncode == 0
    assert main([*args[:-2], "--workers", "1", "--out", str(full)]) == 0
    assert out.read_bytes() == full.read_bytes()


def test_usable_cores_and_exit_descriptions() -> None:
    assert 1 <= pool_dispatch.usable_cores() <= (os.cpu_count() or 1)
    assert pool_processes.describe_exit(-signal.SIGKILL) == "killed by SIGKILL, perhaps out of memory"
    assert pool_processes.describe_exit(-signal.SIGSEGV) == "killed by SIGSEGV"
    assert pool_processes.describe_exit(3) == "exit code 3"


@pytest.mark.parametrize(
    ("workers", "launcher", "expected"),
    [(1, "local", None), (3, "local", pool_dispatch.Pool(3)), (1, "ray", pool_dispatch.Pool(1, "ray"))],
)
def test_the_pool_is_handed_to_scoring_only_beyond_one_worker_here(
    workers: int, launcher: str, expected: pool_dispatch.Pool | None
) -> None:
    """score_to_file replays in process unless its caller hands it a pool: --workers above 1, or Ray actors."""
    parser = argparse.ArgumentParser()
    add_scoring_options(parser)
    args = parser.parse_args(["--out", "o.jsonl", "--workers", str(workers), "--launcher", launcher])
    assert output_options(args).dispatch == expected


def test_a_quick_input_is_replayed_here(
    ticketing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An input scored before START_SECONDS starts no worker where no core is idle (one core), and on two cores
    only the one worker the idle core takes, at once: this process replays while they start."""
    monkeypatch.setattr(pool_dispatch, "REPLAY_HERE", True)
    monkeypatch.setattr(pool_schedule, "START_SECONDS", 3600.0)
    args = ["custom", "--tools", str(ticketing / "tools.yaml"), str(ticketing / "rollouts.jsonl")]
    started: list[int] = []
    real = pool_dispatch.Processes.start
    monkeypatch.setattr(
        pool_dispatch.Processes, "start", lambda self, worker: started.append(worker) or real(self, worker)
    )
    monkeypatch.setattr(pool_dispatch, "usable_cores", lambda: 1)
    assert score(args, tmp_path / "one.jsonl", 1) == 0
    assert score(args, tmp_path / "out.jsonl", 3) == 0
    assert started == []
    monkeypatch.setattr(pool_dispatch, "usable_cores", lambda: 2)
    assert score(args, tmp_path / "out.jsonl", 3, "--overwrite") == 0
    assert started == [0]
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


def counted(monkeypatch: pytest.MonkeyPatch) -> tuple[list[object], list[object]]:
    """This process's replays and the units sent to workers, as the schedule makes them, counted (a worker counts
    as ready, its environment built, at once, so it is sent its first units while it starts)."""
    monkeypatch.setattr(pool_dispatch, "REPLAY_HERE", True)
    monkeypatch.setattr(pool_dispatch.Processes, "available", lambda self, worker: self.processes[worker] is not None)
    monkeypatch.setattr(pool_dispatch.Processes, "holds", lambda self, worker, token: True)
    here: list[object] = []
    sent: list[object] = []
    schedule = pool_schedule.Schedule
    real_here, real_dispatch = schedule.replay_here, schedule.dispatch
    monkeypatch.setattr(schedule, "replay_here", lambda self, unit: here.append(unit) or real_here(self, unit))
    monkeypatch.setattr(schedule, "dispatch", lambda self, *a: sent.append(a[2]) or real_dispatch(self, *a))
    return here, sent


def test_replayed_here_and_in_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Conversations sent one by one (their file is larger than BATCH_BYTES): this process replays whenever no
    worker has room, the worker the rest; the records and skipped lines are those of one worker, conversations
    numbered as further trials, duplicates and an unreadable one included."""
    here, sent = counted(monkeypatch)
    monkeypatch.setattr(score_transcripts, "BATCH_BYTES", 0)
    args = ["transcripts", str(odd_conversations(tmp_path)), "--tools", str(TAU_BENCH / "airline-tools.json")]
    for extra in ([], ["--unique-task"]):
        here.clear()
        sent.clear()
        err_one, err_two = same_at_one_and_two(
            [*args, "--model", "gpt-4o", *extra], tmp_path, capsys, "--keep-going", "--overwrite"
        )
        assert skipped_lines(err_two) == skipped_lines(err_one)
        assert here and sent and len(here) + len(sent) == 43
        assert not any(isinstance(unit, Batch) for unit in sent)
    args = ["transcripts", str(TAU_BENCH / "gpt-4o-airline.json"), "--tools", str(TAU_BENCH / "airline-tools.json")]
    same_at_one_and_two([*args, "--model", "gpt-4o"], tmp_path, capsys, "--overwrite")


def test_bfcl_tasks_are_replayed_where_their_first_rollout_was(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """score bfcl hands each result line to a worker undecoded, named by its task (its affinity): the second
    model's rollout of a task the worker replayed first goes to the worker, which holds the task's ground truth
    and initial state, unless this process, with nothing else to do, takes it from those waiting for the worker
    (one this process replayed first may go to a worker about to run dry); the records are one worker's, and a run
    killed midway and resumed with two workers ends as one uninterrupted run."""
    pytest.importorskip("bfcl_eval")
    counted(monkeypatch)  # the worker counts as ready at once, and this process replays too
    where: list[tuple[str, str]] = []  # (task, "here", "stolen" or "worker"), in the order they were placed
    schedule = pool_schedule.Schedule
    real_here, real_dispatch, real_steal = schedule.replay_here, schedule.dispatch, schedule.steal
    stealing: list[bool] = []

    def steal(self: pool_schedule.Schedule) -> bool:
        stealing.append(True)
        try:
            return real_steal(self)
        finally:
            stealing.pop()

    def named(unit: Undecoded) -> str:
        decoded = unit.decode()
        assert isinstance(decoded, Rollout) and unit.affinity == decoded.task_id  # each line named by its task
        return decoded.task_id

    def replay_here(self: pool_schedule.Schedule, unit: Undecoded) -> object:
        where.append((named(unit), "stolen" if stealing else "here"))
        return real_here(self, unit)

    def dispatch(self: pool_schedule.Schedule, worker: int, seq: int, unit: Undecoded, token: int) -> None:
        where.append((named(unit), "worker"))
        real_dispatch(self, worker, seq, unit, token)

    monkeypatch.setattr(schedule, "replay_here", replay_here)
    monkeypatch.setattr(schedule, "dispatch", dispatch)
    monkeypatch.setattr(schedule, "steal", steal)
    args = bfcl_results(shared_data, tmp_path, 8)
    same_at_one_and_two(args, tmp_path, capsys)
    first: dict[str, str] = {}
    for task, process in where:
        first.setdefault(task, process)
    assert len(where) == 16 and set(first.values()) == {"here", "worker"}
    assert all(process != "here" for task, process in where if first[task] == "worker")
    assert all(first[task] == "worker" for task, process in where if process == "stolen")
    resumes_with_two_workers(args, tmp_path / "one.jsonl", tmp_path / "partial.jsonl", capsys)


def test_files_read_here_and_in_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files of conversations as batches: a worker reads, decodes and replays a whole file; this process reads the
    files no worker can take and replays their conversations itself. The records, skipped lines and notes are
    those of one worker, in its order, with repeats across files (numbered as further trials, or refused with
    --unique-task) and an unreadable record."""
    here, sent = counted(monkeypatch)
    odd = json.loads(odd_conversations(tmp_path).read_text(encoding="utf-8"))
    folder = tmp_path / "parts"
    folder.mkdir()
    for part in range(5):
        (folder / f"part{part}.json").write_text(json.dumps(odd[part * 9 : part * 9 + 9]), encoding="utf-8")
    args = ["transcripts", str(folder), "--tools", str(TAU_BENCH / "airline-tools.json"), "--model", "gpt-4o"]
    for extra in ([], ["--unique-task"]):
        here.clear()
        sent.clear()
        err_one, err_two = same_at_one_and_two([*args, *extra], tmp_path, capsys, "--keep-going", "--overwrite")
        notes = [[line for line in err.splitlines() if "conversations read as" in line] for err in (err_one, err_two)]
        # The last file's unreadable record counts as read once handed out undecoded (TranscriptFile.undecoded)
        assert len(notes[0]) == 5 and notes[0][:4] == notes[1][:4] and "7 conversations" in notes[1][4]
        assert skipped_lines(err_two) == skipped_lines(err_one) and skipped_lines(err_one)
        # Whole files, and, once every file is read, units of the file this process reads, from its end (share)
        batches = [unit for unit in sent if isinstance(unit, Batch)]
        assert batches and all(isinstance(unit, Batch | Undecoded) for unit in sent)
        in_batches = sum(isinstance(unit, Undecoded) for batch in batches for unit in batch.expand()[0])
        # every conversation once (the unreadable one fails where it is decoded)
        assert here and len(here) + in_batches + len(sent) - len(batches) == 43


def test_what_cannot_be_sent_is_replayed_here(ticketing: Path, tmp_path: Path) -> None:
    """An environment without a recipe that does not pickle, or a ``prepare`` that does not pickle (a library
    caller's lambda), is replayed in this process, said once; the records are those of one worker."""
    import io

    from prefix_exec.envs.custom.environment import load_spec
    from prefix_exec.scoring.run import score_to_file
    from prefix_exec.scoring.units import Scorable, with_environment
    from prefix_exec.sources.spec import read_units
    from prefix_exec.trajectory import Skipped

    env = load_spec(ticketing / "tools.yaml")  # its hooks module does not pickle

    def units() -> Iterator[Scorable | Skipped]:
        rollouts = read_units([str(ticketing / "rollouts.jsonl")], keep_going=False, model=None, method=None)
        return with_environment(rollouts, env)

    score_to_file(units(), tmp_path / "one.jsonl")  # one worker: in this process
    for name, prepare in (("env", None), ("prepare", lambda rollout: rollout)):
        log = io.StringIO()
        score_to_file(
            units(), tmp_path / f"{name}.jsonl", prepare=prepare, log=log, options=ScoreOptions(dispatch=pool_for(2))
        )
        assert log.getvalue().count("cannot be sent to work") == 1
        assert (tmp_path / f"{name}.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


def odd_conversations(folder: Path) -> Path:
    """tau-bench's first 40 conversations, then: the 4th again (read from another place, so another rollout of
    its task and trial: numbered as a further trial), the 6th with its last message changed (the same), and a
    record whose messages are no list (unreadable: it fails before its messages are decoded)."""
    rows = json.loads((TAU_BENCH / "gpt-4o-airline.json").read_text(encoding="utf-8"))[:40]
    changed = json.loads(json.dumps(rows[5]))
    changed["traj"][-1]["content"] = "something else"
    path = folder / "odd.json"
    rows += [rows[3], changed, {**rows[7], "traj": 5}]
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_transcripts_are_decoded_in_the_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a --tools spec a worker decodes each conversation; this process decodes only those whose worker's
    answer does not settle them as one worker would: a duplicate, one numbered as a further trial, one that does
    not decode. Records and skipped lines are those of one worker,
    with --unique-task too (the two repeated identities refused instead of numbered)."""
    from prefix_exec.importers import transcripts

    decoded: list[int] = []
    real = transcripts.decode
    monkeypatch.setattr(transcripts, "decode", lambda *a: decoded.append(1) or real(*a))
    args = ["transcripts", str(odd_conversations(tmp_path)), "--tools", str(TAU_BENCH / "airline-tools.json")]
    err_one, err_two = same_at_one_and_two([*args, "--model", "gpt-4o"], tmp_path, capsys, "--keep-going")
    assert len(decoded) == 42 + 2  # one worker: all 42 readable; two: only the 2 whose answer does not settle
    assert skipped_lines(err_two) == skipped_lines(err_one)
    assert len(skipped_lines(err_two)) == 1  # the unreadable record
    assert "2 rollout(s) of 2 task(s) share their dataset" in err_two  # numbered as further trials
    assert "scored 42 rollouts" in err_two
    err_one, err_two = same_at_one_and_two(
        [*args, "--model", "gpt-4o", "--unique-task"], tmp_path, capsys, "--keep-going", "--overwrite"
    )
    assert skipped_lines(err_two) == skipped_lines(err_one)
    assert len(skipped_lines(err_two)) == 3
    assert "a different rollout has this dataset, task, model, method and trial" in err_two


def test_resume_decodes_in_the_workers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run of undecoded conversations killed after 5 records, resumed with two workers, ends as one
    uninterrupted run; the kept ones are not scored again."""
    args = ["transcripts", str(odd_conversations(tmp_path)), "--tools", str(TAU_BENCH / "airline-tools.json")]
    args += ["--model", "gpt-4o", "--keep-going"]
    full, partial = tmp_path / "full.jsonl", tmp_path / "partial.jsonl"
    assert score(args, full, 1) == 2
    lines = full.read_text(encoding="utf-8").splitlines(keepends=True)
    partial.write_text("".join(lines[:5]) + lines[5][:40], encoding="utf-8")
    capsys.readouterr()
    assert score(args, partial, 2, "--resume") == 2
    assert "5 already in the output were kept" in capsys.readouterr().err
    assert partial.read_bytes() == full.read_bytes()


def test_unreadable_files_and_records_in_batches_end_as_with_one_worker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files a worker reads whole: one that is not JSON and a JSONL record that is not, between good files. With
    --keep-going each is listed and the rest scored; without, the run stops where one worker stops, the records
    before it written. Oracle: --workers 1."""
    rows = json.loads((TAU_BENCH / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(rows[:6]), encoding="utf-8")
    (folder / "b.json").write_text("{not json", encoding="utf-8")
    lines = [json.dumps(row) for row in rows[6:12]]
    (folder / "c.jsonl").write_text("\n".join([*lines[:3], "{not json", *lines[3:]]) + "\n", encoding="utf-8")
    args = ["transcripts", str(folder), "--tools", str(TAU_BENCH / "airline-tools.json"), "--model", "gpt-4o"]
    err_one, err_two = same_at_one_and_two(args, tmp_path, capsys, "--keep-going")
    assert skipped_lines(err_two) == skipped_lines(err_one) and len(skipped_lines(err_one)) == 2
    assert "scored 12 rollouts" in err_two
    one, two = tmp_path / "stop1.jsonl", tmp_path / "stop2.jsonl"
    assert score(args, one, 1) == score(args, two, 2) == 2
    assert two.read_bytes() == one.read_bytes() and one.read_bytes().count(b"\n") == 6
    assert "b.json" in capsys.readouterr().err


def test_hostile_files_read_by_workers_end_as_with_one_worker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every hostile whole document of the sweep (not JSON, 100,000 nested brackets, a 6,000-digit number, a
    FIFO, a link to /dev/zero, wrappers, ...), each a file a worker process reads whole, beside a good file: the
    run ends in bound, without a traceback, with one worker's exit code, records and skipped lines."""
    import hostile_transcripts
    from hostile_files import write_case_file

    folder = tmp_path / "hostile"
    folder.mkdir()
    for name, (text, _) in hostile_transcripts.DOCUMENTS.items():
        write_case_file(folder / f"{name}.json", text)
    rows = json.loads((TAU_BENCH / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    (folder / "good.json").write_text(json.dumps(rows[:4]), encoding="utf-8")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(json.loads((TAU_BENCH / "airline-tools.json").read_text()) + hostile_transcripts.TOOLS))
    args = ["transcripts", str(folder), "--tools", str(tools), "--model", "m"]
    started = time.monotonic()
    err_one, err_two = same_at_one_and_two(args, tmp_path, capsys, "--keep-going")
    assert time.monotonic() - started < 120
    assert "Traceback" not in err_one + err_two
    assert skipped_lines(err_two) == skipped_lines(err_one) and len(skipped_lines(err_one)) >= 8
