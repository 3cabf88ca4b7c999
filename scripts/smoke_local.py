"""A real-model smoke test against your own OpenAI-compatible server: 3 BFCL tasks x 2 methods, then a report.

    make smoke-local BASE_URL=http://127.0.0.1:8080/v1 MODEL=qwen2.5-coder [TOOL_MODE=text] [TEXT_FORMAT=json]
    python scripts/smoke_local.py --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder --out runs/smoke

It writes a grid (the BFCL tasks, the methods, your model with ``max_concurrency = 1``) into the output folder,
runs it with the runner's public API (``prefix_exec.runner.run_grid``: the same code as ``prefix-exec run``),
and prints what you need to trust the setup before a long run: the requests sent (per role), the tool calls
read from the model's answers (per format) and the ones that did not parse, the answers that made no call,
tokens, latency per request (median and max), and each rollout's T, FED, Y and failure label with its reason.
A setup that reads no call at all says so, with one of the model's answers quoted: the usual cause is a
server that writes calls as text that the chosen ``tool_mode`` / ``text_format`` does not read.

Every value can come from the environment instead of a flag (``BASE_URL``, ``MODEL``, ``TOOL_MODE``,
``TEXT_FORMAT``, ``API_KEY_ENV``, ``OUT``...), which is how ``make smoke-local`` passes them. Exit status: 0
every rollout written, 1 some units failed (their errors are printed; the run folder's ``failures.jsonl``
has them), 2 bad input or a server that cannot be reached (one line on stderr, no traceback), 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefix_exec.agents.episode import USAGE_READ_AS_0
from prefix_exec.analysis.plan_funnel import funnel_lines, funnel_rows
from prefix_exec.errors import InputError
from prefix_exec.llm.inflight import IN_FLIGHT, describe
from prefix_exec.records.codec import read_records, read_rollouts
from prefix_exec.records.jsonl import iter_json_lines
from prefix_exec.records.redaction import redact_text, redact_url
from prefix_exec.records.values import metadata_count, noting_zeroed, zeroed_lines
from prefix_exec.runner import run_grid
from prefix_exec.trajectory import PrefixRecord, Rollout

#: Three BFCL base tasks on one API class (TradingBot: the smallest tool list, about 15,000 characters of
#: JSON), with two user turns each, so a small local model answers them in minutes, not hours.
TASKS = ("multi_turn_base_100", "multi_turn_base_104", "multi_turn_base_105")
METHODS = ("react", "dual-loop")
#: How long one request may take: a CPU-only server spends tens of seconds on a BFCL prompt's first pass.
TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Profile:
    """The size of the smoke run: its tasks, model calls per user turn, completion token cap, the dual-loop's
    validation budget (``k_val``: verification rounds per planned turn) and the seconds one request may take."""

    tasks: tuple[str, ...]
    max_steps: int
    max_tokens: int
    k_val: int
    timeout: float


#: ``full``: three tasks, as a GPU server answers them in minutes. ``cpu``: for a 0.5B model on 2 CPU cores, one
#: task of one user turn (VehicleControlAPI: unlock the doors, headlights on; two calls in its ground truth), 2
#: steps, 128 tokens and one verification round: at most 8 requests (react: BFCL's max_steps + 1 = 3 executor
#: calls; dual-loop: a plan, a verification and 3 executor calls). Timed against llama-server on 2 shared cores
#: (docs/runner.md, "Getting a local server"): one request with this task's cold 3,388-token prompt and 128
#: tokens took 51-60 s of the server's CPU on one thread, so the worst case is about 8 x 67 s (the prompt grown
#: by the turn's answers) = 9 minutes. The two-turn TradingBot task it replaced (multi_turn_base_100) allows 16
#: such requests: over 15 minutes.
CPU_TASKS = ("multi_turn_base_50",)
PROFILES = {
    "full": Profile(TASKS, max_steps=5, max_tokens=512, k_val=3, timeout=TIMEOUT_S),
    "cpu": Profile(CPU_TASKS, max_steps=2, max_tokens=128, k_val=1, timeout=300.0),
}
NULL_CONTENT = ("keep", "empty")
PROBE_TIMEOUT_S = 10.0
#: The characters of a model answer quoted when no tool call was read.
QUOTE_CHARS = 300


class SmokeError(Exception):
    """A problem the user fixes before anything runs (an unreachable server): one line, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    env = os.environ.get
    parser = argparse.ArgumentParser(
        prog="smoke_local.py",
        description=(
            "Run 3 BFCL tasks x 2 methods against your own OpenAI-compatible server (llama.cpp, Ollama, vLLM, "
            "SGLang ...) and print what the runner read from the model: requests, tool calls per format, parse "
            "failures, tokens, latency and each rollout's FED and label. Every option defaults to the "
            "environment variable named in its help."
        ),
        epilog="exit status: 0 all rollouts written; 1 some units failed; 2 bad input or server unreachable.",
    )
    parser.add_argument(
        "--base-url", default=env("BASE_URL"), help="the API root, e.g. http://127.0.0.1:8080/v1 ($BASE_URL)"
    )
    parser.add_argument("--model", default=env("MODEL"), help="the model id the server serves ($MODEL)")
    parser.add_argument(
        "--tool-mode",
        default=env("TOOL_MODE") or "auto",
        help="native, text or auto ($TOOL_MODE; default auto: native, falling back to text)",
    )
    parser.add_argument(
        "--text-format",
        default=env("TEXT_FORMAT") or None,
        help="the text tool-call format for text mode ($TEXT_FORMAT; default: the grid's default, see docs/runner.md)",
    )
    parser.add_argument(
        "--api-key-env",
        default=env("API_KEY_ENV", ""),
        help="the environment variable holding the server's key ($API_KEY_ENV; default none: local servers)",
    )
    parser.add_argument("--out", default=env("OUT") or None, help="run folder ($OUT; default a new temporary folder)")
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default=env("PROFILE") or "full",
        help="the run's size ($PROFILE; default full: 3 tasks, 5 steps, 512 tokens, k_val 3, 600 s a request; cpu: "
        "multi_turn_base_50 alone (one user turn), 2 steps, 128 tokens, k_val 1, 300 s, for a 0.5B model on 2 CPU "
        "cores: at most 8 requests, under 10 minutes). The options below override it",
    )
    parser.add_argument(
        "--null-content",
        choices=NULL_CONTENT,
        default=env("NULL_CONTENT") or "keep",
        help='empty: send content "" rather than null beside tool calls, which llama-cpp-python\'s server '
        "answers with a 500 ($NULL_CONTENT; default keep)",
    )
    parser.add_argument(
        "--stream",
        action="store_true",
        default=(env("STREAM") or "").lower() in ("1", "true", "yes"),
        help="ask for answers streamed, so the progress line counts each request's tokens as they arrive (the "
        "answers are the same; $STREAM=1)",
    )
    parser.add_argument("--tasks", default=env("TASKS") or None, help="BFCL task ids, comma-separated ($TASKS)")
    parser.add_argument(
        "--methods",
        default=env("METHODS") or ",".join(METHODS),
        help=f"agent variants ($METHODS; default {','.join(METHODS)})",
    )
    _add_size_options(parser)
    parser.add_argument("--resume", action="store_true", help="continue an earlier smoke run in --out")
    return parser


def _add_size_options(parser: argparse.ArgumentParser) -> None:
    """The options that override the profile's sizes, each also read from the environment."""
    env = os.environ.get
    parser.add_argument(
        "--max-steps", type=int, default=_int(env("MAX_STEPS")), help="calls per user turn ($MAX_STEPS)"
    )
    parser.add_argument("--max-tokens", type=int, default=_int(env("MAX_TOKENS")), help="token cap ($MAX_TOKENS)")
    parser.add_argument(
        "--k-val", type=int, default=_int(env("K_VAL")), help="dual-loop's verification rounds ($K_VAL)"
    )
    parser.add_argument("--timeout", type=float, default=_float(env("TIMEOUT")), help="seconds a request ($TIMEOUT)")


def _int(text: str | None) -> int | None:
    return int(text) if text else None


def _float(text: str | None) -> float | None:
    return float(text) if text else None


def sized(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the profile's value for each size option not given (flag or environment)."""
    profile = PROFILES[args.profile]
    given = vars(args)
    return argparse.Namespace(
        **{
            **given,
            "tasks": args.tasks or ",".join(profile.tasks),
            "max_steps": args.max_steps or profile.max_steps,
            "max_tokens": args.max_tokens or profile.max_tokens,
            "k_val": args.k_val or profile.k_val,
            "timeout": args.timeout or profile.timeout,
        }
    )


# ------------------------------------------------------------------------------------------------ the run


def check_reachable(base_url: str, api_key: str | None) -> list[str]:
    """The model ids ``GET base_url/models`` lists (empty when it lists none or is not served).

    Raises :class:`SmokeError` when nothing answers at ``base_url`` (refused, no such host, a timeout) or the
    server rejects the key; any other HTTP answer means a server is there and the run goes on.
    """
    request = urllib.request.Request(base_url.rstrip("/") + "/models")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    where = redact_url(base_url)
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as answer:
            body = json.loads(answer.read(1_000_000) or b"{}")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise SmokeError(f"the server at {where} refused the key ({exc.code}): set --api-key-env") from None
        return []
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise SmokeError(
            f"cannot reach the server at {where}: {reason} (is it running? is --base-url the API root, e.g. http://127.0.0.1:8080/v1?)"
        ) from None
    except ValueError:
        return []
    rows = body.get("data") if isinstance(body, dict) else None
    return [str(row["id"]) for row in rows or [] if isinstance(row, dict) and "id" in row]


def grid_text(args: argparse.Namespace, tasks: Sequence[str], methods: Sequence[str]) -> str:
    """The smoke grid as TOML (values written as JSON, which is TOML for strings, numbers and lists of them)."""
    model: dict[str, Any] = {
        "name": "local",
        "model": args.model,
        "base_url": args.base_url,
        "api_key_env": args.api_key_env,
        "tool_mode": args.tool_mode,
        "temperature": 0.0,
        "max_tokens": args.max_tokens,
        "timeout_s": args.timeout,
        "max_retries": 2,
        "max_concurrency": 1,
        "null_content": args.null_content,
    }
    if args.text_format:
        model["text_format"] = args.text_format
    if args.stream:
        model["stream"] = True
    lines = [
        "seed = 0",
        "trials = 1",
        f"methods = {json.dumps(list(methods))}",
        "[agent]",
        f"max_steps = {args.max_steps}",
        f"k_val = {args.k_val}",
        "[[datasets]]",
        'name = "bfcl"',
        'kind = "bfcl"',
        f"tasks = {json.dumps(list(tasks))}",
        "[[models]]",
        *(f"{key} = {json.dumps(value)}" for key, value in model.items()),
    ]
    return "\n".join(lines) + "\n"


def split_list(text: str, what: str) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise SmokeError(f"--{what} is empty")
    return items


# ------------------------------------------------------------------------------------------------ the report


@dataclass
class Tally:
    """What the runner read from the model, over all rollouts of the run."""

    requests: Counter[str] = field(default_factory=Counter)  # per role
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latencies: list[float] = field(default_factory=list)
    calls: int = 0
    formats: Counter[str] = field(default_factory=Counter)
    parse_failures: int = 0
    answers_without_call: int = 0
    quote: str | None = None
    fallbacks: set[str] = field(default_factory=set)
    usage_read_as_0: int = 0


def call_formats(rollout: Rollout) -> list[str]:
    """The format each of the rollout's calls was read in: the text format the turn loop noted for its step
    (``metadata.text_formats``, ``t<turn>.s<step>`` -> format), else ``native`` (the server's ``tool_calls``)."""
    noted = rollout.metadata.get("text_formats")
    steps = noted if isinstance(noted, Mapping) else {}
    return [str(steps.get((call.call_id or "").rsplit(".", 1)[0], "native")) for call in rollout.actions]


def executor_answers(rollout: Rollout) -> list[str | None]:
    """The executor's answers in the transcript (planner and verifier exchanges are tagged apart), as text."""
    return [
        message.get("content")
        for message in rollout.transcript or ()
        if message.get("role") == "assistant" and message.get("agent_role") in (None, "executor")
    ]


def tally(rollouts: Sequence[Rollout]) -> Tally:
    out = Tally()
    for rollout in rollouts:
        for cost in rollout.cost:
            out.requests[cost.role] += 1
            out.prompt_tokens += cost.prompt_tokens
            out.completion_tokens += cost.completion_tokens
            out.latencies.append(cost.latency_s)
        out.cached += int(rollout.metadata.get("cached_calls") or 0)
        out.usage_read_as_0 += metadata_count(rollout.metadata.get(USAGE_READ_AS_0, 0)) or 0
        out.calls += len(rollout.actions)
        out.formats.update(call_formats(rollout))
        out.parse_failures += sum(1 for call in rollout.actions if call.parse_error)
        stepped = {call.call_id.rsplit(".", 1)[0] for call in rollout.actions if call.call_id}
        answers = executor_answers(rollout)
        out.answers_without_call += max(0, len(answers) - len(stepped))
        if out.quote is None and not rollout.actions:
            out.quote = next((text for text in answers if text), None)
        for key in ("text_fallback", "tools_refused"):  # calls read from the content; the server rejected tools
            fallback = rollout.metadata.get(key)
            if fallback:
                out.fallbacks.add(str(fallback))
    return out


def rollout_rows(records: Sequence[PrefixRecord], rollouts: Mapping[tuple[str, str], Rollout]) -> list[str]:
    columns = ("task", "method", "requests", "calls", "bad", "T", "FED", "Y")
    header = "  {:<22} {:<10} {:>8} {:>5} {:>3} {:>3} {:>3} {:>2}  label: reason".format(*columns)
    lines = [header]
    for record in sorted(records, key=lambda r: (r.task_id, r.method)):
        rollout = rollouts.get((record.task_id, record.method))
        requests = len(rollout.cost) if rollout else 0
        bad = sum(1 for call in record.actions if call.parse_error)
        if record.executable:
            verdict = "executable" if not record.no_tool else "no tool call (the terminal no-tool action)"
        else:
            verdict = f"{record.label.value if record.label else '?'}: {record.reason or ''}"
        lines.append(
            f"  {record.task_id:<22} {record.method:<10} {requests:>8} {len(record.actions):>5} {bad:>3} "
            f"{record.T:>3} {record.fed:>3} {record.success:>2}  {verdict[:110]}"
        )
    return lines


def report(out: Path, args: argparse.Namespace, planned: int) -> tuple[str, int]:
    """The printed report of the run folder ``out``, and how many units failed."""
    with noting_zeroed() as zeroed:  # totals an older version wrote out of range: read as 0, said below
        rollouts = list(read_rollouts(out / "rollouts.jsonl")) if (out / "rollouts.jsonl").exists() else []
        records = list(read_records(out / "records.jsonl")) if (out / "records.jsonl").exists() else []
    failures = [row for _, row in iter_json_lines(out / "failures.jsonl")] if (out / "failures.jsonl").exists() else []
    t = tally(rollouts)
    requests = sum(t.requests.values())
    roles = ", ".join(f"{role} {n}" for role, n in sorted(t.requests.items()))
    formats = ", ".join(f"{name} {n}" for name, n in sorted(t.formats.items())) or "none"
    lines = [
        f"smoke-local: {args.model} at {redact_url(args.base_url)}, tool_mode = {args.tool_mode}"
        + (f", text_format = {args.text_format}" if args.text_format else ""),
        f"run folder: {out}",
        f"rollouts: {len(rollouts)} of {planned} written, {len(failures)} units failed",
        f"requests: {requests} ({roles or 'none'}); {t.cached} answered from the cache",
        f"tool calls read: {t.calls} (per format: {formats}); parse failures: {t.parse_failures}",
        f"executor answers without a tool call (each turn ends with one): {t.answers_without_call}",
        f"tokens: prompt {t.prompt_tokens}, completion {t.completion_tokens}",
    ]
    if t.usage_read_as_0:
        lines.append(
            f"WARNING: {t.usage_read_as_0} answers reported token counts no call can have (negative, past 2^31-1 "
            "or not finite) in their usage; each was read as 0, so the token counts above are short"
        )
    lines += [f"WARNING: {line}" for line in zeroed_lines(zeroed)]
    if t.latencies:
        lines.append(
            f"latency per request: median {statistics.median(t.latencies):.2f} s, max {max(t.latencies):.2f} s"
        )
    for fallback in sorted(t.fallbacks):
        lines.append(f"text fallback (tool_mode auto): {fallback[:200]}")
    if rollouts and t.calls == 0:
        quoted = json.dumps((t.quote or "")[:QUOTE_CHARS], ensure_ascii=False)
        lines.append(
            "WARNING: no tool call was read from any answer. If the model writes its calls as text, pick the "
            f"tool_mode / text_format that reads them (docs/runner.md). One answer: {quoted}"
        )
    lines.append("records (T: action slots, FED: first error depth, T + 1 when all are executable; Y: success):")
    lines.extend(rollout_rows(records, {(r.task_id, r.method): r for r in rollouts}))
    planned = funnel_rows((r.method, r.task_id, r.metadata) for r in rollouts)
    if planned:
        lines.append("plans before the executor (per task):")
        lines.extend(funnel_lines(planned))
    for row in failures:
        lines.append(f"failed unit {row.get('task_id')} / {row.get('method')}: {str(row.get('error'))[:300]}")
    return "\n".join(lines), len(failures)


# ------------------------------------------------------------------------------------------------ main


def smoke(args: argparse.Namespace) -> int:
    args = sized(args)
    if not args.base_url or not args.model:
        raise SmokeError(
            "give --base-url and --model (or BASE_URL and MODEL), e.g. BASE_URL=http://127.0.0.1:8080/v1 MODEL=qwen"
        )
    tasks, methods = split_list(args.tasks, "tasks"), split_list(args.methods, "methods")
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    served = check_reachable(args.base_url, key)
    if served and args.model not in served:
        print(
            f"smoke-local: note: the server lists {served[:5]}, not {args.model!r}; asking for it anyway",
            file=sys.stderr,
        )
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="prefix-exec-smoke-"))
    out.mkdir(parents=True, exist_ok=True)
    grid = out / "smoke-grid.toml"
    if not args.resume or not grid.exists():
        grid.write_text(grid_text(args, tasks, methods), encoding="utf-8")
    try:
        run = run_grid(grid, out / "run", resume=args.resume, max_concurrency=1, log=sys.stderr)
    except KeyboardInterrupt:
        # Returning would wait, at exit, for the unit threads' requests in flight (minutes on a CPU server):
        # close their connections, say how to resume, and end now.
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C ends it at once
        cancelled = describe(IN_FLIGHT.cancel_all())
        print(
            f"smoke-local: interrupted; requests in flight cancelled: {cancelled}; the run folder keeps what "
            f"finished; to finish it, run it again with the same options and --out {out} --resume",
            file=sys.stderr,
            flush=True,
        )
        sys.stdout.flush()
        os._exit(130)
    text, failed = report(out / "run", args, run.planned)
    print(text)
    return 1 if failed or run.aborted else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return smoke(args)
    except (SmokeError, InputError) as exc:
        message = exc.describe() if isinstance(exc, InputError) else str(exc)
        print(f"smoke-local: error: {redact_text(' '.join(message.split()))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("smoke-local: interrupted; the run folder keeps what finished (--resume continues)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
