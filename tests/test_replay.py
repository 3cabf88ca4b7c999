from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prefix_exec.errors import ReplayError
from prefix_exec.replay import replay, with_success
from prefix_exec.trajectory import FailureLabel, Rollout, ToolCall, Verdict


class CounterEnv:
    """A toy environment: ``inc`` adds one; ``need(n)`` requires the counter to equal n (precondition).

    It counts sessions started and steps taken, to show replay never re-runs a prefix.
    """

    name = "counter"

    def __init__(self, allow_no_tool: bool = False) -> None:
        self.starts = 0
        self.steps = 0
        self.allow_no_tool = allow_no_tool

    def start(self, task_id: str) -> CounterSession:
        if task_id == "missing":
            raise KeyError(task_id)
        self.starts += 1
        return CounterSession(self, 0)


class CounterSession:
    def __init__(self, env: CounterEnv, value: int) -> None:
        self.env, self.value = env, value

    def step(self, call: ToolCall) -> Verdict:
        self.env.steps += 1
        if call.name == "inc":
            self.value += 1
            return Verdict.accept(self.value)
        if call.name == "need":
            if call.arguments.get("n") == self.value:
                return Verdict.accept()
            return Verdict.reject(FailureLabel.PRECONDITION, f"counter is {self.value}")
        return Verdict.reject(FailureLabel.SCHEMA, f"unknown tool {call.name}")

    def finish_without_tools(self) -> Verdict:
        if self.env.allow_no_tool:
            return Verdict.accept()
        return Verdict.reject(FailureLabel.PRECONDITION, "tools required")

    def fork(self) -> CounterSession:
        return CounterSession(self.env, self.value)


def rollout(*names_args, success=1) -> Rollout:
    actions = tuple(ToolCall(n, a) for n, a in names_args)
    return Rollout("toy", "t1", "m", "react", actions=actions, success=success)


def test_fully_executable_rollout_has_fed_t_plus_one():
    env = CounterEnv()
    rec = replay(rollout(("inc", {}), ("inc", {}), ("need", {"n": 2})), env)
    assert (rec.T, rec.fed, rec.executable, rec.label) == (3, 4, True, None)
    assert len(rec.verdicts) == 3


def test_first_rejection_fixes_fed_and_replay_stops_there():
    env = CounterEnv()
    r = rollout(("inc", {}), ("need", {"n": 5}), ("inc", {}), ("need", {"n": 2}), success=1)
    rec = replay(r, env)
    assert (rec.T, rec.fed, rec.label) == (4, 2, FailureLabel.PRECONDITION)
    assert rec.reason == "counter is 1"
    assert len(rec.verdicts) == 2
    assert env.steps == 2
    # The full rollout stays on the record for recovery and reports.
    assert len(rec.actions) == 4
    assert rec.success == 1


def test_replay_is_incremental_one_session_one_step_per_action():
    env = CounterEnv()
    n = 50
    replay(rollout(*[("inc", {})] * n), env)
    assert env.starts == 1
    assert env.steps == n


def test_empty_rollout_is_one_terminal_no_tool_action():
    rec = replay(rollout(), CounterEnv(allow_no_tool=False))
    assert (rec.T, rec.fed, rec.no_tool, rec.label) == (1, 1, True, FailureLabel.PRECONDITION)
    rec = replay(rollout(), CounterEnv(allow_no_tool=True))
    assert (rec.T, rec.fed, rec.executable) == (1, 2, True)


def test_unparsed_call_is_a_schema_failure_and_never_reaches_the_environment():
    env = CounterEnv()
    bad = ToolCall("<unparsed>", {}, parse_error="unexpected EOF")
    r = Rollout("toy", "t1", "m", "react", actions=(ToolCall("inc"), bad, ToolCall("inc")), success=0)
    rec = replay(r, env)
    assert (rec.fed, rec.label) == (2, FailureLabel.SCHEMA)
    assert "unexpected EOF" in rec.reason
    assert env.steps == 1


def test_missing_success_or_task_is_a_replay_error():
    with pytest.raises(ReplayError, match="final success"):
        replay(Rollout("toy", "t1", "m", "react", actions=(ToolCall("inc"),)), CounterEnv())
    with pytest.raises(ReplayError, match="no task"):
        replay(Rollout("toy", "missing", "m", "react", success=1), CounterEnv())


def test_a_rollout_whose_y_is_absent_is_scored_with_success_none():
    """Only a rollout that says its Y is absent (traces without --success-field) is scored without one; a
    benchmark whose Y is computed at scoring still needs it (the test above), and cannot fill in an absent one."""
    absent = Rollout("toy", "t1", "m", "react", actions=(ToolCall("inc"), ToolCall("bogus")), success_absent=True)
    rec = replay(absent, CounterEnv())
    assert (rec.success, rec.T, rec.fed) == (None, 2, 2)
    with pytest.raises(ValueError, match="absent"):
        with_success(absent, 1)


ACTIONS = st.sampled_from([("inc", {}), ("need", {"n": 1}), ("need", {"n": 2}), ("bogus", {})])


@given(st.lists(ACTIONS, max_size=12))
def test_fed_matches_from_scratch_prefix_executability_eq2(items):
    """FED_i > k  <=>  prefix k is executable, checking each prefix from scratch as the oracle."""
    full = rollout(*items)
    rec = replay(full, CounterEnv(allow_no_tool=True))
    for k in range(1, len(items) + 1):
        prefix = replay(rollout(*items[:k]), CounterEnv())
        assert (rec.fed > k) == prefix.executable
    # Exactly one label per first failure, none for an executable rollout.
    assert (rec.label is None) == rec.executable


def test_records_keep_a_bounded_excerpt_of_each_result():
    class Loud(CounterSession):
        def step(self, call: ToolCall) -> Verdict:
            return Verdict.accept("x" * 50_000)

    class LoudEnv(CounterEnv):
        def start(self, task_id: str) -> Loud:
            return Loud(self, 0)

    rec = replay(rollout(("inc", {}), ("inc", {})), LoudEnv())
    assert all(len(v.result) < 1100 and v.result.endswith("(50000 characters)") for v in rec.verdicts)
