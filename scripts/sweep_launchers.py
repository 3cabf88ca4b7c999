"""The hostile sweep under ``--workers 1``, ``--workers 2`` and ``--launcher ray``, and its outputs compared.

Every ``score`` command must write the same bytes whoever replays its rollouts (docs/testing.md, "The sweep under
every launcher"). This runs ``tests/test_hostile_sweep.py`` once per launcher, one run at a time, each writing the
SHA-256 of every case's output (``HOSTILE_DIGESTS``; ``-`` when the case wrote none), and then compares them case
for case: exit 0 when every case has one digest under all three, else 1 with the cases that differ.

    python scripts/sweep_launchers.py --out /tmp/sweep          # the fixed subset (below), about 400 cases
    python scripts/sweep_launchers.py --out /tmp/sweep --every 1    # every case of those kinds
    python scripts/sweep_launchers.py --compare A.json B.json C.json  # only compare digest files

With ``HOSTILE_WORKERS`` set, each ``score`` command starts its own workers (2 processes, or 2 Ray actors on one
local Ray the sweep starts once), so a case takes seconds instead of milliseconds: the default subset is every case
of the kinds with few cases and every 20th of the five large kinds (``HOSTILE_EVERY``). The kinds without a
``score`` command (``metrics``, ``report``, ``grid``) never reach a worker and are left out.

Run from the repository with the package importable (the venv of make setup, or PYTHONPATH=src).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The kinds of the sweep with a ``score`` command (their rollouts go through the workers).
KINDS = "bounds,bfcl,tau,toolsandbox,inspect,hooks,schemas,evidence,utf8,outputs,custom,openai,spec,transcripts,traces"
#: The kinds thinned to every Nth case (hundreds to 1,500 cases each).
LARGE = "custom,openai,spec,transcripts,traces"
#: ``HOSTILE_WORKERS`` of each run (``1``: ``--workers 1`` given, not the default's choice), by its digest file's name.
LAUNCHERS = {"1": "1", "2": "2", "ray": "ray"}


def differences(digests: dict[str, dict[str, str]]) -> tuple[int, list[str]]:
    """How many cases all the runs in ``digests`` (run name -> case -> SHA-256 or ``-``) have in common, and a line
    per case whose digests differ (``case: run=digest ...``), sorted. Cases only some runs have are not compared."""
    runs = list(digests.values())
    common = set(runs[0]).intersection(*runs[1:]) if runs else set()
    found = []
    for case in sorted(common):
        seen = {name: run[case] for name, run in digests.items()}
        if len(set(seen.values())) > 1:
            found.append(f"{case}: " + " ".join(f"{name}={digest[:12]}" for name, digest in seen.items()))
    return len(common), found


def run(out: Path, launcher: str, kinds: str, every: int) -> Path:
    """One sweep with ``HOSTILE_WORKERS`` set for ``launcher``; its digest file."""
    digests = out / f"digests-{launcher}.json"
    env = {
        **os.environ,
        "HOSTILE_KINDS": kinds,
        "HOSTILE_DIGESTS": str(digests),
        "HOSTILE_WORKERS": LAUNCHERS[launcher],
    }
    if every > 1:
        env["HOSTILE_EVERY"] = f"{every}:{LARGE}"
    test = "tests/test_hostile_sweep.py::test_every_hostile_input_ends_in_bound_with_exit_0_or_2"
    # One base folder for the three runs (one at a time): a text cut to a length that quotes a planted path (a
    # reason) is cut at the same place and holds the same part of it.
    base = out / "tmp"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-n",
        "0",
        "-q",
        "-s",
        test,
        f"--basetemp={base}",
    ]
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=env, check=False)
    print(f"--workers {launcher}: exit {done.returncode} in {time.monotonic() - started:.0f} s", flush=True)
    return digests


def compare(files: list[Path]) -> int:
    digests = {path.stem.removeprefix("digests-"): json.loads(path.read_text(encoding="utf-8")) for path in files}
    count, found = differences(digests)
    print(f"{count} cases compared across {', '.join(digests)}: {len(found)} differ")
    print("\n".join(found))
    return 1 if found or not count else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for the digest files (created)")
    parser.add_argument("--kinds", default=KINDS, help="the sweep's kinds to run (HOSTILE_KINDS)")
    parser.add_argument("--every", type=int, default=20, help=f"run every Nth case of {LARGE} (1: all)")
    parser.add_argument("--compare", type=Path, nargs="+", help="compare these digest files only")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(args.compare)
    if args.out is None:
        parser.error("--out or --compare is required")
    args.out.mkdir(parents=True, exist_ok=True)
    return compare([run(args.out, launcher, args.kinds, args.every) for launcher in LAUNCHERS])


if __name__ == "__main__":
    sys.exit(main())
