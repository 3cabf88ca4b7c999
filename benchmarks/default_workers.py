"""``prefix-exec score`` without ``--workers`` (the default: what the pool's sizing picks) against ``--workers 1``, in
the same run, on small and large real inputs: the default's promise is never to be slower than one worker (issue 46).

The inputs (read in place, or written into the run's temporary folder, never into the tree):

- transcripts-10, transcripts-80 and transcripts-200: the first 10 and 80, and all 200, of tau-bench's published
  gpt-4o airline conversations (tests/data/tau-bench) on its tools list, ``score transcripts``;
- transcripts-2000: those 200 conversations 10 times (copy k with trial + 4k, a file per copy, as
  ``benchmarks/score_scale.py`` writes them), ``score transcripts``;
- bfcl-10 and bfcl-200: the first 10 and all 200 entries of one BFCL results file (glyphh-ada-1.1, base), ``score
  bfcl``;
- bfcl-1600: every BFCL results file of the shared data (2 models x 4 categories x 200: the most BFCL rollouts
  there are), ``score bfcl``;
- bfcl-2000: those 1,600 and, copied under another model's folder name (``glyphh-ada-1.1-copy``: the folder names
  the model), glyphh-ada-1.1's base and long_context files, ``score bfcl``. The copies' tasks are tasks of the
  1,600, as any BFCL run's are (BFCL has 800 multi-turn tasks): every rollout past the 800th is one of a task
  replayed before.

Each input runs as a user runs it (a fresh ``prefix-exec`` process, ``--keep-going``), both ways in turn within each
repeat (``--repeats``, default 5; the default first in even repeats, ``--workers 1`` first in odd ones), under
``nice`` when the benchmark is; before each default run the benchmark asks
the sizing what it picks now (``scoring.pool.sizing.default_now``: what the command decides, on the load of
that moment) and counts the answers. Prints per input the median of each, the ratio ``--workers 1`` / default
(above 1: the default is faster), the slowest repeat's ratio, and what the default picked; then checks that both
wrote byte-identical records. The load average is printed first and last: on a busy machine the ratios say little.
Each repeat also measures the machine's ceiling, as ``benchmarks/score_scale.py`` does: two Python processes
spinning a fixed loop, started together, against one (``2 * t(1) / t(2)``: what two processes of pure Python gain
here and now, under 2 on a virtual machine whose cores other tenants share); its median is printed last.
Run: ``nice -n 10 .venv/bin/python benchmarks/default_workers.py [--repeats 5] [--inputs transcripts-200,bfcl-200]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from score_scale import COMMAND, COPIES_OPTIONS, DATA, TAU_BENCH, installed_environment, load, spin, write_copies

from prefix_exec.scoring.pool.sizing import default_now
from prefix_exec.scoring.pool.spawn import usable_cores

BFCL_BASE = DATA / "bfcl" / "glyphh-ada-1.1" / "BFCL_v4_multi_turn_base_result.json"
BFCL_MODELS = (DATA / "bfcl" / "glyphh-ada-1.1", DATA / "bfcl" / "airev-agent-0.8b")
#: The files of the first model that bfcl-2000 copies under another model's folder name.
BFCL_COPIED = ("BFCL_v4_multi_turn_base_result.json", "BFCL_v4_multi_turn_long_context_result.json")
INPUTS = (
    "transcripts-10",
    "transcripts-80",
    "transcripts-200",
    "transcripts-2000",
    "bfcl-10",
    "bfcl-200",
    "bfcl-1600",
    "bfcl-2000",
)


def arguments(name: str, folder: Path) -> list[str]:
    """The ``score`` arguments (before ``--out``) of input ``name``, writing its files into ``folder`` first."""
    kind, _, size = name.partition("-")
    count = int(size)
    if kind == "transcripts":
        if count == 2000:
            write_copies(folder / name, 10)
            return ["transcripts", str(folder / name), *COPIES_OPTIONS]
        rows = json.loads((TAU_BENCH / "gpt-4o-airline.json").read_text(encoding="utf-8"))
        path = folder / f"{name}.json"
        path.write_text(json.dumps(rows[:count]), encoding="utf-8")
        return ["transcripts", str(path), *COPIES_OPTIONS]
    if count == 1600:
        return ["bfcl", *(str(path) for path in BFCL_MODELS)]
    if count == 2000:
        copies = folder / name / f"{BFCL_MODELS[0].name}-copy"  # the folder names the model
        copies.mkdir(parents=True)
        for file in BFCL_COPIED:
            (copies / file).write_bytes((BFCL_MODELS[0] / file).read_bytes())
        return ["bfcl", *(str(path) for path in BFCL_MODELS), str(copies)]
    lines = BFCL_BASE.read_text(encoding="utf-8").splitlines(keepends=True)[:count]
    path = folder / name / BFCL_BASE.name  # the folder names the model, as BFCL's result folders do
    path.parent.mkdir(parents=True)
    path.write_text("".join(lines), encoding="utf-8")
    return ["bfcl", str(path)]


def score(args: list[str], workers: int | None, out: Path, env: dict[str, str]) -> float:
    """One ``score`` run (``workers`` ``None``: the default) into ``out``; its wall time in seconds."""
    command = [*COMMAND, "score", *args, "--out", str(out), "--overwrite", "--keep-going"]
    command += [] if workers is None else ["--workers", str(workers)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 2) or not out.is_file():
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--inputs", default=",".join(INPUTS), help="comma-separated: " + ", ".join(INPUTS))
    args = parser.parse_args()
    names = [name for name in args.inputs.split(",") if name]
    unknown = [name for name in names if name not in INPUTS]
    if unknown:
        raise SystemExit(f"unknown input {unknown}: choose from {', '.join(INPUTS)}")
    print(f"start: {load()}", flush=True)
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        env = installed_environment(folder)
        given = {name: arguments(name, folder) for name in names}
        for name in names:  # untimed: modules compile into the cache, files into memory
            score(given[name], 1, folder / "warm-up.jsonl", env)
        times: dict[tuple[str, str], list[float]] = {}
        picked: dict[str, Counter[int]] = {name: Counter() for name in names}
        ceilings: list[float] = []
        for repeat in range(max(1, args.repeats)):
            ceilings.append(2 * spin(1) / spin(2))
            for name in names:  # both ways in turn: a passing load weighs on both alike
                picked[name][default_now(["score", *given[name]], usable_cores())] += 1
                # Which goes first alternates: the one run right after another input (or the ceiling's spin) ran
                # 0.83-0.94x on 80 conversations when the default always did, both in one process.
                for way in ("default", "one") if repeat % 2 == 0 else ("one", "default"):
                    workers, suffix = (None, "d") if way == "default" else (1, "1")
                    times.setdefault((name, way), []).append(
                        score(given[name], workers, folder / f"{name}-{suffix}.jsonl", env)
                    )
        differ = [n for n in names if (folder / f"{n}-d.jsonl").read_bytes() != (folder / f"{n}-1.jsonl").read_bytes()]
        counts = {name: (folder / f"{name}-1.jsonl").read_bytes().count(b"\n") for name in names}
    print(f"{args.repeats} repeats, median wall time per input (a fresh prefix-exec process each):")
    for name in names:
        default, one = (statistics.median(times[(name, way)]) for way in ("default", "one"))
        worst = min(a / b for a, b in zip(times[(name, "one")], times[(name, "default")], strict=True))
        chosen = ", ".join(
            f"{workers} process{'es' if workers > 1 else ''} x{n}" for workers, n in sorted(picked[name].items())
        )
        print(
            f"  {name} ({counts[name]} records): default {default:.2f} s, --workers 1 {one:.2f} s: "
            f"{one / default:.2f}x (the slowest repeat {worst:.2f}x); the default picked {chosen}",
            flush=True,
        )
    ceiling = statistics.median(ceilings)
    print(f"the machine's ceiling (two processes of pure Python against one): median {ceiling:.2f}x")
    print(f"end: {load()}")
    if differ:
        raise SystemExit(f"records differ between the default and --workers 1: {', '.join(differ)}")
    print("identical records both ways: yes")


if __name__ == "__main__":
    main()
