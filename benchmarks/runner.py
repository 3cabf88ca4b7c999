"""Runner overhead per step, excluding LLM time: a grid run against the loopback scripted server.

The server (tests/fakes/openai_server.py) answers every chat-completions request after a fixed "LLM time"
(``--latency``, default 20 ms) and counts its own busy time per request. The grid is the ticketing example,
five methods x ``--trials`` trials, run with one unit in flight (``--concurrency 1``) so that wall time
minus server time is exactly what prefix-exec adds: the openai client and HTTP round trip, prompt building,
environment steps, guard forks, replay scoring, the SQLite cache and fsynced JSONL writes (plus the grid's
one-time setup: reading the grid and the tool spec; the ``openai`` import is paid before timing). Prints the totals,
the overhead per step (one step = one LLM request) and, as its last line, the ratio wall time / server time.
Run: .venv/bin/python benchmarks/runner.py [--latency 0.02] [--trials 2] [--concurrency 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fakes import ticketing_agent  # noqa: E402
from fakes.openai_server import ScriptedServer  # noqa: E402
from prefix_exec.runner.run_dir import run_grid  # noqa: E402

GRID = """
seed = 0
trials = {trials}
methods = ["react", "prompt-planning", "plan-conditioned", "dual-loop", "guarded-react"]
[[datasets]]
name = "ticketing"
kind = "custom"
spec = "{spec}"
[[models]]
name = "scripted"
model = "scripted"
base_url = "{base_url}"
api_key_env = ""
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.02, help="server-side LLM time per request (s)")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    import openai  # noqa: F401  (a one-time import of ~0.3 s, paid before timing: this measures per-step cost)

    server = ScriptedServer(ticketing_agent.respond, latency_s=args.latency)
    with tempfile.TemporaryDirectory() as tmp, server:
        grid = Path(tmp) / "grid.toml"
        spec = REPO / "examples" / "ticketing" / "tools.yaml"
        grid.write_text(GRID.format(trials=args.trials, spec=spec, base_url=server.base_url))
        started = time.perf_counter()
        report = run_grid(grid, Path(tmp) / "run", max_concurrency=args.concurrency)
        wall = time.perf_counter() - started
        steps, busy = len(server.requests), server.busy_s
    overhead = wall - busy / args.concurrency
    print(f"units: {report.written} written, {report.failed} failed; LLM requests (steps): {steps}")
    print(f"wall time: {wall:.3f} s; server time: {busy:.3f} s ({args.latency * 1000:.0f} ms LLM time per request)")
    print(f"runner overhead: {overhead:.3f} s total, {overhead / steps * 1000:.2f} ms per step")
    print(f"wall / server time ratio: {wall / (busy / args.concurrency):.3f}")


if __name__ == "__main__":
    main()
