"""A strict BFCL replay taking over the final-success check's execution (``BfclEnvironment.after``).

The oracle is the replay that runs every call itself (``env.start``): taking the check's outcomes over must
give the same record and leave the same state, while running fewer calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("bfcl_eval")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_bfcl_information import PLACEHOLDERS, TRAVEL  # a TravelAPI task, and credentials no user gave

from prefix_exec import budget
from prefix_exec.envs.bfcl import BfclEnvironment, FinalSuccess, api_classes, checker, invocation
from prefix_exec.envs.bfcl.checker import ground_truth_calls
from prefix_exec.envs.bfcl.environment import BfclSession
from prefix_exec.envs.bfcl.tasks import load_task
from prefix_exec.importers.bfcl import ground_truth_rollouts, read_results
from prefix_exec.records.codec import record_to_json
from prefix_exec.replay import replay, replay_session, with_success
from prefix_exec.trajectory import Rollout, ToolCall

BASE_0 = "multi_turn_base_0"  # GorillaFileSystem (document/{final,previous}_report.pdf) + TwitterAPI; 4 turns
MISS_FUNC_1 = "multi_turn_miss_func_1"  # GorillaFileSystem; mv held back until turn 2; 5 turns


@pytest.fixture(scope="module")
def env() -> BfclEnvironment:
    return BfclEnvironment()


@pytest.fixture(scope="module")
def success(env: BfclEnvironment) -> FinalSuccess:
    return FinalSuccess(env.templates)


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the API calls that run, in order (the check's, the replay's and any rebuild's)."""
    names: list[str] = []
    real = invocation.run_bounded

    def counted(method: Any, name: str, arguments: Any, **options: Any) -> invocation.CallOutcome:
        names.append(name)
        return real(method, name, arguments, **options)

    monkeypatch.setattr(invocation, "run_bounded", counted)
    return names


def both(
    env: BfclEnvironment, success: FinalSuccess, rollout: Rollout
) -> tuple[tuple[dict[str, object], BfclSession], tuple[dict[str, object], BfclSession]]:
    """(record, session) replayed running every call, then taking the check's execution over."""
    check = success.check_rollout(load_task(rollout.task_id), rollout, keep_execution=True)
    ready = with_success(rollout, check.success)
    alone = env.start(rollout.task_id)
    taking = env.after(check.execution).start(rollout.task_id)
    return (
        (record_to_json(replay_session(ready, alone)), alone),
        (record_to_json(replay_session(ready, taking)), taking),
    )


def states(session: BfclSession) -> dict[str, object]:
    return {name: api_classes.public_state(instance) for name, instance in session.instances.items()}


def assert_same(env: BfclEnvironment, success: FinalSuccess, rollout: Rollout) -> None:
    (record, alone), (taken, taking) = both(env, success, rollout)
    assert taken == record
    assert states(taking) == states(alone)
    probe = ToolCall("ls", {}, turn=0)  # the state after the replay answers a next call alike
    assert taking.step(probe) == alone.step(probe)


def rollout_of(task: str, *calls: ToolCall) -> Rollout:
    return Rollout("bfcl", task, "m", "x", calls)


def call(name: str, turn: int, step: int, index: int = 0, **arguments: object) -> ToolCall:
    return ToolCall(name, arguments, f"t{turn}.s{step}.c{index}", turn)


def test_real_rollouts_give_the_same_records(env: BfclEnvironment, success: FinalSuccess, shared_data: Path) -> None:
    """Every ground-truth rollout, and the FC and prompting logs of the shared data (2,400 rollouts)."""
    units: list[Rollout] = list(ground_truth_rollouts())
    for model in ("glyphh-ada-1.1", "airev-agent-0.8b"):
        folder = shared_data / "bfcl" / model
        if not folder.is_dir():
            pytest.skip(f"shared data missing: {folder}")
        units += [unit for unit in read_results([folder]) if isinstance(unit, Rollout)]
    differing = []
    for rollout in units:
        check = success.check_rollout(load_task(rollout.task_id), rollout, keep_execution=True)
        ready = with_success(rollout, check.success)
        if record_to_json(replay(ready, env.after(check.execution))) != record_to_json(replay(ready, env)):
            differing.append((rollout.model, rollout.task_id))
    assert len(units) == 2400
    assert differing == []


def test_the_replay_of_a_ground_truth_runs_no_call(
    env: BfclEnvironment, success: FinalSuccess, runs: list[str]
) -> None:
    names = runs
    rollout = next(r for r in ground_truth_rollouts() if r.task_id == BASE_0)
    check = success.check_rollout(load_task(BASE_0), rollout, keep_execution=True)
    assert check.success == 1 and check.execution is not None
    assert len(check.execution.calls) == len(rollout.actions) == 10
    names.clear()
    record = replay(with_success(rollout, 1), env.after(check.execution))
    assert record.fed == record.T + 1 and names == []
    replay(with_success(rollout, 1), env)  # the oracle runs each one
    assert len(names) == 10


def test_past_the_checks_last_call_the_replay_runs_on_from_its_state(
    env: BfclEnvironment, success: FinalSuccess, runs: list[str]
) -> None:
    """The check stops at turn 0 (no mkdir/mv); the replay takes the two calls it ran, then runs the rest."""
    rollout = rollout_of(
        BASE_0,
        call("cd", 0, 0, folder="document"),
        call("ls", 0, 1),
        call("cd", 1, 0, folder=".."),
        call("ls", 1, 1),
    )
    names = runs
    check = success.check_rollout(load_task(BASE_0), rollout, keep_execution=True)
    assert check.turn == 0 and check.execution is not None and len(check.execution.calls) == 2
    names.clear()
    record = replay(with_success(rollout, 0), env.after(check.execution))
    assert record.fed == 5 and names == ["cd", "ls"]
    assert_same(env, success, rollout)


def test_a_step_the_check_skipped_whole_is_run_by_the_replay(env: BfclEnvironment, success: FinalSuccess) -> None:
    """The check skips step 0 (its second call did not decode) and runs step 1; the replay runs mkdir itself
    on the initial state, not on the check's, which is past the cd of step 1."""
    rollout = rollout_of(
        BASE_0,
        call("mkdir", 0, 0, 0, dir_name="temp"),
        ToolCall("mv", {}, "t0.s0.c1", 0, parse_error="unterminated string"),
        call("cd", 0, 1, folder="document"),
    )
    check = success.check_rollout(load_task(BASE_0), rollout, keep_execution=True)
    assert check.execution is not None and [c.name for c in check.execution.calls] == ["cd"]
    (record, alone), (taken, taking) = both(env, success, rollout)
    assert taken == record and record["fed"] == 2
    assert states(taking) == states(alone)
    assert "temp" in taking.instances["GorillaFileSystem"].root.contents  # made at the root, before the cd


@pytest.mark.parametrize(
    "calls",
    [
        # an information failure: the call ran in both, so the state is rebuilt from the accepted calls
        (call("get_budget_fiscal_year", 0, 0), call("authenticate_travel", 0, 1, **PLACEHOLDERS)),
        # an API error (the check ran it and went on)
        (call("cd", 0, 0, folder="document"), call("cd", 0, 1, folder="nowhere"), call("ls", 0, 2)),
        # a wrongly typed argument, which BFCL runs and strict mode does not
        (call("cd", 0, 0, folder="document"), call("mkdir", 0, 1, dir_name=7), call("ls", 0, 2)),
        # a tool held back until turn 2, which BFCL runs at turn 0
        (call("ls", 0, 0), call("mv", 0, 1, source="a", destination="b")),
    ],
    ids=["information", "api-error", "wrong-type", "held-back"],
)
def test_rejections_leave_the_state_of_the_accepted_calls(
    env: BfclEnvironment, success: FinalSuccess, calls: tuple[ToolCall, ...]
) -> None:
    task = {"mv": MISS_FUNC_1, "authenticate_travel": TRAVEL}.get(calls[-1].name, BASE_0)
    assert_same(env, success, rollout_of(task, *calls))
    (record, _), _ = both(env, success, rollout_of(task, *calls))
    assert record["fed"] == 2


def test_a_blocked_name_is_run_by_the_replay(
    env: BfclEnvironment, success: FinalSuccess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A public method BFCL refuses by name (none today) was not run by the check, so the replay runs it."""
    monkeypatch.setattr(invocation, "BLOCKED_NAMES", invocation.BLOCKED_NAMES | {"mkdir"})
    rollout = rollout_of(
        BASE_0,
        call("cd", 0, 0, folder="document"),
        call("mkdir", 0, 1, dir_name="temp"),
        call("cd", 0, 2, folder="temp"),
    )
    (record, alone), (taken, taking) = both(env, success, rollout)
    assert taken == record and record["fed"] == 4
    assert states(taking) == states(alone)


def test_outcomes_past_the_character_bound_are_not_kept(
    env: BfclEnvironment, success: FinalSuccess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checker, "EXECUTION_CHARS", 60)  # cd's answer, not the listing after it
    rollout = rollout_of(BASE_0, call("cd", 0, 0, folder="document"), call("ls", 0, 1), call("ls", 0, 2))
    check = success.check_rollout(load_task(BASE_0), rollout, keep_execution=True)
    assert check.execution is not None and check.execution.take_state() is None
    assert [c.name for c in check.execution.calls] == ["cd"]
    assert_same(env, success, rollout)


def test_only_the_first_session_takes_the_checks_state(env: BfclEnvironment, success: FinalSuccess) -> None:
    """Two sessions given one execution: both take the outcomes over, the second runs the accepted calls again
    rather than take a state the first has changed since."""
    rollout = rollout_of(
        BASE_0,
        call("cd", 0, 0, folder="document"),
        call("mkdir", 0, 1, dir_name="temp"),
        call("cd", 1, 0, folder="temp"),
    )
    check = success.check_rollout(load_task(BASE_0), rollout, keep_execution=True)
    assert check.turn == 0  # the check stops after turn 0: cd temp is the replay's to run
    first, second = (env.start(BASE_0, execution=check.execution) for _ in range(2))
    records = [record_to_json(replay_session(with_success(rollout, 0), session)) for session in (first, second)]
    assert records[0] == records[1] and records[0]["fed"] == 4
    assert states(first) == states(second)
    assert check.execution is not None and check.execution.take_state() is None  # the first took it


def test_an_execution_is_taken_over_on_its_task_and_time_limit_only(
    env: BfclEnvironment, success: FinalSuccess
) -> None:
    rollout = rollout_of(BASE_0, call("cd", 0, 0, folder="document"))
    check = success.check_rollout(load_task(BASE_0), rollout, keep_execution=True)
    assert env.after(check.execution).start(BASE_0)._execution is check.execution
    assert env.after(check.execution).start("multi_turn_base_1")._execution is None
    slower = BfclEnvironment(time_limit=invocation.TIME_LIMIT + 1)
    assert slower.after(check.execution).start(BASE_0)._execution is None
    assert success.check_rollout(load_task(BASE_0), rollout).execution is None  # kept only when asked


def test_a_call_refused_midway_by_the_memory_budget_leaves_the_state_of_the_accepted_calls(
    env: BfclEnvironment,
) -> None:
    """post_tweet stores its content, then builds a result past the budget: the tweet must not stay."""
    unchecked = BfclEnvironment(information=False)
    login = call("authenticate_twitter", 0, 0, username="analyst_pro", password="Kj8#mP9$vL2")
    huge = call("post_tweet", 0, 1, content="z" * (64 * 1024 * 1024))
    with budget.rollout_budget(60, 16):
        session = unchecked.start(BASE_0)
        assert session.step(login).accepted
        tweets = len(session.instances["TwitterAPI"].tweets)
        verdict = session.step(huge)
    assert not verdict.accepted and "memory" in (verdict.reason or "")
    assert len(session.instances["TwitterAPI"].tweets) == tweets


#: One task per pair of API classes the property test draws from (every class of BFCL's multi-turn set).
PROPERTY_TASKS = (
    BASE_0,
    MISS_FUNC_1,
    TRAVEL,
    "multi_turn_base_2",  # TicketAPI
    "multi_turn_base_14",  # MessageAPI
    "multi_turn_base_15",  # MathAPI
    "multi_turn_base_52",  # TwitterAPI + VehicleControlAPI
    "multi_turn_base_101",  # MessageAPI + TradingBot
    "multi_turn_long_context_0",
)


def call_pool(task_id: str) -> list[tuple[str, dict[str, object]]]:
    """The task's ground-truth calls, each also with its arguments mistyped, one missing and one unknown, and
    a few calls no task should make."""
    pool: list[tuple[str, dict[str, object]]] = []
    for name, arguments in (pair for turn in ground_truth_calls(load_task(task_id)) for pair in turn):
        pool.append((name, dict(arguments)))
        pool.append((name, {key: 7 if isinstance(value, str) else "x" for key, value in arguments.items()}))
        pool.append((name, dict(list(arguments.items())[1:])))
        pool.append((name, {**arguments, "bogus": 1}))
    pool += [("nonexistent_tool", {}), ("get_stock_info", {"symbol": "NVDA"}), ("cd", {"folder": "nowhere"})]
    return pool


@st.composite
def rollouts(draw: st.DrawFn) -> Rollout:
    """Up to 12 calls drawn from a task's pool over its turns, a few per step as an importer numbers them,
    with undecodable calls, a call object repeated, odd call ids, turns out of order or past the last, and
    the turn count recorded or not."""
    task_id = draw(st.sampled_from(PROPERTY_TASKS))
    turns = len(load_task(task_id).ground_truth)
    pool = call_pool(task_id)
    calls: list[ToolCall] = []
    turn, step, index = 0, 0, 0
    for _ in range(draw(st.integers(0, 12))):
        move = draw(st.sampled_from(["same step", "next step", "next turn", "jump", "repeat"]))
        if move == "repeat" and calls:
            calls.append(draw(st.sampled_from(calls)))
            continue
        if move == "next turn":
            turn, step, index = turn + 1, 0, 0
        elif move == "jump":
            turn, step, index = draw(st.sampled_from([0, turns - 1, turns, turn])), 0, 0
        elif move != "same step" or index == 0:
            step, index = step + (1 if calls else 0), 0
        name, arguments = draw(st.sampled_from(pool))
        call_id = draw(st.sampled_from([f"t{turn}.s{step}.c{index}"] * 4 + [None, "weird", "t0.s0.c0"]))
        error = draw(st.sampled_from([None] * 9 + ["could not decode"]))
        calls.append(ToolCall(name, dict(arguments), call_id, turn, parse_error=error))
        index += 1
    metadata: dict[str, object] = {}
    if draw(st.booleans()):
        metadata["loop"] = checker.OWN_LOOP
    recorded = draw(st.sampled_from([None, turns, turns + 1]))
    if recorded is not None:
        metadata["turns"] = recorded
    return Rollout("bfcl", task_id, "m", "x", tuple(calls), metadata=metadata)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rollouts())
def test_taking_over_is_replaying_every_call(env: BfclEnvironment, success: FinalSuccess, rollout: Rollout) -> None:
    assert_same(env, success, rollout)
