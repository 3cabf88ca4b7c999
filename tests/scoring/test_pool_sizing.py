"""The default --workers: one process unless the input is worth workers and a core is idle (scoring.pool.sizing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefix_exec.cli import main
from prefix_exec.scoring.pool import sizing
from prefix_exec.scoring.pool.sizing import WORTH_BYTES, default_workers, input_bytes, inputs_in

BIG = WORTH_BYTES["transcripts"]


@pytest.mark.parametrize(
    ("size", "cores", "load", "expected"),
    [
        (BIG - 1, 2, 0.0, 1),  # small input: no worker, however idle the machine
        (BIG, 2, 0.0, 2),
        (BIG, 2, 1.5, 2),  # half a core idle: worth one worker
        (BIG, 2, 1.6, 1),
        (BIG, 2, 6.5, 1),  # this machine while six agents shared it: a worker made 2,000 rollouts slower
        (BIG, 64, 60.0, 5),  # four idle cores: this process and four workers
        (BIG, 64, 0.0, 64),
        (BIG, 1, 0.0, 1),
        (BIG, 2, -1.0, 2),  # a nonsense load bounds nothing beyond the cores
    ],
)
def test_default_workers(size: int, cores: int, load: float, expected: int) -> None:
    assert default_workers("transcripts", size, cores, load) == expected


def test_each_subcommand_has_its_own_size() -> None:
    one_mib = 1 << 20
    assert default_workers("bfcl", one_mib, 2, 0.0) == 2
    assert default_workers("transcripts", one_mib, 2, 0.0) == 1
    assert default_workers("not-a-subcommand", BIG, 2, 0.0) == 2  # the transcripts size


def test_input_bytes_walks_folders_and_ignores_missing(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.json").write_bytes(b"x" * 10)
    (tmp_path / "a" / "y.json").write_bytes(b"y" * 5)
    (tmp_path / "z.jsonl").write_bytes(b"z" * 7)
    assert input_bytes([tmp_path / "a", tmp_path / "z.jsonl", tmp_path / "missing"]) == 22
    assert input_bytes([tmp_path], most_files=1) in (5, 7, 10)  # stops counting after one file


def test_inputs_in_skips_options_and_outputs(tmp_path: Path) -> None:
    data, out = tmp_path / "data.json", tmp_path / "out.jsonl"
    data.write_text("[]")
    out.write_text("")
    argv = [str(data), "--out", str(out), "--model", "m", "--tools", str(data), "--consistency=x"]
    assert inputs_in(argv) == [str(data), str(data)]


@pytest.mark.parametrize(("worth", "expected"), [(None, []), (1, [2])])
def test_the_command_scores_in_one_process_on_a_small_input(
    worth: int | None,
    expected: list[int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without --workers, tau-bench's 200 conversations (3.6 MB) are scored with no pool (the --workers 1
    path: no pool is asked for); the same file under a size of one byte gets this process and a worker on an idle
    2-core machine."""
    from prefix_exec.scoring.pool import dispatch, spawn

    chosen: list[int] = []
    monkeypatch.setattr(sizing, "load_now", lambda cores=None: 0.0)
    monkeypatch.setattr(spawn, "usable_cores", lambda: 2)
    if worth is not None:
        monkeypatch.setitem(WORTH_BYTES, "transcripts", worth)
    real = dispatch.pool_for  # asked for only beyond one worker: one process never imports the pool
    monkeypatch.setattr(dispatch, "pool_for", lambda workers, launcher="local": chosen.append(workers) or real(1))
    tau_bench = Path(__file__).parents[1] / "data" / "tau-bench"
    argv = ["score", "transcripts", str(tau_bench / "gpt-4o-airline.json"), "--tools"]
    argv += [str(tau_bench / "airline-tools.json"), "--model", "gpt-4o", "--out", str(tmp_path / "out.jsonl")]
    assert main(argv) == 0, capsys.readouterr().err
    assert chosen == expected


@pytest.mark.parametrize(
    ("average", "loadavg", "expected"),
    [
        (2.2, "2.20 3.55 5.97 1/143 22295", 0.0),  # only this process runs: the average is its own past runs
        (2.2, "2.20 3.55 5.97 6/143 22295", 2.2),  # five others runnable now: the average stands
        (6.5, "6.50 6.0 6.0 3/143 1", 2.0),
        (1.0, "garbage", 1.0),
    ],
)
def test_other_load(average: float, loadavg: str, expected: float) -> None:
    assert sizing.other_load(average, loadavg) == expected
    assert sizing.load_now() >= 0.0


#: Two /proc/stat texts 0.1 s apart on 2 cores (20 ticks): user, nice, system, idle, iowait, irq, softirq, steal.
STAT_BEFORE = "cpu  2344360 2745359 657070 871422 14698 0 8894 2744 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"


def stat_after(busy: int, idle: int, iowait: int = 0) -> str:
    return f"cpu  {2344360 + busy} 2745359 657070 {871422 + idle} {14698 + iowait} 0 8894 2744 0 0\n"


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        (stat_after(busy=19, idle=1), 1.9),  # a sweep running: 1.9 of 2 cores busy
        (stat_after(busy=4, idle=14, iowait=2), 0.4),  # waiting on the disk is idle
        (stat_after(busy=0, idle=20), 0.0),
        (STAT_BEFORE, None),  # no tick passed
        ("cpu 1 2 3", None),
        ("intr 1 2 3 4 5 6 7 8 9", None),
        ("cpu  1 2 3 -4 5 6 7 8 0 0", None),
        (stat_after(busy=-30, idle=20), None),  # a counter going back
    ],
)
def test_busy_cores(after: str, expected: float | None) -> None:
    found = sizing.busy_cores(STAT_BEFORE, after, 2)
    assert found == expected if expected is None else found == pytest.approx(expected)


def per_cpu(cpu0: tuple[int, int], cpu1: tuple[int, int]) -> str:
    """A /proc/stat text with the machine's line and one per CPU, each CPU's (busy, idle) ticks added to a base."""
    lines = [f"cpu  {100 + cpu0[0] + cpu1[0]} 0 0 {100 + cpu0[1] + cpu1[1]} 0 0 0 0 0 0"]
    lines += [f"cpu{n} {50 + busy} 0 0 {50 + idle} 0 0 0 0 0 0" for n, (busy, idle) in enumerate((cpu0, cpu1))]
    return "\n".join([*lines, "intr 1 2 3"]) + "\n"


def test_busy_cores_counts_the_cpus_this_process_may_run_on() -> None:
    """A host whose CPU 0 is busy and CPU 1 idle: on CPU 1 alone no core is busy, though the machine is half
    busy; a CPU with no line falls back to the machine's share."""
    before, after = per_cpu((0, 0), (0, 0)), per_cpu((10, 0), (0, 10))
    assert sizing.busy_cores(before, after, 1, [1]) == 0.0
    assert sizing.busy_cores(before, after, 1, [0]) == 1.0
    assert sizing.busy_cores(before, after, 2, [0, 1]) == 1.0
    assert sizing.busy_cores(before, after, 2) == 1.0  # the machine's line: half of 2 cores
    assert sizing.busy_cores(before, after, 1, [7]) == 0.5  # no cpu7 line: half of the machine, of 1 core


@pytest.mark.parametrize(
    ("average", "running", "sampled", "expected_load", "samples"),
    [
        (0.3, "1/140", 1.9, 0.0, 0),  # quiet by both readings: no sample is taken
        (2.2, "1/140", 0.1, 0.1, 1),  # the average is this user's past runs: the sample finds the cores idle
        (2.2, "1/140", 1.8, 1.8, 1),  # a program running in bursts, not runnable at this instant
        (2.2, "4/140", 0.1, 2.2, 0),  # busy by both readings: no sample
        (2.2, "1/140", None, 0.0, 1),  # no /proc/stat: the instant stands
    ],
)
def test_load_now_samples_when_the_average_and_the_instant_disagree(
    average: float,
    running: str,
    sampled: float | None,
    expected_load: float,
    samples: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken: list[int] = []
    monkeypatch.setattr(sizing.os, "getloadavg", lambda: (average, average, average))
    monkeypatch.setattr(sizing.Path, "read_text", lambda self, *a, **k: f"{average} 1 1 {running} 9")
    monkeypatch.setattr(sizing, "sample_busy", lambda cores: taken.append(cores) or sampled)
    assert sizing.load_now(2) == pytest.approx(expected_load)
    assert len(taken) == samples
    assert sizing.load_now() == pytest.approx(min(average, int(running.split("/")[0]) - 1))  # no cores: no sample
    assert len(taken) == samples


def test_a_small_input_reads_no_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below the size, one process whatever the load: the load is not read, so no sample is paid for."""
    small = tmp_path / "small.jsonl"
    small.write_text("{}\n", encoding="utf-8")
    monkeypatch.setattr(sizing, "load_now", lambda cores=None: pytest.fail("the load was read"))
    assert sizing.default_for(["score", "transcripts", str(small)], 2) == 1


def test_the_default_is_decided_once_per_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry point decides before its imports and again after parsing: the second reading would count the
    worker started early (busy importing) as load, so it gets the first's answer; another command line reads anew."""
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * BIG)
    loads = iter([0.0, 2.0, 2.0])
    monkeypatch.setattr(sizing, "load_now", lambda cores=None: next(loads))
    argv = ["score", "transcripts", str(big)]
    assert sizing.default_for(argv, 2) == 2
    assert sizing.default_for(list(argv), 2) == 2  # decided: the load is not read again
    assert sizing.default_for([*argv, "--resume"], 2) == 1
    assert sizing.default_now(argv, 2) == 1  # what the benchmark asks: the load now


def test_sample_busy_reads_this_machine() -> None:
    found = sizing.sample_busy(2, 0.02)
    assert found is None or 0.0 <= found <= 2.0


def test_a_word_no_path_can_be_is_no_input(tmp_path: Path) -> None:
    # a --trial-field of 5,000 characters, a NUL byte: Path.exists raises for these (ENAMETOOLONG, ValueError)
    (tmp_path / "in.jsonl").write_text("{}\n")
    words = ["--trial-field", "messages." + "9" * 5000, "a\x00b", str(tmp_path / "in.jsonl")]
    assert inputs_in(words) == [str(tmp_path / "in.jsonl")]
