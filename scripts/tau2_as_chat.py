"""Write tau2 results files' simulations as OpenAI Chat records, and tau2's airline or retail tools as an OpenAI tools
array, so that ``score transcripts --tools ... --hooks ...`` checks them on schemas and a side file alone (the
generic path), as docs/custom.md's "On real files" does with tau2's public airline results.

Each simulation becomes one JSONL record: ``task_id``, ``trial`` (its place in the file, so the records of two
files never collide), ``success`` (its reward is 1 within 1e-9), ``dataset`` (the file's stem) and ``messages``: the
user's and the assistant's messages in order, the assistant's ``tool_calls`` as Chat tool calls and each tool
message as a ``tool`` reply to its call id with tau2's ``error`` flag. A user's own tool calls (telecom) are left
out. Run from the repository root with the tau extra installed (``make setup``)::

    python scripts/tau2_as_chat.py --domain airline --tools tau2-airline-tools.json --out tau2-airline.jsonl \\
        ../shared/data/tau/gpt-4.1_airline_1trial.json ../shared/data/tau/leaderboard/*airline*.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def chat_records(path: Path) -> Iterator[dict[str, Any]]:
    """The simulations of one tau2 results file (an object with ``simulations`` or a bare list) as Chat records."""
    data = json.loads(path.read_text(encoding="utf-8"))
    simulations = data if isinstance(data, list) else data.get("simulations", [])
    for index, simulation in enumerate(simulations):
        reward = (simulation.get("reward_info") or {}).get("reward")
        yield {
            "task_id": str(simulation.get("task_id", f"simulation-{index}")),
            "trial": index,
            "success": int(isinstance(reward, int | float) and abs(reward - 1) < 1e-9),
            "dataset": path.stem,
            "messages": [m for m in map(_message, simulation.get("messages") or []) if m is not None],
        }


def _message(message: dict[str, Any]) -> dict[str, Any] | None:
    role = message.get("role")
    if role == "assistant":
        said: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            said["tool_calls"] = [
                {
                    "id": c.get("id"),
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c.get("arguments")},
                }
                for c in message["tool_calls"]
            ]
        return said
    if role == "tool":
        error = message.get("error")
        reply = {"role": "tool", "tool_call_id": message.get("id"), "content": message.get("content")}
        return {**reply, "error": error} if isinstance(error, bool) else reply
    if role in ("user", "system") and not message.get("tool_calls"):
        return {"role": role, "content": message.get("content")}
    return None


def tools_array(domain: str) -> list[dict[str, Any]]:
    """The domain's tools as tau2 offers them to the agent (``Tool.openai_schema``), from the installed package."""
    from importlib import import_module

    environment = import_module(f"tau2.domains.{domain}.environment").get_environment()
    return [tool.openai_schema for tool in environment.get_tools()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="tau2 results files")
    parser.add_argument("--domain", choices=("airline", "retail"), required=True)
    parser.add_argument("--tools", type=Path, required=True, help="where to write the tools array (JSON)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the Chat records (JSONL)")
    args = parser.parse_args()
    for target in (args.tools, args.out):
        if target.exists():
            parser.error(f"{target} exists; remove it first")
    args.tools.write_text(json.dumps(tools_array(args.domain), indent=1) + "\n", encoding="utf-8")
    count = 0
    with args.out.open("w", encoding="utf-8") as out:
        for path in args.results:
            for record in chat_records(path):
                out.write(json.dumps(record) + "\n")
                count += 1
    print(f"{count} simulations -> {args.out}; {args.domain} tools -> {args.tools}")


if __name__ == "__main__":
    main()
