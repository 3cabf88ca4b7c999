"""``--record DIR`` against a kill: the guard is SIGKILLed right after the client has the answer to its Nth
call of a flood (each call sent the moment the previous answer came), and the record holds all N calls.

The guarantee tested, exactly: every call whose answer (or block) the client has received is in the journal
(``DIR/journal/``), because the guard appends it before it passes the answer on, and ``prefix-exec guard
--rebuild DIR`` derives ``DIR/rollouts.jsonl`` and ``DIR/records.jsonl`` from it; only calls in flight are
lost. Nothing here waits on time: the kill follows the Nth answer at once, and the files are read after the
process is gone.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from guard_client import NOTES_SERVER, read_jsonl
from raw_guard import RawGuard

from prefix_exec.cli import main

pytestmark = pytest.mark.slow

SIDE = """
hooks: hooks.py
tools:
  create_note: {effect: made}
  append_note: {precondition: has_note}
"""
HOOKS = """
def made(state, args):
    state["made"] = True


def has_note(state, args):
    return None if state.get("made") else "create a note first"
"""


@pytest.mark.parametrize("calls", [1, 2, 60])
def test_a_killed_guard_has_recorded_every_call_the_client_had_an_answer_to(tmp_path: Path, calls: int) -> None:
    (tmp_path / "hooks.py").write_text(HOOKS)
    (tmp_path / "side.yaml").write_text(SIDE)
    record = tmp_path / "record"
    args = ["--hooks", str(tmp_path / "side.yaml"), "--record", str(record)]
    answers = []
    with RawGuard(args, NOTES_SERVER, tmp_path / "stderr.txt") as g:
        g.initialize()
        assert "result" in g.request(1, "tools/list", {})
        for i in range(calls):
            # The first call is blocked (no note yet: not forwarded), then a note is made and appended to.
            name = "append_note" if i != 1 else "create_note"
            arguments = {"note_id": "N-1", "text": f"t{i}"} if name == "append_note" else {"text": "first"}
            answer = g.request(100 + i, "tools/call", {"name": name, "arguments": arguments})
            answers.append(answer["result"])
        g.process.send_signal(signal.SIGKILL)
        assert g.process.wait(timeout=60) == -signal.SIGKILL, g.stderr()
    assert answers[0]["isError"] and "create a note first" in json.dumps(answers[0])  # blocked by the guard
    assert not (record / "rollouts.jsonl").exists()  # killed: only the journal was written, and it is whole
    assert main(["guard", "--rebuild", str(record)]) == 0
    assert all(not a.get("isError") for a in answers[1:]), answers
    (rollout,) = read_jsonl(record / "rollouts.jsonl")
    (scored,) = read_jsonl(record / "records.jsonl")
    assert len(rollout["actions"]) == calls and scored["T"] == calls
    assert len(scored["metadata"]["guard"]["calls"]) == calls
    # The last call recorded is the last one answered, its observation the answer the client got.
    last = rollout["actions"][-1]
    assert last["arguments"] == ({"note_id": "N-1", "text": f"t{calls - 1}"} if calls != 2 else {"text": "first"})
    got = answers[-1].get("structuredContent", answers[-1]["content"][0]["text"])
    assert last["observation"]["content"] == got and last["observation"]["error"] == (calls == 1)
    assert scored["fed"] == 1 and scored["label"] is not None  # the block is the first failing call
