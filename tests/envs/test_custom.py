from __future__ import annotations

import json

import pytest

from prefix_exec.envs.custom.environment import load_spec
from prefix_exec.errors import InputError, ReplayError
from prefix_exec.records.codec import read_rollouts
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel, Rollout, ToolCall


@pytest.fixture(scope="module")
def env(ticketing):
    return load_spec(ticketing / "tools.yaml")


def calls(*items):
    return tuple(ToolCall(name, args) for name, args in items)


def score(env, task, *items):
    return replay(Rollout("ticketing", task, "m", "x", actions=calls(*items), success=1), env)


LOGIN = ("login", {"username": "sam"})


@pytest.mark.parametrize(
    ("items", "fed", "label"),
    [
        # schema: an argument outside its enum, an unknown tool, an extra argument
        ((LOGIN, ("create_ticket", {"title": "Fan", "priority": "urgent"})), 2, FailureLabel.SCHEMA),
        ((LOGIN, ("reopen_ticket", {"ticket_id": "T-1000"})), 2, FailureLabel.SCHEMA),
        ((LOGIN, ("search_tickets", {"query": "vpn", "limit": 5})), 2, FailureLabel.SCHEMA),
        # dependency: an id no earlier call produced (T-1001 exists in the DB, but the agent never saw it)
        ((LOGIN, ("get_ticket", {"ticket_id": "T-1001"})), 2, FailureLabel.DEPENDENCY),
        # precondition: not logged in
        ((("search_tickets", {"query": "vpn"}),), 1, FailureLabel.PRECONDITION),
        # state_consistency: the ticket was deleted by an earlier call
        (
            (
                LOGIN,
                ("create_ticket", {"title": "Dup", "priority": "low"}),
                ("delete_ticket", {"ticket_id": "T-1003"}),
                ("get_ticket", {"ticket_id": "T-1003"}),
            ),
            4,
            FailureLabel.STATE_CONSISTENCY,
        ),
        # information (from a hook): an assignee who does not exist
        (
            (LOGIN, ("create_ticket", {"title": "Fan", "priority": "low", "assignee": "zoe"})),
            2,
            FailureLabel.INFORMATION,
        ),
    ],
)
def test_each_label_at_a_known_depth(env, items, fed, label):
    rec = score(env, "open-vpn-followup", *items)
    assert (rec.fed, rec.label) == (fed, label), rec.reason


def test_several_causes_pick_the_first_in_order(env):
    # Not logged in AND an id never produced: dependency beats precondition.
    rec = score(env, "open-vpn-followup", ("get_ticket", {"ticket_id": "T-1001"}))
    verdict = rec.failing_verdict
    assert verdict.causes == (FailureLabel.DEPENDENCY, FailureLabel.PRECONDITION)
    assert rec.label is FailureLabel.DEPENDENCY


def test_produced_and_given_values_may_be_referenced(env):
    rec = score(
        env,
        "open-vpn-followup",
        LOGIN,
        ("search_tickets", {"query": "vpn"}),
        ("add_comment", {"ticket_id": "T-1001", "body": "on it"}),
    )
    assert rec.executable
    # The task statement gives T-1001 directly, so no search is needed.
    rec = score(
        env,
        "triage-vpn",
        ("login", {"username": "dana"}),
        ("update_ticket", {"ticket_id": "T-1001", "priority": "high"}),
    )
    assert rec.executable


def test_rejected_action_leaves_state_unchanged_and_fork_is_independent(env):
    session = env.start("close-printer")
    assert session.step(ToolCall("login", {"username": "dana"})).accepted
    before = json.dumps(session.state, sort_keys=True)
    assert not session.step(ToolCall("update_ticket", {"ticket_id": "T-1002", "assignee": "nobody"})).accepted
    assert json.dumps(session.state, sort_keys=True) == before
    fork = session.fork()
    assert fork.step(ToolCall("close_ticket", {"ticket_id": "T-1002", "resolution": "done"})).accepted
    assert session.state["tickets"]["T-1002"]["status"] == "open"
    assert session.step(ToolCall("close_ticket", {"ticket_id": "T-1002", "resolution": "done"})).accepted
    again = session.step(ToolCall("close_ticket", {"ticket_id": "T-1002", "resolution": "done"}))
    assert again.label is FailureLabel.STATE_CONSISTENCY


def test_no_tool_rollouts_follow_the_task(env):
    assert score(env, "what-can-you-do").executable
    rec = score(env, "new-laptop")
    assert (rec.T, rec.fed, rec.label) == (1, 1, FailureLabel.PRECONDITION)


def test_turn_exposure(tmp_path):
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({"tools": [{"name": "late", "exposed_from_turn": 1}]}))
    env = load_spec(spec)
    session = env.start("any")
    assert session.step(ToolCall("late", {}, turn=0)).label is FailureLabel.SCHEMA
    assert session.step(ToolCall("late", {}, turn=1)).accepted


def test_example_rollouts_score_as_documented(env, ticketing):
    got = {(r.task_id, r.method): replay(r, env) for r in read_rollouts(ticketing / "rollouts.jsonl")}
    assert all(rec.executable for (_, method), rec in got.items() if method == "react")
    expected = {
        "open-vpn-followup": (1, "dependency"),
        "new-laptop": (2, "schema"),
        "close-printer": (1, "precondition"),
        "triage-vpn": (2, "information"),
        "cleanup-duplicate": (4, "state_consistency"),
        "what-can-you-do": (2, "state_consistency"),
    }
    for task, (fed, label) in expected.items():
        rec = got[(task, "plan-conditioned")]
        assert (rec.fed, rec.label.value) == (fed, label)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"tools": [{"name": "a", "parameters": {"type": "nope"}}]}, "not a valid JSON Schema"),
        ({"tools": [{"name": "a"}, {"name": "a"}]}, "declared twice"),
        ({"tools": [{"name": "a", "effect": "go"}]}, "hook 'go' not found"),
        ({"tools": [{"name": "a", "colour": "red"}]}, "Additional properties"),
        ({"hooks": "missing_hooks.py", "tools": [{"name": "a"}]}, "cannot load hooks"),
    ],
)
def test_bad_specs_are_input_errors(tmp_path, spec, fragment):
    path = tmp_path / "spec.yaml"  # JSON is YAML; a YAML spec may name hooks
    path.write_text(json.dumps(spec))
    with pytest.raises(InputError, match=fragment):
        load_spec(path)


def test_unknown_task_when_tasks_are_declared(env):
    with pytest.raises(KeyError):
        env.start("no-such-task")


def _spec_with_hooks(tmp_path, hooks_source):
    (tmp_path / "h.py").write_text(hooks_source)
    spec = tmp_path / "s.yaml"  # only a YAML spec may name hooks
    spec.write_text(json.dumps({"hooks": "h.py", "tools": [{"name": "a", "precondition": "check", "effect": "apply"}]}))
    return load_spec(spec)


def test_a_hook_that_raises_is_a_replay_error_naming_hook_tool_and_line(tmp_path):
    env = _spec_with_hooks(
        tmp_path,
        "def check(state, args):\n    return None\n\ndef apply(state, args):\n    return state['missing']\n",
    )
    with pytest.raises(ReplayError) as caught:
        env.start("any").step(ToolCall("a", {}))
    message = str(caught.value)
    assert "the effect hook 'apply' of tool 'a' raised KeyError: 'missing' at h.py:5" in message
    assert "fix the hooks module" in message


def test_a_precondition_that_raises_leaves_the_state_alone(tmp_path):
    env = _spec_with_hooks(
        tmp_path,
        "def check(state, args):\n    raise ValueError('bad hook')\n\ndef apply(state, args):\n    state['n'] = 1\n",
    )
    session = env.start("any")
    with pytest.raises(ReplayError) as caught:
        session.step(ToolCall("a", {}))
    assert "precondition hook 'check' of tool 'a' raised ValueError: bad hook at h.py:2" in str(caught.value)
    assert session.state == {}


def test_hooks_importing_reject_from_its_old_home_are_told_the_new_import(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """0.1.0's docs had hooks write ``from prefix_exec.envs.custom import Reject``; that module is now a package,
    so the hooks do not load, and the error says what to write instead."""
    (tmp_path / "hooks.py").write_text("from prefix_exec.envs.custom import Reject\n", encoding="utf-8")
    spec = "name: old-hooks\nhooks: hooks.py\ntools:\n  - name: ping\n"  # YAML: a JSON spec never runs code
    (tmp_path / "tools.yaml").write_text(spec, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_spec(tmp_path / "tools.yaml")
    assert caught.value.field == "hooks"
    assert "from prefix_exec import Reject" in (caught.value.hint or "")
