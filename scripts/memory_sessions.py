"""Record MCP sessions with npm's ``@modelcontextprotocol/server-memory`` through the guard, for spec inference's
second corpus (docs/custom.md, "Inferring a side file"; tests/data/mcp-memory).

A scripted agent (seeded: ``--seed``) plays ``--sessions`` sessions against the real server, one guard process per
session, all recorded into one ``--record`` folder (``rollouts.jsonl``, ``records.jsonl``, ``tools.json``) and all
on one memory file, so later sessions find what earlier ones stored. Each session starts from a user's request,
given to the guard with ``--given`` (the record's transcript holds it), and plays one of five kinds: remember (create
people and their employer, relate them, add observations), recall (search, open what was found, add an
observation), update (read the graph, delete an old relation, create the new employer and relation, delete an old
observation), forget (search, delete the entity), and, in 8% of them, a slip: an observation added to a person the agent
misremembers (a made-up name, which the server refuses: ``Entity with name ... not found``). No ``--hooks``: the
guard checks schemas only, so every call reaches the server and the record holds what it answered.

Needs node and the npm servers (``make mcp-servers``)::

    python scripts/memory_sessions.py --record tests/data/mcp-memory --sessions 60 --seed 0
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

SERVER = Path(sys.prefix) / "mcp-servers" / "node_modules" / ".bin" / "mcp-server-memory"
FIRST = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jonas", "Kaito", "Lena"]
LAST = ["Okafor", "Silva", "Novak", "Haddad", "Larsen", "Moreau", "Tanaka", "Weber", "Kowalski", "Rossi"]
ORGS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne", "Tyrell", "Cyberdyne"]
LIKES = ["tea", "chess", "hiking", "jazz", "sushi", "cycling", "poetry", "tennis"]
#: The share of sessions (once someone is known) where the agent misremembers a name.
SLIPS = 0.08


class Agent:
    """One session's scripted agent: it reads each result it gets and decides the next call from it."""

    def __init__(self, rng: random.Random, known: list[str]) -> None:
        self.rng, self.known = rng, known

    def plan(self) -> tuple[str, str]:
        """``(kind, the user's request)`` of the session."""
        kinds = ["remember", "remember", "recall", "recall", "update", "forget"] if self.known else ["remember"]
        kind = "slip" if self.known and self.rng.random() < SLIPS else self.rng.choice(kinds)
        person = self.rng.choice(self.known) if self.known else ""
        self.person = person if kind != "remember" else f"{self.rng.choice(FIRST)}{self.rng.randint(10, 99)}"
        self.org = f"{self.rng.choice(ORGS)}{self.rng.randint(1, 9)}"
        self.like = self.rng.choice(LIKES)
        prompts = {
            "remember": f"Please remember that my colleague {self.person} works at {self.org} and likes {self.like}.",
            "recall": f"What do you remember about {person}? Also note that they now like {self.like}.",
            "update": f"{person} has moved to {self.org}; please update what you know.",
            "forget": f"Please forget everything about {person}.",
            "slip": f"Add a note that {person} likes {self.like}.",
        }
        return kind, prompts[kind]


async def session(params: StdioServerParameters, agent: Agent, kind: str) -> None:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        await client.list_tools()

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            result = await client.call_tool(name, arguments)
            return result.structured_content if not result.is_error else None

        await PLAYS[kind](agent, call)


async def remember(agent: Agent, call: Any) -> None:
    made = await call(
        "create_entities",
        {
            "entities": [
                {"name": agent.person, "entityType": "person", "observations": [f"likes {agent.like}"]},
                {"name": agent.org, "entityType": "organization", "observations": []},
            ]
        },
    )
    names = [e["name"] for e in (made or {}).get("entities", [])] or [agent.person, agent.org]
    await call("create_relations", {"relations": [{"from": names[0], "to": names[-1], "relationType": "works_at"}]})
    await call("add_observations", {"observations": [{"entityName": names[0], "contents": ["met at work"]}]})
    agent.known.append(agent.person)


async def recall(agent: Agent, call: Any) -> None:
    found = await call("search_nodes", {"query": agent.person})
    names = [e["name"] for e in (found or {}).get("entities", [])]
    if names:
        await call("open_nodes", {"names": names[:2]})
        noted = {"entityName": names[0], "contents": [f"likes {agent.like}"]}
        await call("add_observations", {"observations": [noted]})


async def update(agent: Agent, call: Any) -> None:
    graph = await call("read_graph", {})
    old = [r for r in (graph or {}).get("relations", []) if r["from"] == agent.person]
    if old:
        await call("delete_relations", {"relations": old[:1]})
    await call("create_entities", {"entities": [{"name": agent.org, "entityType": "organization", "observations": []}]})
    await call("create_relations", {"relations": [{"from": agent.person, "to": agent.org, "relationType": "works_at"}]})
    people = [e for e in (graph or {}).get("entities", []) if e["name"] == agent.person]
    if people and people[0]["observations"]:
        deletion = {"entityName": agent.person, "observations": people[0]["observations"][:1]}
        await call("delete_observations", {"deletions": [deletion]})


async def forget(agent: Agent, call: Any) -> None:
    found = await call("search_nodes", {"query": agent.person})
    names = [e["name"] for e in (found or {}).get("entities", []) if e["name"] == agent.person]
    if names:
        await call("delete_entities", {"entityNames": names})
        agent.known.remove(agent.person)


async def slip(agent: Agent, call: Any) -> None:
    wrong = agent.person[:-2] + str(agent.rng.randint(10, 99))  # the agent misremembers the number
    await call("add_observations", {"observations": [{"entityName": wrong, "contents": [f"likes {agent.like}"]}]})


PLAYS = {"remember": remember, "recall": recall, "update": update, "forget": forget, "slip": slip}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", required=True, help="the guard's record folder (created)")
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    known: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        memory = Path(scratch) / "memory.jsonl"
        for index in range(args.sessions):
            agent = Agent(rng, known)
            kind, prompt = agent.plan()
            given = Path(scratch) / f"prompt-{index}.txt"
            given.write_text(prompt + "\n", encoding="utf-8")
            guard = ["-m", "prefix_exec", "guard", "--record", args.record, "--given", str(given)]
            guard += ["--model", "scripted"]
            params = StdioServerParameters(
                command=sys.executable,
                args=[*guard, "--", str(SERVER)],
                env={**os.environ, "MEMORY_FILE_PATH": str(memory)},
            )
            anyio.run(session, params, agent, kind)
            print(json.dumps({"session": index, "kind": kind, "prompt": prompt}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
