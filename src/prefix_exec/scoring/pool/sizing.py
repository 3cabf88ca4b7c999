"""How many processes ``score`` uses when ``--workers`` is not given: never more than pay for themselves.

A worker costs a Python start and this package's imports (about 0.3 s of a core), then the imports of what it
replays on; on a quick input, or on a machine whose cores are all busy, that cost is more than the work it takes
over, and the run is slower than ``--workers 1`` (measured: 200 BFCL entries, 0.65 s alone and 1.04 s with a
worker; 2,000 tau-bench conversations at load 6 on 2 cores, 3.4 s alone and 4.5 s with a worker). So the default
is one process (no worker is started) unless both hold:

- the inputs named on the command line hold at least :data:`WORTH_BYTES` of the subcommand (files summed,
  folders walked; what a file holds per rollout differs by format, hence a size per subcommand), and
- a core is idle: ``cores - load`` (the 1-minute load average, the work of the machine's other programs, but no
  more than the other tasks runnable now: :func:`load_now`) is at least 0.5; then the run takes this process
  and a worker per idle core, rounded, at most the usable cores. When the two disagree (the average says no half
  core is idle, the instant says one is), the machine's CPU time is sampled for :data:`SAMPLE_SECONDS` and the
  busier reading stands: a program that runs in bursts (a test suite, a sweep of short commands) is runnable at
  one instant and not the next: on 2026-12-07 at 22:07 (load 1.6-2.1) the instant alone picked two processes
  in 2 of 3 repeats, and the default's medians ran 0.83x and 0.89x as fast as one process on 2,000 rollouts.

An explicit ``--workers N`` is always obeyed. This module imports nothing heavy: the command's entry point uses it
before its own imports (:func:`prefix_exec.cli.start_workers`).

What the default gains above the sizes is measured by ``benchmarks/default_workers.py`` (the default against
``--workers 1`` in the same run): on 2026-12-07 at 22:33 and 22:42 (medians of 5 under ``nice -n 10``, load 1.2-1.5
on 2 cores; two processes of pure Python ran 1.78x one), 1.58x and 1.30x on 2,000 tau-bench conversations, 1.64x
and 1.63x on the 1,600 BFCL results, 1.59x and 1.51x on 2,000 BFCL results, with identical records; the code of
that morning, measured between them (ceiling 1.94x), gave 1.34x, 1.38x and 1.48x. On 10 to 200 rollouts the
default picked one process, and the ratios (0.85x-1.22x) are the machine's noise. On 2026-12-08, with this
module's sample, 1.31x-1.60x on the 2,000 conversations and 1.29x-1.67x on 2,000 BFCL results over five runs
within 45 minutes (docs/architecture.md, "The default against one worker"): 1.5x in some runs, not in every
one, even at a load under 1. Since the command's start was cut and its early workers are forked (same day),
five runs of 9-11 repeats (ceiling 1.73x-1.92x) gave 1.44x-1.59x on the 2,000 conversations, 1.33x-1.63x on the
1,600 BFCL results and 1.53x-1.65x on 2,000: 13 of the 15 medians at 1.5x or more, the two below where the host
slowed within the run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Final

#: Input bytes from which workers pay for their start, by ``score`` subcommand. transcripts: tau-bench's 200
#: conversations (3.6 MB) ran at 0.92-1.23x with a worker, 2,000 (35 MB) at 1.3-1.6x, 2,200 (40 MB) at 1.6-1.8x;
#: BFCL: 200 entries (0.15-0.4 MB) ran slower with a worker, 1,600 (3.1 MB) at 1.3-1.6x until 2026-12-07 and
#: 1.5-1.65x since a task's rollouts are replayed in one process (2,000, 3.4 MB: 1.5-1.6x); tau: the whole shared
#: data (19 files) at 0.9-1.06x.
WORTH_BYTES: Final[dict[str, int]] = {
    "transcripts": 8 << 20,
    "custom": 8 << 20,
    "bfcl": 1 << 20,
    "toolsandbox": 8 << 20,
    "inspect": 8 << 20,
    "tau": 64 << 20,
}
#: Files walked in a folder at most (a folder of a million sessions is worth workers well before that).
MOST_FILES: Final = 10_000


def default_workers(command: str, input_bytes: int, cores: int, load: float) -> int:
    """The processes ``score COMMAND`` uses without ``--workers`` (this one included, so at least 1): 1 when
    ``input_bytes`` is under the subcommand's :data:`WORTH_BYTES` (an unknown subcommand: that of transcripts) or
    less than half a core is idle at 1-minute ``load``; else this process and a worker per idle core (``cores -
    load``, rounded half up), at most ``cores`` in all: on 2 cores, 2 up to load 1.5 and 1 above."""
    if input_bytes < WORTH_BYTES.get(command, WORTH_BYTES["transcripts"]):
        return 1
    idle = max(cores - max(load, 0.0), 0.0)
    if idle < IDLE_ENOUGH:
        return 1
    return max(1, min(cores, 1 + int(idle + 0.5)))


def input_bytes(paths: Iterable[str | Path], *, most_files: int = MOST_FILES) -> int:
    """The bytes of the files among ``paths`` (a folder: the files under it, at most ``most_files`` in all);
    a path that does not exist or cannot be read counts 0 (the command says what is wrong with it later)."""
    total, seen = 0, 0
    for path in paths:
        for file in _files(Path(path)):
            seen += 1
            if seen > most_files:
                return total
            try:
                total += file.stat().st_size
            except OSError:
                continue
    return total


def _files(path: Path) -> Iterable[Path]:
    try:
        if path.is_file():
            yield path
            return
        if not path.is_dir():
            return
        for root, _dirs, names in os.walk(path):
            for name in names:
                yield Path(root, name)
    except OSError:
        return


def load_now(cores: int | None = None) -> float:
    """The other programs' demand for cores now (:func:`other_load` of this system's figures); 0.0 where the
    system gives none. With ``cores``, when the 1-minute average leaves less than half of them idle but the tasks
    runnable now leave more, the busy cores of a :data:`SAMPLE_SECONDS` sample (:func:`busy_cores`) count too:
    the larger of the two readings is the load."""
    try:
        average = os.getloadavg()[0]
    except (OSError, AttributeError):
        return 0.0
    try:
        instant = other_load(average, Path("/proc/loadavg").read_text())
    except OSError:
        return average
    if cores is None or not cores - average < IDLE_ENOUGH <= cores - instant:
        return instant
    sampled = sample_busy(cores)
    return instant if sampled is None else max(instant, sampled)


#: The idle cores from which a worker pays for its start (see :func:`default_workers`).
IDLE_ENOUGH: Final = 0.5
#: Seconds of CPU time :func:`load_now` samples when the load average and the instant disagree: 20 clock ticks of
#: 2 cores at Linux's 100 a second, a tenth of a core's resolution; paid only by an input worth workers.
SAMPLE_SECONDS: Final = 0.1
_STAT = Path("/proc/stat")


def sample_busy(cores: int, seconds: float = SAMPLE_SECONDS) -> float | None:
    """The cores the machine's programs kept busy over the next ``seconds`` (this process sleeps meanwhile):
    :func:`busy_cores` of two readings of Linux's ``/proc/stat``, on the CPUs this process may run on;
    ``None`` where there is none."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    try:
        before = _STAT.read_text()
        time.sleep(seconds)
        after = _STAT.read_text()
    except OSError:
        return None
    return busy_cores(before, after, cores, allowed)


def busy_cores(before: str, after: str, cores: int, cpus: Collection[int] | None = None) -> float | None:
    """The CPU time kept busy between two ``/proc/stat`` texts, in cores: for each of ``cpus`` (its ``cpuN``
    line), 1 minus its idle and iowait ticks over all its ticks (user, nice, system, idle, iowait, irq, softirq,
    steal), summed; without ``cpus``, or when a line of one is missing, that share of the machine's ``cpu`` line
    times ``cores``. ``None`` when a text does not parse or no tick passed."""
    first, second = _ticks(before), _ticks(after)
    names = [f"cpu{cpu}" for cpu in cpus or ()]
    if names and all(name in first and name in second for name in names):
        shares = [_busy_share(first[name], second[name]) for name in names]
        return None if any(share is None for share in shares) else sum(share or 0.0 for share in shares)
    if "cpu" not in first or "cpu" not in second:
        return None
    share = _busy_share(first["cpu"], second["cpu"])
    return None if share is None else cores * share


def _busy_share(first: list[int], second: list[int]) -> float | None:
    total = sum(second) - sum(first)
    idle = (second[3] + second[4]) - (first[3] + first[4])
    return None if total <= 0 or not 0 <= idle <= total else (total - idle) / total


def _ticks(stat: str) -> dict[str, list[int]]:
    """The first 8 tick counts of each ``cpu`` and ``cpuN`` line of a ``/proc/stat`` text, by the line's name."""
    found: dict[str, list[int]] = {}
    for line in stat.splitlines()[:MOST_STAT_LINES]:
        words = line.split()
        if len(words) >= 9 and words[0].startswith("cpu") and all(w.isascii() and w.isdecimal() for w in words[1:9]):
            found[words[0]] = [int(w) for w in words[1:9]]
    return found


#: Lines of ``/proc/stat`` read at most (a line per CPU comes first: 4,096 CPUs).
MOST_STAT_LINES: Final = 4_100


def other_load(average: float, loadavg: str) -> float:
    """The 1-minute load ``average``, but no more than the tasks runnable at this instant other than this
    process (the 4th field of Linux's ``/proc/loadavg``, ``loadavg``: ``runnable/total``): the average still
    counts, for a minute, the runs of a script that scores file after file. ``average`` when the text does not
    parse."""
    try:
        running = int(loadavg.split()[3].split("/")[0])
    except (ValueError, IndexError):
        return average
    return min(average, float(max(running - 1, 0)))


#: Options whose value names an output, not an input: never counted.
OUTPUT_OPTIONS: Final = frozenset({"--out", "--consistency", "--report", "--summary"})


def inputs_in(argv: Iterable[str]) -> list[str]:
    """The words of ``argv`` (after ``score COMMAND``) that name an existing file or folder, but for the values
    of :data:`OUTPUT_OPTIONS` (an existing ``--out`` is resumed, not read); option names are skipped."""
    words, found, skip = list(argv), [], False
    for word in words:
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in OUTPUT_OPTIONS
            continue
        if _exists(word):
            found.append(word)
    return found


def _exists(word: str) -> bool:
    """Whether ``word`` names an existing path; a word no path can be (too long, a NUL byte) names none."""
    try:
        return Path(word).exists()
    except (OSError, ValueError):
        return False


def default_for(argv: list[str], cores: int) -> int:
    """:func:`default_now` for the command line ``argv``, decided once per process: the command's entry point
    decides before its imports (to start the workers early) and again once it has parsed ``argv``; the second
    gets the first's answer, since a worker started early, busy with its imports, would count as load."""
    key = (tuple(argv), cores)
    if key not in _decided:
        _decided.clear()
        _decided[key] = default_now(argv, cores)
    return _decided[key]


#: The last :func:`default_for` answer of this process, by (argv, cores).
_decided: dict[tuple[tuple[str, ...], int], int] = {}


def default_now(argv: list[str], cores: int) -> int:
    """:func:`default_workers` for the command line ``argv`` (``score COMMAND ...``) on ``cores`` cores, now."""
    command = argv[1] if len(argv) > 1 else ""
    size = input_bytes(inputs_in(argv[2:]))
    if size < WORTH_BYTES.get(command, WORTH_BYTES["transcripts"]):
        return 1  # the load is not read (nor sampled): one process whatever it is
    return default_workers(command, size, cores, load_now(cores))
