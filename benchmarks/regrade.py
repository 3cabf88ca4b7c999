"""Time the DB regrade (``score tau --regrade``) of the real airline and retail results files against tau2's
own way of hashing a DB.

Each of the files' 60 simulations is regraded by ``prefix_exec.envs.tau.regrade.regrade_db``, which hashes two
DBs (after the predicted calls, and after the task's expected actions); the two sides differ only in the text
a DB's SHA-256 is taken of:

- prefix-exec: ``db_json``, where records the calls did not touch keep the text written once per environment;
- baseline: the text tau2's ``get_dict_hash(db.model_dump())`` hashes, the whole DB serialized every time.

Both must give identical regrades. The domains are loaded, and tau2 imported, before either side is timed;
every timed run starts with no text written (prefix-exec writes the base DBs' texts once per run). Prints the
timings (median of repeats) and, as its last line, the speed-up ratio baseline / prefix-exec.
Run: .venv/bin/python benchmarks/regrade.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# The shared data is found as the tests find it (tests/shared_folder.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from timing import median_run

from prefix_exec.envs.tau import TauEnvironment, load_domain
from prefix_exec.envs.tau import regrade as regrade_module
from prefix_exec.envs.tau.lazy import materialize
from prefix_exec.envs.tau.regrade import Regrade, regrade_db
from prefix_exec.importers.tau import TauResults, read_results
from shared_folder import shared_data

FILES = {domain: shared_data() / "tau" / f"gpt-4.1_{domain}_1trial.json" for domain in ("airline", "retail")}


def regrade_all(files: dict[str, TauResults]) -> list[Regrade]:
    regrade_module._BASE_TEXTS.clear()  # cold: the base DBs' texts are written once per run
    found = []
    for domain, results in files.items():
        env = TauEnvironment(load_domain(domain), results.tasks)
        found += [regrade_db(env, simulation) for simulation in results.sources]
    return found


def whole_dump(db: Any, texts: Any) -> str:
    """The text tau2's ``get_dict_hash`` hashes, written whole: the baseline's stand-in for ``db_json``. The DB
    is materialized first: over a lazy base its tables may hold raw records, which dump without tau2's defaults."""
    return json.dumps(materialize(db).model_dump(), sort_keys=True, default=str)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    files = {domain: read_results(path) for domain, path in FILES.items()}
    for domain in files:
        load_domain(domain)
    ours = regrade_module.db_json
    fast, fast_found = median_run(lambda: regrade_all(files), args.repeats)
    regrade_module.db_json = whole_dump  # db_hash looks it up in its module
    try:
        slow, slow_found = median_run(lambda: regrade_all(files), args.repeats)
    finally:
        regrade_module.db_json = ours
    if fast_found != slow_found:
        raise SystemExit("the two sides regraded differently: the benchmark is void")
    agree = sum(r.agrees for r in fast_found)
    print(f"simulations: {len(fast_found)} (airline and retail), identical regrades: yes ({agree} agree with the file)")
    print(f"prefix-exec (db_json, untouched records written once): {fast:.3f} s")
    print(f"baseline (the whole dump, as tau2's get_dict_hash):    {slow:.3f} s")
    print(f"speed-up: {slow / fast:.1f}x")


if __name__ == "__main__":
    main()
