"""Time tau replay of a 50-simulation airline results file against naive per-rollout environment construction.

The 50-simulation file is built from the real gpt-4.1 airline file (20 simulations) by cycling its simulations
as trials 0, 1, 2 (written to a temporary file, never into the repository). Both sides run the same checks on
the same toolkit and must produce identical records; they differ only in how each rollout gets its DB:

- prefix-exec: the domain DB is parsed once per process (timed, cold), and each rollout gets a copy-on-access
  view of it (``prefix_exec.envs.tau.state``);
- naive: each rollout builds tau2's environment from disk with ``tau2.domains.airline.environment.get_environment()``
  (reads and validates the 7 MB ``db.json``), as a per-rollout loop over tau2's own API would.

tau2's import time is paid once before either side is timed. Prints the timings (median of repeats; prefix-exec's
side, 30-50 times quicker, is repeated 5 times as often) and, as its last line, the speed-up ratio naive /
prefix-exec. Run: .venv/bin/python benchmarks/tau.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

# The shared data is found as the tests find it (tests/shared_folder.py): beside the repository or its
# worktree folder, or at PREFIX_EXEC_SHARED_DATA.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from timing import median_run

from prefix_exec.envs.tau import TauEnvironment, load_domain
from prefix_exec.envs.tau import domain as tau_domain
from prefix_exec.envs.tau.domain import import_tau2
from prefix_exec.importers.tau import TauResults, read_results
from prefix_exec.records.codec import record_to_json
from prefix_exec.replay import replay
from shared_folder import shared_data

SOURCE = shared_data() / "tau" / "gpt-4.1_airline_1trial.json"
SIMULATIONS = 50
#: How many times as often as the naive side prefix-exec's side is timed (see main).
FAST_SIDE_RUNS = 5


def fifty_simulation_file(folder: Path) -> Path:
    data = json.loads(SOURCE.read_text(encoding="utf-8"))
    real = data["simulations"]
    data["simulations"] = [dict(real[i % len(real)], trial=i // len(real)) for i in range(SIMULATIONS)]
    path = folder / "airline_50.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def ours(results: TauResults) -> list[str]:
    tau_domain._CACHE.clear()  # cold: the one parse per process is part of the cost
    env = TauEnvironment(load_domain("airline"), results.tasks)
    return [json.dumps(record_to_json(replay(r, env.bind(r)))) for r in results.rollouts]


def naive(results: TauResults) -> list[str]:
    domain = load_domain("airline")
    get_environment = import_tau2("tau2.domains.airline.environment").get_environment
    rows = []
    for rollout in results.rollouts:
        fresh = get_environment()  # tau2's environment, built from disk for this rollout
        env = TauEnvironment(dataclasses.replace(domain, base_db=fresh.tools.db), results.tasks)
        rows.append(json.dumps(record_to_json(replay(rollout, env.bind(rollout)))))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import_tau2("tau2.domains.airline.environment")
    with tempfile.TemporaryDirectory() as folder:
        results = read_results(fifty_simulation_file(Path(folder)))
    assert len(results.rollouts) == SIMULATIONS
    # The fast side (a thirtieth to a fiftieth of the slow one's time) runs FAST_SIDE_RUNS times as often: over a
    # fraction of a second, a burst of another tenant's load moves a median of three by a third.
    fast_runs, slow_runs = args.repeats * FAST_SIDE_RUNS, args.repeats
    fast, fast_rows = median_run(lambda: ours(results), fast_runs)
    slow, slow_rows = median_run(lambda: naive(results), slow_runs)
    if fast_rows != slow_rows:
        raise SystemExit("the two sides produced different records: the benchmark is void")
    actions = sum(len(r.actions) for r in results.rollouts)
    print(f"rollouts: {len(results.rollouts)} (airline), actions: {actions}, identical records: yes")
    print(f"prefix-exec (parse once, copy-on-access per rollout): {fast:.3f} s (median of {fast_runs} runs)")
    print(f"naive (tau2 get_environment() per rollout):           {slow:.3f} s (median of {slow_runs} runs)")
    print(f"speed-up: {slow / fast:.1f}x")


if __name__ == "__main__":
    main()
