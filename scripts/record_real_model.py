"""Record the real-model fixture of tests/data/real-model: one small grid against a real local model, kept as
the runner's response cache, so a test replays the whole pipeline on real model text with no model at hand.

    python scripts/record_real_model.py --base-url http://127.0.0.1:PORT/v1 --model qwen2.5-coder-0.5b-instruct

The grid (written to ``OUT/grid.toml``): the first of BFCL's three TradingBot tasks of ``make smoke-local`` and two
tasks of the ticketing example (examples/ticketing), methods react and dual-loop, trial 0, seed 0, temperature 0,
``max_tokens`` 256, ``[agent] max_steps`` 4 and ``k_val`` 2 (a 0.5B model on two CPU cores answers a BFCL request
in tens of seconds), ``tool_mode`` as given (default ``auto``). It runs with one request in flight, so a
``tool_mode = "auto"`` that learns a fallback learns it at the same request when the test replays it.

Written to ``OUT``: ``grid.toml``; ``cache.jsonl``, the run's ``cache.sqlite`` as JSON lines (key, latency,
response: the model's answers, nothing of the requests but their SHA-256); ``records.jsonl`` and
``rollouts.jsonl`` as the run wrote them. The run folder itself is a temporary one (``--work`` keeps it).
Nothing here is a dependency of prefix-exec: see tests/data/real-model/README.md for the model and server.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from smoke_local import TASKS, SmokeError, check_reachable

from prefix_exec.errors import InputError
from prefix_exec.llm.cache import ResponseCache
from prefix_exec.runner import run_grid

REPO = Path(__file__).resolve().parents[1]
#: One BFCL task of make smoke-local's three and two ticketing tasks: on this machine's two shared cores the model
#: answered a BFCL request in 30 s to 4 min, so the grid was cut to what records in about half an hour.
BFCL_TASKS = TASKS[:1]
TICKETING_TASKS = ("close-printer", "new-laptop")
METHODS = ("react", "dual-loop")


def grid_text(base_url: str, model: str, tool_mode: str, text_format: str | None, out: Path) -> str:
    spec = Path(os.path.relpath(REPO / "examples" / "ticketing" / "tools.yaml", out.resolve()))
    extra = f"text_format = {json.dumps(text_format)}\n" if text_format else ""
    return f"""# The real-model fixture's grid, written by scripts/record_real_model.py (README.md: how).
# base_url is where the model was served while recording: the response cache is keyed by it. The test answers
# every request from cache.jsonl and fails on any request the cache does not hold.
seed = 0
trials = 1
methods = {json.dumps(list(METHODS))}

[agent]
max_steps = 4
k_val = 2

[[datasets]]
name = "bfcl"
kind = "bfcl"
tasks = {json.dumps(list(BFCL_TASKS))}

[[datasets]]
name = "ticketing"
kind = "custom"
spec = {json.dumps(spec.as_posix())}
tasks = {json.dumps(list(TICKETING_TASKS))}

[[models]]
name = "qwen2.5-coder-0.5b"
model = {json.dumps(model)}
base_url = {json.dumps(base_url)}
api_key_env = ""
tool_mode = {json.dumps(tool_mode)}
{extra}temperature = 0.0
max_tokens = 256
timeout_s = 900
max_retries = 1
max_concurrency = 1
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--base-url", required=True, help="the local server's API root, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", required=True, help="the model id sent to the server")
    parser.add_argument("--tool-mode", default="auto", help="native, text or auto (default auto)")
    parser.add_argument("--text-format", default=None, help="the text tool-call format (default: the grid's default)")
    parser.add_argument("--out", default=str(REPO / "tests" / "data" / "real-model"), help="the fixture folder")
    parser.add_argument("--work", default=None, help="the run folder (default a temporary one, removed after)")
    parser.add_argument(
        "--reuse-cache",
        default=None,
        help="an earlier recording's cache.sqlite to start from (answers of units both grids hold are kept)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        check_reachable(args.base_url, None)
        grid = out / "grid.toml"
        grid.write_text(grid_text(args.base_url, args.model, args.tool_mode, args.text_format, out), encoding="utf-8")
        work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="real-model-"))
        if args.reuse_cache:  # read through SQLite: the newest rows may still be in the -wal file beside it
            reused = ResponseCache(work / "run" / "cache.sqlite")
            for key, response, latency_s in ResponseCache(args.reuse_cache).entries():
                reused.put_entry(key, response, latency_s)
        report = run_grid(grid, work / "run", max_concurrency=1, log=sys.stderr)
    except (InputError, SmokeError) as exc:
        message = exc.describe() if isinstance(exc, InputError) else str(exc)
        print(f"record_real_model: error: {message}", file=sys.stderr)
        return 2
    print(report.describe(), file=sys.stderr)
    cache = ResponseCache(work / "run" / "cache.sqlite")
    with (out / "cache.jsonl").open("w", encoding="utf-8") as lines:
        for key, response, latency_s in cache.entries():
            row = {"key": key, "latency_s": latency_s, "response": response}
            lines.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    for name in ("records.jsonl", "rollouts.jsonl"):
        shutil.copyfile(work / "run" / name, out / name)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
