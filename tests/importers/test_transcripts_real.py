"""tau-bench's published gpt-4o airline trajectories (tests/data/tau-bench, MIT), read as transcripts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.importers.transcripts import Identity, Transcript, TranscriptFile

TAU_BENCH = Path(__file__).resolve().parents[1] / "data" / "tau-bench"
IDENTITY = Identity({}, {"model": "gpt-4o"}, {"method": "default", "trial": 0, "dataset": "tau-bench-airline"})


@pytest.fixture(scope="module")
def published() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((TAU_BENCH / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def read() -> list[Transcript]:
    file = TranscriptFile(TAU_BENCH / "gpt-4o-airline.json", IDENTITY, tolerant=True)
    got = list(file)
    assert file.format == "tau-bench"
    assert all(isinstance(t, Transcript) for t in got), [t for t in got if not isinstance(t, Transcript)][:3]
    return [t for t in got if isinstance(t, Transcript)]


def reuses_an_id(record: dict[str, Any]) -> bool:
    ids = Counter(c["id"] for m in record["traj"] for c in m.get("tool_calls") or ())
    return any(n > 1 for n in ids.values())


def test_all_200_conversations_are_read_none_refused(read: list[Transcript], published: list[dict[str, Any]]) -> None:
    assert len(read) == len(published) == 200
    assert {t.rollout.key for t in read} == {
        ("tau-bench-airline", str(task), "gpt-4o", "default", trial) for task in range(50) for trial in range(4)
    }
    assert [t.rollout.metadata["source"] for t in read[:2]] == ["gpt-4o-airline.json[0]", "gpt-4o-airline.json[1]"]


def test_the_49_conversations_that_reuse_call_ids_pair_each_reply_with_its_call(
    read: list[Transcript], published: list[dict[str, Any]]
) -> None:
    """gpt-4o's ids repeat (call_oIHa... answers a get_user_details, then a calculate): each reply comes
    right after its call, so pairing in order reads them all. They were refused as duplicate ids before."""
    reusing = [i for i, record in enumerate(published) if reuses_an_id(record)]
    assert len(reusing) == 49
    for i in reusing:
        traj = published[i]["traj"]
        want = [m["content"] for m in traj if m["role"] == "tool"]
        actions = read[i].rollout.actions
        assert [a.observation.content if a.observation else None for a in actions] == want
        tool_names = [m["name"] for m in traj if m["role"] == "tool"]
        assert [a.name for a in actions] == tool_names


def test_every_call_is_an_action_and_y_is_the_reward(read: list[Transcript], published: list[dict[str, Any]]) -> None:
    assert sum(len(t.rollout.actions) for t in read) == 1164
    assert [t.rollout.success for t in read] == [int(r["reward"]) for r in published]
    assert sum(t.rollout.success or 0 for t in read) == 84
    assert sum(not t.rollout.actions for t in read) == 18  # conversations without a tool call
    assert all(a.parse_error is None and a.observation is not None for t in read for a in t.rollout.actions)
    errors = sum(
        str(a.observation.content).startswith("Error") for t in read for a in t.rollout.actions if a.observation
    )
    assert errors > 0  # replies the environment refused: the evidence policy reads them, not this reader
