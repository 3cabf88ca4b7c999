"""The worker processes of ``score --workers N`` (scoring.pool.spawn, scoring.pool.processes): their
pipes hold up to a megabyte, so a worker holds its queue of transcripts (16 KB each) in the pipe while the reading
process is busy, and a pool of many workers takes at most a quarter of the user's budget for pipe buffers (past
the budget, every new pipe of the user's holds 8 KiB); those the command starts as it starts are the ones the pool
uses, and those it does not use end; the reading process reads a worker's answers in multiprocessing's own
framing, whole messages only, in order. Oracles: a multiprocessing Connection's send (the worker's end), the
kernel's own report of a pipe's size (F_GETPIPE_SZ) and Linux's default limits (pipe-max-size 1 MiB,
pipe-user-pages-soft 16384 pages of 4 KiB: 64 MiB), worked by hand."""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import pickle
import select
import selectors
import struct
import subprocess
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from prefix_exec.cli import WARM, start_workers
from prefix_exec.scoring.pool import deaths as pool_deaths
from prefix_exec.scoring.pool import dispatch as pool_dispatch
from prefix_exec.scoring.pool import sizing
from prefix_exec.scoring.pool import spawn as pool_spawn
from prefix_exec.scoring.pool.dispatch import pool_for
from prefix_exec.scoring.pool.messages import Died
from prefix_exec.scoring.pool.processes import Frames, Processes
from prefix_exec.scoring.pool.spawn import PIPE_BYTES, pipe_bytes, system_pipe_bytes, widen
from prefix_exec.scoring.replayer import Replayer
from prefix_exec.scoring.run import ScoreOptions, score_to_file
from prefix_exec.scoring.units import with_environment
from test_replay import CounterEnv, CounterSession, rollout

MIB = 1 << 20
LINUX_BUDGET = 16384 * 4096  # pipe-user-pages-soft's default, in bytes


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")
def test_a_pipe_is_widened_to_a_megabyte_or_the_systems_most() -> None:
    most = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    read, write = os.pipe()
    try:
        assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) == 65536  # the default: four transcripts
        widen(write, system_pipe_bytes(2))
        assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) == min(PIPE_BYTES, most)
        assert fcntl.fcntl(read, fcntl.F_GETPIPE_SZ) == min(PIPE_BYTES, most)  # one buffer for both ends
        widen(write, 0)  # 0: left as it is
        assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) == min(PIPE_BYTES, most)
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.parametrize(
    ("workers", "each"),
    [
        (1, MIB),
        (8, MIB),  # 16 pipes of 1 MiB: 16 MiB, a quarter of the budget
        (9, 512 * 1024),  # 18 pipes: 16 MiB / 18 = 910 KiB, rounded down to a power of two
        (32, 256 * 1024),  # at 1 MiB each, 64 pipes would take the whole budget
        (64, 128 * 1024),
        (128, 0),  # 64 KiB each at most: the default, left as it is
    ],
)
def test_the_pipes_of_a_pool_take_a_quarter_of_the_users_budget_at_most(workers: int, each: int) -> None:
    assert pipe_bytes(2 * workers, most=MIB, budget=LINUX_BUDGET) == each
    assert 2 * workers * each <= LINUX_BUDGET // 4


def test_the_systems_most_for_one_pipe_and_no_budget() -> None:
    assert pipe_bytes(2, most=256 * 1024, budget=LINUX_BUDGET) == 256 * 1024
    assert pipe_bytes(2, most=65536, budget=LINUX_BUDGET) == 0
    assert pipe_bytes(1000, most=MIB, budget=0) == MIB  # pipe-user-pages-soft 0: no budget


def _linux_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """This system's pipe limits read as Linux's defaults (pipe-max-size 1 MiB, 16384 pages of 4 KiB)."""
    limits = {"pipe-max-size": str(MIB), "pipe-user-pages-soft": "16384"}
    read_text = Path.read_text

    def fake(path: Path, *args: object, **kwargs: object) -> str:
        return limits[path.name] if path.name in limits else read_text(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", fake)
    monkeypatch.setattr(pool_spawn.os, "sysconf", lambda name: 4096)


def test_a_pool_of_64_workers_stays_within_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """The size the transport widens its pipes to (no worker is started here): on Linux's default limits 64
    workers' 128 pipes take 16 MiB, not 128 MiB (twice the budget: every later pipe of the user's would hold
    8 KiB)."""
    _linux_defaults(monkeypatch)
    pool = Processes(Replayer(None, None, 0), 64, first=0)
    try:
        assert pool.pipe_bytes == 128 * 1024
    finally:
        pool.close()


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")
def test_workers_started_early_have_pipes_sized_for_the_whole_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """``score --workers 65`` starts one worker early (two cores) for a pool of 64: its pipes are sized for 64
    workers (128 KiB on Linux's defaults), not for one (a megabyte each)."""
    _linux_defaults(monkeypatch)
    pool_spawn.start_early(1, WARM["custom"], pool=64)
    try:
        early = pool_spawn._early[0]
        for pipe in (early.orders, early.answers):
            assert fcntl.fcntl(pipe.fileno(), fcntl.F_GETPIPE_SZ) == 128 * 1024
    finally:
        pool_spawn.end_early()


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")
def test_a_new_pipe_keeps_its_default_size_beside_a_large_pool() -> None:
    """The kernel's oracle: after an unprivileged user's pipes of 64 workers are widened, that user's next pipe (a
    shell pipeline's, say) still holds 64 KiB. Run in a child process, as ``nobody`` when this is root (root's pipes
    are not bound by the budget)."""
    size = system_pipe_bytes(128)  # the limits are read here: the child makes system calls only
    with warnings.catch_warnings():
        # Other tests' threads (tqdm's monitor) may run in this process; the child takes none of their locks.
        warnings.filterwarnings(
            "ignore", message=".*use of fork\\(\\) may lead to deadlocks", category=DeprecationWarning
        )
        pid = os.fork()
    if pid == 0:  # the child: then _exit (nothing of pytest's runs here)
        code = 1
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            pipes = [os.pipe() for _ in range(128)]
            for _, write in pipes:
                widen(write, size)
            _, write = os.pipe()
            code = 0 if fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) == 65536 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_worker_started_early_is_adopted_by_the_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker spawned as the command starts is the one the pool uses (it gets its settings as its first
    message); the records are those of one worker."""
    monkeypatch.setattr(pool_dispatch, "REPLAY_HERE", False)
    pool_spawn.start_early(1, WARM["custom"])
    early = pool_spawn._early[0].process
    adopted: list[object] = []
    real = Processes.start

    def start(self: Processes, worker: int) -> None:
        real(self, worker)
        adopted.append(self.processes[worker])

    monkeypatch.setattr(Processes, "start", start)
    rollouts = [replace(rollout(("inc", {})), trial=trial) for trial in range(4)]
    score_to_file(
        with_environment(rollouts, CounterEnv()),
        tmp_path / "two.jsonl",
        options=ScoreOptions(dispatch=pool_for(2, "local")),
    )
    score_to_file(with_environment(rollouts, CounterEnv()), tmp_path / "one.jsonl")
    assert adopted[0] is early and len(adopted) == 2  # without REPLAY_HERE: two workers, the second new
    assert pool_spawn._early == []
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


#: Run in a new Python (one thread, as the command's entry point is): two workers started early with ``fork``, then
#: this process's ends of their inboxes closed; what each was, whether it ignores Ctrl-C, and how it ended.
FORKED_EARLY = """
import json, signal, sys
from prefix_exec.cli import WARM
from prefix_exec.scoring.pool import spawn
allowed = spawn.fork_allowed()
spawn.start_early(2, WARM["custom"], fork=True)
processes = [early.process for early in spawn._early]
methods = [type(process._popen).__module__ for process in processes]
ignored = []
for process in processes:
    with open(f"/proc/{process.pid}/status") as status:
        mask = next(int(line.split()[1], 16) for line in status if line.startswith("SigIgn:"))
    ignored.append(bool(mask >> (signal.SIGINT - 1) & 1))
for early in spawn._early:
    early.orders.close()
for process in processes:
    process.join(20)
print(json.dumps({"allowed": allowed, "methods": methods, "ignored": ignored,
                  "exits": [process.exitcode for process in processes]}))
spawn._early.clear()
"""


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked early on Linux only")
def test_workers_the_entry_point_starts_are_forked_and_end_when_their_inbox_closes() -> None:
    """The command's entry point forks its early workers (no new Python, no imports again). Each closes its copies
    of the reading process's pipe ends, its own and the earlier worker's: else closing a worker's inbox would
    never end it (the second worker would hold the first's inbox open, and each its own), and the pool's end
    would wait for the kill. Ctrl-C is ignored in them, as in a spawned worker."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run(
        [sys.executable, "-c", FORKED_EARLY], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {
        "allowed": True,
        "methods": ["multiprocessing.popen_fork"] * 2,
        "ignored": [True, True],
        "exits": [0, 0],
    }


#: Run in a new Python (one thread, as the command's entry point is): a thread started outside :mod:`threading`,
#: then what :mod:`threading` counts and whether a worker may be forked.
UNKNOWN_THREAD = """
import _thread, json, os, threading
from prefix_exec.scoring.pool import spawn
started, stop = threading.Event(), threading.Event()
def wait():
    started.set()
    stop.wait()
_thread.start_new_thread(wait, ())
started.wait()
print(json.dumps({"counted": threading.active_count(), "threads": len(os.listdir("/proc/self/task")),
                  "allowed": spawn.fork_allowed()}))
stop.set()
"""


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked early on Linux only")
def test_no_worker_is_forked_while_a_thread_python_does_not_count_runs() -> None:
    """A thread started outside :mod:`threading` (as a native library's pool is: OpenBLAS's at numpy's import) is
    not in ``threading.active_count()``; the system's count of the process's threads has it, and no worker is
    forked beside it."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run(
        [sys.executable, "-c", UNKNOWN_THREAD], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"counted": 1, "threads": 2, "allowed": False}


def test_no_worker_is_forked_while_another_thread_runs() -> None:
    """A fork copies only the thread that forks, with the locks the others hold: with a second thread running,
    workers are spawned."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert not pool_spawn.fork_allowed()
    finally:
        stop.set()
        other.join()


def test_a_worker_no_run_adopts_is_ended() -> None:
    """A worker started early for a command that then scores nothing (a usage error, a quick input) is ended by
    end_early (registered at exit): its pipe closed (it returns once its imports are done: see the next test), or
    killed when it is still importing."""
    pool_spawn.start_early(1, WARM["transcripts"])
    process = pool_spawn._early[0].process
    pool_spawn.end_early()
    assert pool_spawn._early == []
    assert not process.is_alive()


def test_a_worker_imports_only_the_warm_modules_it_knows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The modules a worker imports early are this package's, never another's (a name that is not is ignored,
    even one that exists); its inbox closed before its settings came, it returns. The oracle is the list
    of names it asked to import (sys.modules would not do: another test in this process may have imported any)."""
    imported: list[str] = []
    monkeypatch.setattr(pool_spawn, "import_module", imported.append)
    context = multiprocessing.get_context("spawn")
    inbox, to_worker = context.Pipe(duplex=False)
    _, outbox = context.Pipe(duplex=False)
    to_worker.close()
    pool_spawn.run(inbox, outbox, ("wave", "prefix_exec.envs.custom.environment", "os"))
    assert imported == ["prefix_exec.envs.custom.environment"]


@pytest.mark.parametrize(
    ("argv", "cores", "started"),
    [
        (["score", "transcripts", "x.jsonl", "--tools", "t.json"], 4, [(3, "transcripts", 3)]),
        (["score", "transcripts", "x.jsonl", "--workers", "2"], 4, [(1, "transcripts", 1)]),
        (["score", "custom", "x.jsonl", "--workers=8"], 2, [(1, "custom", 7)]),  # the pipes sized for all 7 workers
        (["score", "bfcl", "results", "--workers", "1"], 4, [(0, "bfcl", 0)]),
        (["score", "tau", "r.json", "--launcher", "ray"], 4, []),
        (["score", "tau", "r.json", "--launcher=ray", "--workers", "3"], 4, []),
        (["score", "transcripts", "--help"], 4, []),
        (["score", "nonsense", "x"], 4, []),
        (["metrics", "records.jsonl"], 4, []),
        (["score"], 4, []),
    ],
)
def test_the_command_line_starts_the_workers_score_starts_at_once(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], cores: int, started: list[tuple[int, str, int]]
) -> None:
    """As many as the pool starts at once: min(--workers, cores) - 1 (the reading process is one of them), their
    pipes sized for the pool's --workers - 1."""
    calls: list[tuple[int, tuple[str, ...], int]] = []

    def start_early(count: int, warm: tuple[str, ...], *, pool: int, fork: bool) -> None:
        assert fork  # the entry point, before its imports: forked where a fork is safe (fork_allowed)
        calls.append((count, warm, pool))

    monkeypatch.setattr(pool_spawn, "start_early", start_early)
    monkeypatch.setattr(pool_spawn, "usable_cores", lambda: cores)
    # Without --workers the default sizes the pool to the inputs and the idle cores (scoring/pool/sizing.py): here
    # a large input on an idle machine, so the default is every core, whatever this machine is doing.
    monkeypatch.setattr(sizing, "input_bytes", lambda paths, **_: 1 << 40)
    monkeypatch.setattr(sizing, "load_now", lambda cores=None: 0.0)
    start_workers(argv)
    assert calls == [(count, WARM[command], pool) for count, command, pool in started]


def _frames_pair() -> tuple[Frames, Connection]:
    """A pipe read by Frames, written by a multiprocessing Connection (the worker's end: its framing is the
    oracle)."""
    read, write = multiprocessing.get_context("spawn").Pipe(duplex=False)
    return Frames(read), write


def test_frames_reads_every_whole_message_a_connection_sent_in_order() -> None:
    frames, sender = _frames_pair()
    try:
        assert frames.read() == []  # nothing yet: no blocking
        sent = [(-1, None), (0, {"line": "x" * 5000}), (1, ("a", 2.5)), (2, b"\x00" * 70000)]
        writer = threading.Thread(target=lambda: [sender.send(message) for message in sent])
        writer.start()  # 70 KB is more than an unwidened pipe holds: read while it is written
        got: list[object] = []
        while len(got) < len(sent):
            select.select([frames], [], [], 5)
            got += frames.read()
        writer.join()
        assert got == sent and not frames.ended
    finally:
        frames.close()
        sender.close()


def test_frames_keeps_a_message_still_arriving_for_the_next_read_and_sees_the_end() -> None:
    frames, sender = _frames_pair()
    data = pickle.dumps((7, "a record's line"))
    framed = struct.pack("!i", len(data)) + data
    try:
        os.write(sender.fileno(), framed[:3])  # not even the whole size
        assert frames.read() == []
        os.write(sender.fileno(), framed[3:10])
        assert frames.read() == []
        os.write(sender.fileno(), framed[10:] + framed)  # the rest, and one more whole
        assert frames.read() == [(7, "a record's line"), (7, "a record's line")]
        sender.close()
        assert frames.read() == [] and frames.ended  # the worker's end closed: it ended
    finally:
        frames.close()


class _SendsAndDies:
    """A worker process that sends its last answer and ends just as the reading process checks on it: the
    answer is in the pipe once the process is seen dead (the kernel wrote it before the process ended)."""

    exitcode = -9

    def __init__(self, sender: Connection, answer: tuple[int, object]) -> None:
        self.sender: Connection | None = sender
        self.answer = answer

    def is_alive(self) -> bool:
        if self.sender is not None:
            self.sender.send(self.answer)
            self.sender.close()
            self.sender = None
        return False

    def join(self, timeout: float | None = None) -> None:
        return None


def test_an_answer_sent_just_before_a_worker_dies_is_not_lost() -> None:
    """A worker that answers its rollout and then dies (killed by the out-of-memory killer on the next one): its
    answer is read and listed before its death, so the answered rollout is written and the one it died on is the
    one listed unscorable. Oracle: what the worker sent, then Died."""
    pool = Processes(Replayer(None, None, 0), 1, first=0)
    frames, sender = _frames_pair()
    try:
        pool.processes[0] = _SendsAndDies(sender, (5, pickle.dumps("the record of rollout 5")))  # serve's form
        pool.inboxes[0] = frames
        events = pool._receive(0)
        assert [(worker, seq) for worker, seq, _ in events] == [(0, 5), (0, None)]
        assert events[0][2] == "the record of rollout 5"
        assert events[1][2] == Died("killed by SIGKILL, perhaps out of memory")
    finally:
        frames.close()
        sender.close()
        pool.selector.close()


class _Importing:
    """A worker process still importing: it ends only when killed (a join waits its whole timeout until then)."""

    def __init__(self) -> None:
        self.killed = False

    def is_alive(self) -> bool:
        return not self.killed

    def join(self, timeout: float | None = None) -> None:
        if not self.killed and timeout:
            time.sleep(timeout)

    def kill(self) -> None:
        self.killed = True


class _Pipe:
    def close(self) -> None:
        return None


def test_a_worker_that_cannot_be_started_early_is_left_to_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting workers early only saves time: when a spawn fails (the user's process or file limit: EAGAIN,
    EMFILE) those started are kept and the command goes on (the pool starts the rest, and says what fails as the
    command's error), with no traceback from the console entry."""
    first = pool_spawn.Spawned(_Importing(), _Pipe(), _Pipe())
    spawned = iter([first])

    def spawn(warm: tuple[str, ...] = (), pipe_size: int = 0, *, fork: bool = False) -> pool_spawn.Spawned:
        for one in spawned:
            return one
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(pool_spawn, "spawn", spawn)
    monkeypatch.setattr(pool_spawn, "usable_cores", lambda: 4)
    monkeypatch.setattr(pool_spawn, "_early", [])
    start_workers(["score", "custom", "spec.json", "rollouts.jsonl", "--workers", "4"])
    assert pool_spawn._early == [first]
    pool_spawn.end_early()


class SlowCounterEnv(CounterEnv):
    """CounterEnv whose sessions take 20 ms to start: a run long enough for a worker to die several times."""

    def start(self, task_id: str) -> CounterSession:
        time.sleep(0.02)
        return super().start(task_id)


def _nothing(record: object) -> None:
    return None


class LookAway:
    """An Observer whose look is a function of a module that only this process has (as a notebook's or a script's
    ``__main__`` is): it pickles here by name, and a spawned worker cannot load it."""

    def __init__(self, look: Callable[[object], object]) -> None:
        self.look = look
        self.taken = 0

    def take(self, key: object, seen: object) -> None:
        self.taken += 1


def test_a_worker_that_cannot_load_its_settings_is_not_restarted_all_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each start of the worker dies before it is ready (its settings name a module it cannot import): after
    MOST_FAILED_STARTS starts it is stopped, not restarted every 0.3 s for the rest of the run; this process
    replays every rollout, the log says so once, and the records are those of one worker."""
    module = types.ModuleType("prefix_exec_only_here")
    look = types.FunctionType(_nothing.__code__, {}, "look")  # a function of that module, by name
    look.__module__, look.__qualname__ = module.__name__, "look"
    module.look = look  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    starts: list[int] = []
    real = Processes.start

    def start(self: Processes, worker: int) -> None:
        starts.append(worker)
        real(self, worker)

    monkeypatch.setattr(Processes, "start", start)
    rollouts = [replace(rollout(("inc", {})), trial=trial) for trial in range(150)]  # 3 s replayed here
    observer = LookAway(look)
    score_to_file(
        with_environment(rollouts, SlowCounterEnv()),
        tmp_path / "two.jsonl",
        on_record=observer,
        options=ScoreOptions(dispatch=pool_for(2)),
    )
    score_to_file(with_environment(rollouts, CounterEnv()), tmp_path / "one.jsonl")
    assert starts == [0] * pool_deaths.MOST_FAILED_STARTS
    assert observer.taken == len(rollouts)
    assert capsys.readouterr().err.count("ended before it was ready 3 times in a row") == 1
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


def test_a_worker_whose_end_its_pipes_do_not_show_is_seen_dead_after_a_bounded_wait() -> None:
    """A process the worker forked may outlive it and hold its pipes open: its sentinel and its answers' pipe
    then never become ready. Simulated by watching, in their place, a pipe whose writing end this test holds: a
    wait that times out looks whether the worker is alive, so its death is reported, not waited for without end."""
    pool = Processes(Replayer(None, None, 0), 1)
    quiet, held_open = os.pipe()
    try:
        deadline = time.monotonic() + 60
        while not pool.available(0) and time.monotonic() < deadline:
            pool.collect(0.5)
        assert pool.available(0)
        for watched in (pool.inboxes[0], pool.processes[0].sentinel):
            pool.selector.unregister(watched)
        pool.selector.register(quiet, selectors.EVENT_READ, 0)
        pool.processes[0].kill()
        pool.processes[0].join(5)
        events = pool.collect(0.2)
        assert [(worker, seq, type(outcome)) for worker, seq, outcome in events] == [(0, None, Died)]
    finally:
        pool.close()
        os.close(quiet)
        os.close(held_open)


class Picky(Exception):
    """An exception that pickles but does not load: unpickling calls Picky(*args) with its one formatted arg."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what}: {why}")


class PickyEnv(CounterEnv):
    """CounterEnv whose session raises Picky (a bug the replay lets through) for the task named 'picky'."""

    def start(self, task_id: str) -> CounterSession:
        if task_id == "picky":
            raise Picky("picky", "a hook's own error")
        return super().start(task_id)


def test_a_workers_answer_that_does_not_load_here_is_replayed_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rollout whose replay raises an exception that pickles in the worker but does not load here: the reading
    process replays it itself, so the run ends as one worker's does, with that error raised in its turn after the
    records before it are written (not an unpickling TypeError, losing the answers read with it)."""
    monkeypatch.setattr(pool_dispatch, "REPLAY_HERE", False)  # every rollout goes to a worker
    rollouts = [replace(rollout(("inc", {})), trial=trial) for trial in range(6)]
    rollouts.insert(4, replace(rollout(("inc", {})), task_id="picky"))
    for workers, name in ((2, "two.jsonl"), (1, "one.jsonl")):
        with pytest.raises(Picky, match="picky: a hook's own error"):
            score_to_file(
                with_environment(rollouts, PickyEnv()),
                tmp_path / name,
                options=ScoreOptions(dispatch=pool_for(workers)),
            )
    assert "a worker's answer could not be read here (TypeError" in capsys.readouterr().err
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert (tmp_path / "one.jsonl").read_bytes().count(b"\n") == 4
