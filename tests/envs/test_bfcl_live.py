"""BFCL's own execution (the live session of non-guarded variants) against bfcl_eval's execution code and FinalSuccess,
and the BFCL texts a strict session's rejections carry."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

pytest.importorskip("bfcl_eval")

from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess, api_classes, load_task
from prefix_exec.envs.bfcl.state_description import describe_state
from prefix_exec.trajectory import FailureLabel, ToolCall

TASK = "multi_turn_miss_func_1"  # GorillaFileSystem /alex/workspace/{log.txt, archive/}; mv held back until turn 2

#: (name, arguments, turn): clean calls, BFCL errors, calls BFCL runs that the strict checks reject.
CALLS: list[tuple[str, dict[str, Any], int]] = [
    ("ls", {"a": True}, 0),
    ("ls", {"a": "yes"}, 0),  # wrongly typed: BFCL runs it
    ("cd", {"folder": "no_such_folder"}, 0),  # BFCL's error result
    ("nope", {}, 0),  # undefined name
    ("remove", {"path": "x"}, 0),  # on BFCL's blocked list
    ("ls", {"x": 1}, 0),  # unknown argument: BFCL's TypeError
    ("cd", {"folder": "workspace"}, 1),
    ("mv", {"source": "log.txt", "destination": "archive"}, 1),  # held back until turn 2: BFCL runs it
    ("cat", {"file_name": "log.txt"}, 1),  # fails: log.txt was moved
    ("mkdir", {"dir_name": "reports"}, 1),
    ("cd", {"folder": "archive"}, 3),
    ("tail", {"file_name": "log.txt", "lines": 2}, 3),
]


@pytest.fixture(scope="module")
def env() -> BfclEnvironment:
    return BfclEnvironment()


def actions() -> list[ToolCall]:
    return [ToolCall(name, args, turn=turn, call_id=f"t{turn}.s{i}.c0") for i, (name, args, turn) in enumerate(CALLS)]


def upstream() -> tuple[list[str], dict[str, Any]]:
    """BFCL's own execution code on the same calls (written as BFCL's FC decoder writes them: ``k=repr(v)``)."""
    task = load_task(TASK)
    sources = [f"{name}({','.join(f'{k}={v!r}' for k, v in args.items())})" for name, args, _ in CALLS]
    model = f"prefix_exec_test_{uuid.uuid4().hex}"  # BFCL keeps instances in its globals per model and task
    return execute_multi_turn_func_call(sources, dict(task.initial_config), list(task.involved_classes), model, TASK)


def test_the_live_session_answers_and_changes_state_exactly_as_bfcls_own_execution(env: BfclEnvironment) -> None:
    session = env.start(TASK, strict=False)
    verdicts = [session.step(call) for call in actions()]
    texts, instances = upstream()
    assert [v.result for v in verdicts] == texts
    for name, instance in instances.items():
        assert api_classes.public_state(session.instances[name]) == api_classes.public_state(instance), name
    # Accepted exactly when BFCL's answer is not an error; the wrongly typed and held-back calls ran.
    accepted = [v.accepted for v in verdicts]
    assert accepted == [True, True, False, False, False, False, True, True, False, True, True, True]
    assert texts[3] == "Error during execution: name 'nope' is not defined"
    assert texts[4] == "Error during execution: Function call remove is not allowed."
    labels = [v.label for v in verdicts if not v.accepted]
    assert labels == [
        FailureLabel.DEPENDENCY,
        FailureLabel.SCHEMA,
        FailureLabel.SCHEMA,
        FailureLabel.SCHEMA,
        FailureLabel.DEPENDENCY,
    ]


def test_final_success_runs_the_calls_into_the_live_state(env: BfclEnvironment) -> None:
    session = env.start(TASK, strict=False)
    for call in actions():
        session.step(call)
    computed = FinalSuccess(env.templates).model_state(load_task(TASK), actions())
    for name, instance in computed.items():
        assert api_classes.public_state(instance) == api_classes.public_state(session.instances[name])


def test_strict_rejections_carry_bfcls_answer_only_when_bfcl_answers_with_an_error(env: BfclEnvironment) -> None:
    texts, _ = upstream()
    found = {}
    for index in (1, 3, 5, 7):
        session = env.start(TASK)  # strict
        if index == 7:
            session.step(actions()[6])  # cd workspace first
        before = describe_state(session.instances, ("GorillaFileSystem",))
        verdict = session.step(actions()[index])
        assert not verdict.accepted
        assert verdict.label == FailureLabel.SCHEMA
        assert describe_state(session.instances, ("GorillaFileSystem",)) == before  # nothing ran
        found[index] = verdict
    assert found[1].result is None
    assert "expected boolean" in found[1].reason  # BFCL would have listed
    assert found[3].result == texts[3]
    assert found[3].reason == "unknown tool 'nope'"
    assert found[5].result == texts[5]
    assert "unexpected keyword argument" in texts[5]
    assert found[7].result is None
    assert "held back until turn 2" in found[7].reason


def test_the_live_mode_survives_forks(env: BfclEnvironment) -> None:
    session = env.start(TASK, strict=False)
    twin = session.fork()
    assert not twin.strict
    assert twin.step(ToolCall("ls", {"a": "yes"})).accepted
    assert not env.start(TASK).fork().step(ToolCall("ls", {"a": "yes"})).accepted


def test_the_state_description_is_bounded_deterministic_and_follows_the_session(env: BfclEnvironment) -> None:
    task = load_task("multi_turn_long_context_2")
    session = env.start(task.id)
    first = describe_state(session.instances, task.involved_classes, 600)
    assert len(first) <= 600
    assert first == describe_state(env.start(task.id).instances, task.involved_classes, 600)
    assert "0x" not in describe_state(session.instances, task.involved_classes, 100_000)  # no object addresses
    live = env.start(TASK, strict=False)
    assert '"cwd":"/alex"' in describe_state(live.instances, ("GorillaFileSystem",))
    live.step(ToolCall("cd", {"folder": "workspace"}))
    assert '"cwd":"/alex/workspace"' in describe_state(live.instances, ("GorillaFileSystem",))
