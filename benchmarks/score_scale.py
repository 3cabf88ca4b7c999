"""Rollouts per second of ``prefix-exec score`` at 1, 2 and N workers (``--workers``) on the real corpus.

The corpus is every real run the project holds (read in place, never copied):

- bfcl: the 1,600 BFCL multi-turn results of the shared data (two models x 4 categories x 200 tasks),
  ``score bfcl``;
- tau: the 521 simulations of the 19 tau2 results files of the shared data (gpt-4.1 and the leaderboard
  runs), ``score tau``;
- transcripts: tau-bench's 200 published gpt-4o airline conversations (tests/data/tau-bench) on its tools list,
  ``score transcripts``;
- transcripts-<size>, a multiple of 200 (transcripts-2200, say): those 200 conversations size / 200 times
  (written into the run's temporary folder, a file per copy, copy k with trial + 4k, so no identity repeats;
  issue 28 asks for 2,000+ transcripts, and no public file holds 2,000+ real ones; about 18 KB of disk per
  conversation, once for the corpus and once per worker count above 1 for its slices), ``score transcripts``.
  Not in the default set. The larger the size, the less the command's fixed start weighs on the ratio (a
  Python start, the imports, reading the tools: about 0.3 s, paid by the reading process at every worker count;
  a worker's own start overlaps it): a user's corpus of a million sessions is all replay.

Each worker count runs every chosen command as a user would (a fresh ``prefix-exec`` process, ``--keep-going``,
so the records of files replay refuses are listed, not fatal), ``--repeats`` times, the worker counts in turn
within each repeat; a repeat's time is the sum over the commands. Prints, per worker count, the median time,
the rollouts scored per second and the ratio to ``--workers 1`` measured in the same run, then checks that
every worker count wrote byte-identical records (the benchmark is void otherwise). The load average is printed
first and last: on a busy machine the ratio says little.

Two baselines, measured in the same repeats:

- the machine's ceiling: N independent Python processes each spinning a fixed loop (:data:`SPIN`, no I/O,
  nothing shared), started together, against one alone: ``N * t(1) / t(N)``, the most N processes of pure
  Python gain here and now. On a virtual machine whose cores are shared with other tenants it is well under N
  (two processes each run slower when they run together);
- with transcripts-<size>, at each worker count N above 1, sharding by hand: its conversations cut into N
  equal slices (each in files of at most 200 conversations, as the corpus is), one ``score --workers 1`` per
  slice, started together (until the last ends): what a user splitting the corpus gets, each process paying
  its own start, with no coordination and no record order across slices. The pool's overhead is what it falls
  short of this. The default worker counts are 1, 2 and the usable cores (``os.sched_getaffinity``). Run:
``.venv/bin/python benchmarks/score_scale.py [--repeats 3] [--corpus bfcl,tau,transcripts,transcripts-6600]
[--workers 1,2,4]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from prefix_exec.scoring.pool.spawn import usable_cores
from shared_folder import REPO, shared_data

DATA = shared_data()
TAU_BENCH = REPO / "tests" / "data" / "tau-bench"
#: Each corpus: the ``score`` arguments (before --out), as a user types them.
CORPORA: dict[str, list[str]] = {
    "bfcl": ["bfcl", str(DATA / "bfcl" / "glyphh-ada-1.1"), str(DATA / "bfcl" / "airev-agent-0.8b")],
    "tau": [
        "tau",
        *sorted(str(p) for p in (DATA / "tau").glob("*.json")),
        *sorted(str(p) for p in (DATA / "tau" / "leaderboard").glob("*.json")),
    ],
    "transcripts": [
        "transcripts",
        str(TAU_BENCH / "gpt-4o-airline.json"),
        "--tools",
        str(TAU_BENCH / "airline-tools.json"),
        "--model",
        "gpt-4o",
    ],
}
#: A transcripts-<size> corpus's arguments but its folder: tau-bench's tools list and model.
COPIES_OPTIONS = ["--tools", str(TAU_BENCH / "airline-tools.json"), "--model", "gpt-4o"]
#: tau-bench's conversations, the unit of a transcripts-<size> corpus.
PER_COPY = 200
#: The command as a user runs it: the installed ``prefix-exec`` script beside this Python (a spawned worker runs
#: its imports again: a cost users pay), else ``python -m prefix_exec.cli``.
SCRIPT = Path(sys.executable).parent / "prefix-exec"
COMMAND = [str(SCRIPT)] if SCRIPT.is_file() else [sys.executable, "-m", "prefix_exec.cli"]
#: The ceiling's work for one process: a loop of pure Python (about 0.6 s on this project's 2-core machines).
SPIN = "total = 0\nfor i in range(8_000_000):\n    total += i * i\n"


def copies_in(corpus: str) -> int | None:
    """How many copies of tau-bench's file the corpus ``transcripts-<size>`` holds (size / 200); ``None`` for
    another name; :class:`SystemExit` for a size that is not a positive multiple of 200 in ASCII digits."""
    prefix, _, size = corpus.partition("-")
    if prefix != "transcripts" or not size:
        return None
    if not (size.isascii() and size.isdigit()) or int(size) <= 0 or int(size) % PER_COPY:
        raise SystemExit(f"corpus {corpus}: the size in transcripts-<size> must be a positive multiple of {PER_COPY}")
    return int(size) // PER_COPY


def canonical(corpus: str) -> str:
    """``corpus`` as the run names it: transcripts-<size> without leading zeros (transcripts-0200 is
    transcripts-200, run once)."""
    copies = copies_in(corpus)
    return corpus if copies is None else f"transcripts-{copies * PER_COPY}"


def write_files(folder: Path, rows: list[Any], stem: str) -> None:
    """``rows`` in ``folder`` (made if need be) as JSON files of at most :data:`PER_COPY` conversations each, in
    input order, named ``<stem><number>.json`` so that they sort in that order (as the command reads them). A
    corpus's slice in one file would pass the reader's bound on a JSON file (64 Mi characters) at 3,740
    conversations."""
    folder.mkdir(parents=True, exist_ok=True)
    starts = range(0, len(rows), PER_COPY)
    width = len(str(max(len(starts) - 1, 0)))
    for number, start in enumerate(starts):
        chunk = json.dumps(rows[start : start + PER_COPY])
        (folder / f"{stem}{number:0{width}d}.json").write_text(chunk, encoding="utf-8")


def write_copies(folder: Path, copies: int) -> list[Any]:
    """A transcripts-<size> corpus in ``folder``: tau-bench's 200 conversations ``copies`` times, copy k with
    trial + 4k, a file each (:func:`write_files`); its conversations in input order."""
    rows = json.loads((TAU_BENCH / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    if len(rows) != PER_COPY:
        raise SystemExit(f"{TAU_BENCH / 'gpt-4o-airline.json'}: {len(rows)} conversations, not {PER_COPY}")
    corpus = [dict(row, trial=row["trial"] + 4 * k) for k in range(copies) for row in rows]
    write_files(folder, corpus, "copy")
    return corpus


def write_shards(folder: Path, rows: list[Any], count: int) -> list[Path]:
    """A transcripts-<size> corpus's conversations ``rows`` cut into ``count`` slices of equal size in input
    order, a folder each in ``folder``, each slice in files as the corpus is (:func:`write_files`)."""
    shards = []
    for index in range(count):
        shard = folder / f"shards-{count}" / f"slice{index}"
        write_files(shard, rows[index * len(rows) // count : (index + 1) * len(rows) // count], "part")
        shards.append(shard)
    return shards


def by_hand(shards: list[Path], expected: int, env: dict[str, str]) -> float:
    """The wall time of one ``score --workers 1`` per shard of a transcripts-<size> corpus, started together,
    until the last ends; each writes ``records-<shard>.jsonl`` beside its shard's folder (not in it: it would be
    read as input), ``expected`` records in all."""
    options = [*COPIES_OPTIONS, "--overwrite", "--keep-going", "--workers", "1"]
    command = [*COMMAND, "score", "transcripts"]
    outs = [shard.parent / f"records-{shard.name}.jsonl" for shard in shards]
    for out in outs:
        out.unlink(missing_ok=True)
    logs = [out.with_suffix(".log").open("w", encoding="utf-8") for out in outs]
    started = time.perf_counter()
    running = [
        subprocess.Popen(
            [*command, str(shard), *options, "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=log,  # a file: a pipe that filled would stall a run while another is waited for
            env=env,
        )
        for shard, out, log in zip(shards, outs, logs, strict=True)
    ]
    for process in running:
        process.wait()
    seconds = time.perf_counter() - started
    for log in logs:
        log.close()
    written = sum(out.read_bytes().count(b"\n") for out in outs if out.is_file())
    if any(process.returncode not in (0, 2) for process in running) or written != expected:
        codes = [process.returncode for process in running]
        failed = next((out for out, code in zip(outs, codes, strict=True) if code not in (0, 2)), outs[0])
        error = failed.with_suffix(".log").read_text(errors="replace")[-2000:]
        raise SystemExit(f"the shards' runs failed (exit codes {codes}, {written} of {expected} records):\n{error}")
    return seconds


def installed_environment(folder: Path) -> dict[str, str]:
    """The environment of the timed commands: bytecode cached (in ``folder``, not the tree) as an installed
    package has it, even where PYTHONDONTWRITEBYTECODE is set; every worker would compile the package otherwise.
    The package is compiled into it before any run is timed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    import prefix_exec

    package = Path(prefix_exec.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=env, check=True)
    return env


def score(corpus: str, workers: int, out: Path, env: dict[str, str]) -> float:
    """Run one corpus's ``score`` command at ``workers`` into ``out``; its wall time in seconds."""
    command = [*COMMAND, "score", *CORPORA[corpus]]
    command += ["--out", str(out), "--overwrite", "--keep-going", "--workers", str(workers)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 2) or not out.is_file():
        raise SystemExit(f"{corpus} at --workers {workers} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def spin(processes: int) -> float:
    """The wall time of ``processes`` Python processes running :data:`SPIN`, started together, in seconds."""
    started = time.perf_counter()
    running = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(processes)]
    for process in running:
        if process.wait() != 0:
            raise SystemExit(f"the ceiling's loop failed ({process.returncode})")
    return time.perf_counter() - started


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {usable_cores()} usable cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--corpus",
        default="bfcl,tau,transcripts",
        help="comma-separated: " + ", ".join(CORPORA) + ", transcripts-<size> (a multiple of 200)",
    )
    parser.add_argument("--workers", help="comma-separated worker counts (default: 1, 2 and the usable cores)")
    args = parser.parse_args()
    corpora = list(dict.fromkeys(canonical(c) for c in args.corpus.split(",") if c))
    unknown = [c for c in corpora if c not in CORPORA and copies_in(c) is None]
    if unknown:
        raise SystemExit(f"unknown corpus {unknown}: choose from {', '.join(CORPORA)}, transcripts-<size>")
    counts = sorted({int(w) for w in args.workers.split(",")} if args.workers else {1, 2, usable_cores()})
    if counts[0] != 1:
        counts.insert(0, 1)  # the ratio is against one worker, measured in this run
    print(f"start: {load()}")
    with tempfile.TemporaryDirectory() as folder:
        env = installed_environment(Path(folder))
        shards: dict[tuple[str, int], list[Path]] = {}  # (transcripts-<size>, workers) -> its slices
        conversations: dict[str, int] = {}
        for corpus in corpora:
            copies = copies_in(corpus)
            if copies is not None:
                rows = write_copies(Path(folder) / corpus, copies)
                CORPORA[corpus] = ["transcripts", str(Path(folder) / corpus), *COPIES_OPTIONS]
                for workers in counts[1:]:
                    shards[(corpus, workers)] = write_shards(Path(folder) / f"{corpus}-by-hand", rows, workers)
                conversations[corpus] = len(rows)
        for corpus in corpora:  # untimed: third-party modules compile into the cache, the files into memory
            score(corpus, 1, Path(folder) / "warm-up.jsonl", env)
        each: dict[tuple[str, int], list[float]] = {}  # (corpus, workers) -> its times
        times: dict[int, list[float]] = {workers: [] for workers in counts}
        spins: dict[int, list[float]] = {workers: [] for workers in counts}  # the baselines', same repeats
        hand: dict[tuple[str, int], list[float]] = {key: [] for key in shards}
        # Every worker count in each repeat, one after the other: a load that comes and goes (another user of
        # the machine) then weighs on all counts alike, not on the ones measured while it lasted.
        for _ in range(max(1, args.repeats)):
            for workers in counts:
                runs = {c: score(c, workers, Path(folder) / f"{c}-{workers}.jsonl", env) for c in corpora}
                for corpus, seconds in runs.items():
                    each.setdefault((corpus, workers), []).append(seconds)
                times[workers].append(sum(runs.values()))
                spins[workers].append(spin(workers))
                for (corpus, count), slices in shards.items():
                    if count == workers:
                        hand[(corpus, count)].append(by_hand(slices, conversations[corpus], env))
        medians = {workers: statistics.median(times[workers]) for workers in counts}
        ceilings = {w: w * statistics.median(spins[1]) / statistics.median(spins[w]) for w in counts}
        rows = {c: (Path(folder) / f"{c}-1.jsonl").read_bytes() for c in corpora}
        differ = [
            f"{c} at --workers {w}"
            for w in counts
            for c in corpora
            if (Path(folder) / f"{c}-{w}.jsonl").read_bytes() != rows[c]
        ]
    rollouts = sum(text.count(b"\n") for text in rows.values())
    print(f"corpus: {', '.join(corpora)}: {rollouts} rollouts scored (records written) per run, {args.repeats} repeats")
    for workers in counts:
        rate = rollouts / medians[workers]
        ratio = medians[1] / medians[workers]
        ceiling = (
            f" (ceiling {ceilings[workers]:.2f}x: {workers} independent processes of pure Python here now; "
            f"{ratio / ceilings[workers]:.0%} of it)"
            if workers > 1
            else ""
        )
        print(
            f"--workers {workers}: median {medians[workers]:.2f} s, {rate:.0f} rollouts/s, "
            f"{ratio:.2f}x --workers 1{ceiling}"
        )
    for corpus in corpora:  # where the time goes: each command's median, and its ratio to one worker
        count = rows[corpus].count(b"\n")
        one = statistics.median(each[(corpus, 1)])
        cells = [f"--workers {w} {statistics.median(each[(corpus, w)]):.2f} s" for w in counts]
        ratios = [f"{one / statistics.median(each[(corpus, w)]):.2f}x" for w in counts[1:]]
        print(f"  {corpus} ({count} rollouts): {', '.join(cells)} ({', '.join(ratios)} --workers 1)")
        for (sharded, workers), times_by_hand in hand.items():
            if sharded != corpus:
                continue
            seconds = statistics.median(times_by_hand)
            pool = statistics.median(each[(corpus, workers)])
            print(
                f"    sharded by hand, {workers} independent --workers 1 runs on {workers} slices: {seconds:.2f} s "
                f"({one / seconds:.2f}x --workers 1); the pool at --workers {workers} reaches {seconds / pool:.0%} "
                "of its speed"
            )
    print(f"end: {load()}")
    if differ:
        raise SystemExit(f"records differ from --workers 1: {', '.join(differ)}: the benchmark is void")
    print("identical records at every worker count: yes")


if __name__ == "__main__":
    main()
