"""The guard with a side file inferred from recorded sessions (issue 41): ``infer-spec`` on tests/data/mcp-memory
(60 sessions the guard recorded against npm's ``@modelcontextprotocol/server-memory``), then ``guard --hooks`` on
the same real server with the file as it is: an observation on an entity nobody produced or stated is refused before
it reaches the server, one on an entity the user stated (``--given``) or an earlier call created is forwarded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from guard_client import guard_params, npm_server, outcomes, read_jsonl, replayed
from test_guard_given import drive

from prefix_exec.cli import main

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[1] / "data" / "mcp-memory"


@pytest.fixture(scope="module")
def side(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("inferred") / "side.yaml"
    argv = ["infer-spec", str(CORPUS / "rollouts.jsonl"), "--tools", str(CORPUS / "tools.json"), "--out", str(path)]
    assert main(argv) == 0
    return path


def test_the_inferred_file_names_the_entity_references(side: Path) -> None:
    tools = yaml.safe_load(side.read_text(encoding="utf-8"))["tools"]
    assert tools["add_observations"]["refs"] == {"observations[*].entityName": "entity"}
    assert tools["create_entities"]["produces"] == {"entity": "entities[*].name"}
    assert tools["search_nodes"]["produces"] == {"entity": "entities[*].name"}


def test_an_invented_entity_is_refused_a_stated_or_created_one_accepted(side: Path, tmp_path: Path) -> None:
    memory = tmp_path / "memory.jsonl"
    alice = {"type": "entity", "name": "Alice", "entityType": "person", "observations": ["likes tea"]}
    memory.write_text(json.dumps(alice) + "\n")
    given = tmp_path / "prompt.txt"
    given.write_text("Please note that my colleague Alice now likes chess.\n")
    record = tmp_path / "record"
    script = [
        ("add_observations", {"observations": [{"entityName": "Alice", "contents": ["likes chess"]}]}),
        ("create_entities", {"entities": [{"name": "Bob", "entityType": "person", "observations": []}]}),
        ("add_observations", {"observations": [{"entityName": "Bob", "contents": ["met Alice"]}]}),
        ("add_observations", {"observations": [{"entityName": "Mallory", "contents": ["unknown"]}]}),
    ]
    args = ["--hooks", str(side), "--given", str(given), "--record", str(record)]
    seen = drive(guard_params(args, [npm_server("mcp-server-memory")], {"MEMORY_FILE_PATH": str(memory)}), script)
    assert [error for error, _ in seen] == [False, False, False, True]
    assert "dependency" in seen[3][1] and "Mallory" in seen[3][1]
    stored = [json.loads(line) for line in memory.read_text().splitlines()]
    assert not any("Mallory" in json.dumps(row) for row in stored)  # the refused call never reached the server
    (row,) = read_jsonl(record / "records.jsonl")
    assert (row["T"], row["fed"], row["label"]) == (4, 4, "dependency")
    notes = row["verdicts"][0]["notes"]
    assert any("given by the conversation at message 0" in note for note in notes)
    assert replayed(record, side, tmp_path / "replay.jsonl") == outcomes(record / "records.jsonl")
