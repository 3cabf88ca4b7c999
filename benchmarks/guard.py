"""Time ``prefix-exec guard``: the latency it adds per ``tools/call`` and the calls per second through it, against
the same MCP server direct, in one run.

The server is the SDK server of tests/fakes/mcp_notes_server.py over stdio (``--server echo``: the hand-written
server of the hostile tests, whose calls cost next to nothing); the client is the official MCP client
(``ClientSession`` over ``stdio_client``), one call at a time, as an agent makes them. Three connections,
in turns so that load on the machine falls on all of them alike (rounds of ``--batch`` calls each):

- direct: the client starts the server itself;
- guard: the client starts ``prefix-exec guard --hooks SIDE -- SERVER`` (enforce, a side file with a ref and a
  precondition, so every call is checked on a fork of the session and the session stepped after it);
- guard + record: the same with ``--record DIR`` (each call's line appended to the journal before its answer).

Each call alternates ``append_note`` and ``list_notes`` on a note made first (``echo`` and ``huge`` on echo).
Prints per connection the p50 and p99 latency of a call, calls per second, and the latency added (the guard's
percentile minus direct's); then the guard's own time per call as its record says (``guard_ms``: the time a
call's request and answer spent in the pump), and the CPU time per call of the process the client started
(the guard, or the server direct), which split the added latency into the pump, the rest of the guard's CPU
(the SDK's parse and serialization of each message on both of its sides, the pipe writes) and waiting (two
more processes to schedule per call: on a busy machine, the run queue).
With 1,000 calls or more it also prints the added p50 and p99 over the first and the last 500 calls of the same
connections (a record whose cost grows with the connection shows there). ``--server memory`` is npm's
``@modelcontextprotocol/server-memory`` (make setup installs it).
Run: .venv/bin/python benchmarks/guard.py [--calls 1000] [--batch 50] [--server notes|echo|memory]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[1]
#: Where make setup installs npm's MCP servers (PREFIX_EXEC_NPM_SERVERS: another such folder).
NPM = Path(os.environ.get("PREFIX_EXEC_NPM_SERVERS") or Path(sys.prefix) / "mcp-servers" / "node_modules" / ".bin")
SERVERS = {
    "notes": [sys.executable, str(REPO / "tests" / "fakes" / "mcp_notes_server.py")],
    # A real third-party server: npm's @modelcontextprotocol/server-memory (TypeScript SDK), its knowledge graph
    # in a file of its own per run; the calls read it (open_nodes, search_nodes), so its cost does not grow.
    "memory": [str(NPM / "mcp-server-memory")],
    # The hand-written server of the hostile tests: its echo costs next to nothing, so the guard's own cost shows.
    "echo": [sys.executable, str(REPO / "tests" / "fakes" / "mcp_hostile_server.py")],
}
HOOKS = """
def made(state, args):
    state["made"] = True


def has_note(state, args):
    return None if state.get("made") else "create a note first"
"""
SIDES = {
    "notes": "hooks: hooks.py\ntools:\n  create_note: {effect: made}\n  append_note: {precondition: has_note}\n",
    "echo": "hooks: hooks.py\ntools:\n  echo: {effect: made}\n  huge: {precondition: has_note}\n",
    "memory": (
        "tools:\n  create_entities: {produces: {entity: 'entities[*].name'}}\n  open_nodes: {refs: {names: entity}}\n"
    ),
}
#: The calls each connection makes, in turn, per server (a first call is made before the rounds).
CALLS = {
    "notes": (("create_note", {"text": "n"}), [("list_notes", {}), ("append_note", {"note_id": "N-1", "text": "x"})]),
    "echo": (("echo", {"text": "n"}), [("echo", {"text": "x"}), ("huge", {"size": 10})]),
    "memory": (
        ("create_entities", {"entities": [{"name": "Alice", "entityType": "person", "observations": ["tea"]}]}),
        [("open_nodes", {"names": ["Alice"]}), ("search_nodes", {"query": "tea"})],
    ),
}


#: The memory server's file (a temporary folder's, set by main).
MEMORY_FILE = Path(tempfile.gettempdir()) / "prefix-exec-bench-memory.jsonl"


def params(command: list[str]) -> StdioServerParameters:
    memory = MEMORY_FILE.with_name(f"memory-{len(children())}-{time.perf_counter_ns()}.jsonl")  # one per server
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "MEMORY_FILE_PATH": str(memory)}
    return StdioServerParameters(command=command[0], args=command[1:], env=env)


async def open_session(stack: AsyncExitStack, command: list[str], first: tuple[str, Any]) -> ClientSession:
    read, write = await stack.enter_async_context(stdio_client(params(command)))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    await session.list_tools()
    assert not (await session.call_tool(*first)).is_error
    return session


async def timed_calls(session: ClientSession, count: int, into: list[float], calls: list[tuple[str, Any]]) -> None:
    for i in range(count):
        name, args = calls[i % len(calls)]
        start = time.perf_counter()
        result = await session.call_tool(name, args)
        into.append(time.perf_counter() - start)
        assert not result.is_error, result


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


async def run(calls: int, batch: int, folder: Path, server: str) -> dict[str, list[float]]:
    (folder / "hooks.py").write_text(HOOKS)
    (folder / "side.yaml").write_text(SIDES[server])
    SERVER = SERVERS[server]
    first, cycle = CALLS[server]
    guard = [sys.executable, "-m", "prefix_exec", "guard", "--hooks", str(folder / "side.yaml")]
    commands = {
        "direct": SERVER,
        "guard": [*guard, "--", *SERVER],
        "guard + record": [*guard, "--record", str(folder / "record"), "--", *SERVER],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    async with AsyncExitStack() as stack:
        sessions = {}
        for name, command in commands.items():
            before = set(children())
            sessions[name] = await open_session(stack, command, first)
            pids[name] = sorted(set(children()) - before)
        for session in sessions.values():  # warm-up
            await timed_calls(session, 20, [], cycle)
        start = {name: cpu_seconds(found) for name, found in pids.items()}
        for _ in range(max(1, calls // batch)):
            for name, session in sessions.items():
                await timed_calls(session, batch, times[name], cycle)
        for name, found in pids.items():
            cpu[name] = cpu_seconds(found) - start[name]
    return times


#: The processes each connection started (the guard, or the server direct), and their CPU seconds in the rounds.
pids: dict[str, list[int]] = {}
cpu: dict[str, float] = {}


def children() -> list[int]:
    """The processes whose parent is this one (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            found.append(int(stat.parent.name))
    return found


def cpu_seconds(found: list[int]) -> float:
    """User + system CPU seconds of the processes ``found`` so far."""
    total = 0
    for pid in found:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def guard_ms(folder: Path) -> list[float]:
    rows = [json.loads(line) for line in (folder / "record" / "records.jsonl").read_text().splitlines()]
    return [c["guard_ms"] for row in rows for c in row["metadata"]["guard"]["calls"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="timed calls per connection")
    parser.add_argument("--batch", type=int, default=50, help="calls per connection per round")
    parser.add_argument("--server", choices=sorted(SERVERS), default="notes", help="the MCP server (default: notes)")
    args = parser.parse_args()
    global MEMORY_FILE
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        MEMORY_FILE = folder / "memory.jsonl"
        times: dict[str, Any] = anyio.run(run, args.calls, args.batch, folder, args.server)
        own = guard_ms(folder)
    direct = times["direct"]
    print(f"server: {args.server}; calls per connection: {len(direct)} (one at a time), in rounds of {args.batch}")
    print(f"{'connection':16} {'p50 ms':>8} {'p99 ms':>8} {'calls/s':>8} {'added p50':>10} {'added p99':>10}")
    for name, values in times.items():
        added = (pct(values, 0.5) - pct(direct, 0.5), pct(values, 0.99) - pct(direct, 0.99))
        rate = len(values) / sum(values)
        extra = "" if name == "direct" else f" {added[0]:>10.3f} {added[1]:>10.3f}"
        print(f"{name:16} {pct(values, 0.5):>8.3f} {pct(values, 0.99):>8.3f} {rate:>8.0f}{extra}")
    if len(direct) >= 1000:
        print_windows(times)
    print(
        f"the guard's own time per call (record's guard_ms): p50 {statistics.median(own):.3f} ms, "
        f"p99 {pct([x / 1000 for x in own], 0.99):.3f} ms"
    )
    for name, seconds in cpu.items():
        print(f"CPU per call of the process the client started ({name}): {seconds / len(direct) * 1000:.3f} ms")
    print(f"machine load (1-minute average) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def print_windows(times: dict[str, list[float]], size: int = 500) -> None:
    """Added p50 and p99 over the first and the last ``size`` calls of each connection: a record whose cost grows
    with the connection shows here (the same connection, the same run)."""
    print(f"added latency by window ({size} calls each; the same connections):")
    print(f"{'connection':16} {'window':>10} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10} {'added p99':>10}")
    for name, values in times.items():
        for label, window, base in (
            ("first", values[:size], times["direct"][:size]),
            ("last", values[-size:], times["direct"][-size:]),
        ):
            added = (pct(window, 0.5) - pct(base, 0.5), pct(window, 0.99) - pct(base, 0.99))
            extra = "" if name == "direct" else f" {added[0]:>10.3f} {added[1]:>10.3f}"
            print(f"{name:16} {label + ' ' + str(size):>10} {pct(window, 0.5):>8.3f} {pct(window, 0.99):>8.3f}{extra}")


if __name__ == "__main__":
    main()
