"""The BFCL environment: per-label first failures at known depths, miss_func exposure, forks, isolation."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("bfcl_eval")

from prefix_exec.envs.base import Environment, Session
from prefix_exec.envs.bfcl import (
    BfclEnvironment,
    api_classes,
)
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel, Rollout, ToolCall

BASE_0 = "multi_turn_base_0"  # GorillaFileSystem (workspace/document/{final,previous}_report.pdf) + TwitterAPI


@pytest.fixture(scope="module")
def env() -> BfclEnvironment:
    return BfclEnvironment()


@pytest.fixture(scope="module")
def unchecked() -> BfclEnvironment:
    """Without the information check, for tests that log in with the state's credentials (no user gave them)."""
    return BfclEnvironment(information=False)


def calls(*specs: tuple[str, dict[str, object]] | tuple[str, dict[str, object], int]) -> tuple[ToolCall, ...]:
    out = []
    for spec in specs:
        name, arguments = spec[0], spec[1]
        turn = spec[2] if len(spec) > 2 else 0  # type: ignore[misc]
        out.append(ToolCall(name, arguments, turn=turn))  # type: ignore[arg-type]
    return tuple(out)


def run(env: BfclEnvironment, task: str, actions: tuple[ToolCall, ...]) -> tuple[int, FailureLabel | None, str]:
    record = replay(Rollout("bfcl", task, "m", "x", actions, success=0), env)
    return record.fed, record.label, record.reason or ""


def test_protocols(env: BfclEnvironment) -> None:
    assert isinstance(env, Environment)
    assert isinstance(env.start(BASE_0), Session)
    with pytest.raises(KeyError):
        env.start("multi_turn_base_9999")


@pytest.mark.parametrize(
    ("actions", "fed", "label", "reason"),
    [
        # schema: an argument the doc does not declare
        (
            calls(("cd", {"folder": "document"}), ("mkdir", {"dir_name": "temp", "mode": 1})),
            2,
            FailureLabel.SCHEMA,
            "unknown argument",
        ),
        # schema: a required argument missing, and a wrong type
        (calls(("ls", {}), ("cd", {})), 2, FailureLabel.SCHEMA, "missing required argument 'folder'"),
        (calls(("ls", {}), ("ls", {"a": "yes"})), 2, FailureLabel.SCHEMA, "expected boolean, got str"),
        # schema: a tool of a class the task does not involve
        (calls(("ls", {}), ("ls", {}), ("add", {"a": 1, "b": 2})), 3, FailureLabel.SCHEMA, "belongs to MathAPI"),
        # dependency: a file that does not exist
        (
            calls(("cd", {"folder": "document"}), ("cat", {"file_name": "nope.txt"})),
            2,
            FailureLabel.DEPENDENCY,
            "No such file",
        ),
        (
            calls(
                ("cd", {"folder": "nowhere"}),
            ),
            1,
            FailureLabel.DEPENDENCY,
            "No such file or directory",
        ),
        # precondition: posting before authenticating
        (calls(("ls", {}), ("post_tweet", {"content": "hi"})), 2, FailureLabel.PRECONDITION, "not authenticated"),
        # state_consistency: creating what already exists
        (
            calls(("cd", {"folder": "document"}), ("mkdir", {"dir_name": "temp"}), ("mkdir", {"dir_name": "temp"})),
            3,
            FailureLabel.STATE_CONSISTENCY,
            "File exists",
        ),
    ],
)
def test_first_failure_label_and_depth(
    env: BfclEnvironment, actions: tuple[ToolCall, ...], fed: int, label: FailureLabel, reason: str
) -> None:
    got_fed, got_label, got_reason = run(env, BASE_0, actions)
    assert (got_fed, got_label) == (fed, label)
    assert reason in got_reason


def test_raised_exception_is_labelled_by_the_table(env: BfclEnvironment) -> None:
    # TravelAPI.get_flight_cost raises ValueError("No available route ...") for an unknown airport pair.
    arguments = {"travel_from": "RMS", "travel_to": "XXX", "travel_date": "2026-10-06", "travel_class": "economy"}
    fed, label, reason = run(env, "multi_turn_long_context_150", calls(("get_flight_cost", arguments)))
    assert (fed, label) == (1, FailureLabel.DEPENDENCY)
    assert "raised ValueError" in reason


def test_fully_executable_rollout(env: BfclEnvironment) -> None:
    record = replay(
        Rollout("bfcl", BASE_0, "m", "x", calls(("cd", {"folder": "document"}), ("ls", {"a": True})), success=1), env
    )
    assert record.executable
    assert record.fed == 3
    assert "final_report.pdf" in record.verdicts[1].result


def test_miss_func_holds_functions_back_until_their_turn(env: BfclEnvironment) -> None:
    # multi_turn_miss_func_0 reveals `sort` at turn 3.
    session = env.start("multi_turn_miss_func_0")
    for name, folder in (("cd", "document"),):
        assert session.step(ToolCall(name, {"folder": folder}, turn=0)).accepted
    early = session.step(ToolCall("sort", {"file_name": "final_report.pdf"}, turn=2))
    assert early.label is FailureLabel.SCHEMA
    assert "held back until turn 3" in early.reason
    assert session.step(ToolCall("sort", {"file_name": "final_report.pdf"}, turn=3)).accepted


def test_positional_and_keyword_arguments_give_the_same_result(env: BfclEnvironment) -> None:
    from prefix_exec.importers.bfcl import decode_result

    (positional,), _ = decode_result(["[cd('document')]"])
    (keyword,), _ = decode_result(["[cd(folder='document')]"])
    assert positional.arguments == keyword.arguments == {"folder": "document"}
    assert env.start(BASE_0).step(positional).result == env.start(BASE_0).step(keyword).result


def test_rejection_leaves_the_state_unchanged(env: BfclEnvironment) -> None:
    session = env.start(BASE_0)
    assert session.step(ToolCall("cd", {"folder": "document"})).accepted
    before = copy.deepcopy(api_classes.public_state(session.instances["GorillaFileSystem"]))
    assert not session.step(ToolCall("mv", {"source": "nope", "destination": "x"})).accepted
    assert api_classes.public_state(session.instances["GorillaFileSystem"]) == before
    assert session.step(ToolCall("pwd", {})).result == '{"current_working_directory": "/workspace/document"}'


def test_fork_is_independent(env: BfclEnvironment) -> None:
    session = env.start(BASE_0)
    session.step(ToolCall("cd", {"folder": "document"}))
    twin = session.fork()
    assert twin.step(ToolCall("mkdir", {"dir_name": "only_in_twin"})).accepted
    assert session.step(ToolCall("mkdir", {"dir_name": "only_in_twin"})).accepted  # not there in the original
    assert not twin.step(ToolCall("mkdir", {"dir_name": "only_in_twin"})).accepted


def test_sessions_are_isolated(env: BfclEnvironment) -> None:
    first = env.start(BASE_0)
    first.step(ToolCall("cd", {"folder": "document"}))
    first.step(ToolCall("mkdir", {"dir_name": "temp"}))
    second = env.start(BASE_0)
    second.step(ToolCall("cd", {"folder": "document"}))
    assert second.step(ToolCall("mkdir", {"dir_name": "temp"})).accepted


def test_long_context_loads_padding_and_leaks_nothing_into_bfcl_modules(env: BfclEnvironment) -> None:
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import long_context

    pristine = copy.deepcopy(long_context.CREDIT_CARD_EXTENSION)
    short = env.start("multi_turn_base_0").instances["GorillaFileSystem"]
    long = env.start("multi_turn_long_context_0").instances["GorillaFileSystem"]
    assert long.long_context
    assert not short.long_context
    document = long.root.contents["document"].contents
    assert len(document) > len(short.root.contents["document"].contents)  # populated with padding files
    # A travel session's cards are private copies: spending on one never reaches BFCL's module object.
    session = env.start("multi_turn_long_context_150")
    cards = session.instances["TravelAPI"].credit_card_list
    for card in cards.values():
        card["balance"] = -1
    assert long_context.CREDIT_CARD_EXTENSION == pristine


def test_polluted_long_context_constants_are_restored() -> None:
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import long_context

    key = next(iter(long_context.CREDIT_CARD_EXTENSION))
    original = long_context.CREDIT_CARD_EXTENSION[key]["balance"]
    long_context.CREDIT_CARD_EXTENSION[key]["balance"] = original - 1000  # what BFCL's own execution code can do
    try:
        assert "CREDIT_CARD_EXTENSION" in api_classes.restore_long_context()
        assert long_context.CREDIT_CARD_EXTENSION[key]["balance"] == original
    finally:
        long_context.CREDIT_CARD_EXTENSION[key]["balance"] = original


def test_soft_result_is_accepted_with_a_note(env: BfclEnvironment) -> None:
    session = env.start(BASE_0)
    verdict = session.step(ToolCall("authenticate_twitter", {"username": "nobody", "password": "wrong"}))
    assert verdict.accepted
    assert "soft: authentication_status=False" in verdict.notes


def test_no_tool_rollout_is_rejected_as_precondition(env: BfclEnvironment) -> None:
    record = replay(Rollout("bfcl", "multi_turn_miss_param_0", "m", "x", (), success=0), env)
    assert (record.T, record.fed, record.label) == (1, 1, FailureLabel.PRECONDITION)


def test_mutable_default_arguments_do_not_leak_between_rollouts(unchecked: BfclEnvironment) -> None:
    env = unchecked
    # post_tweet(tags=[], mentions=[]) stores its default lists in the tweet; `mention` extends them.
    login = ToolCall("authenticate_twitter", {"username": "analyst_pro", "password": "Kj8#mP9$vL2"})
    first = env.start(BASE_0)
    assert first.step(login).accepted
    posted = first.step(ToolCall("post_tweet", {"content": "one"}))
    assert first.step(ToolCall("mention", {"tweet_id": 3, "mentioned_usernames": ["@leak"]})).accepted, posted
    second = env.start(BASE_0)
    second.step(login)
    assert '"mentions": []' in second.step(ToolCall("post_tweet", {"content": "two"})).result


def test_the_api_never_mutates_the_rollouts_arguments(unchecked: BfclEnvironment) -> None:
    mentions: list[str] = []
    post = ToolCall("post_tweet", {"content": "x", "mentions": mentions})
    session = unchecked.start(BASE_0)
    session.step(ToolCall("authenticate_twitter", {"username": "analyst_pro", "password": "Kj8#mP9$vL2"}))
    assert session.step(post).accepted
    assert session.step(ToolCall("mention", {"tweet_id": 3, "mentioned_usernames": ["@a"]})).accepted
    assert mentions == []
    assert post.arguments["mentions"] == []


def test_a_failing_call_that_half_applied_is_rolled_back(env: BfclEnvironment) -> None:
    session = env.start(BASE_0)
    assert session.step(ToolCall("cd", {"folder": "document"})).accepted
    files = session.instances["GorillaFileSystem"]

    def half_applied_touch(file_name: str) -> None:
        files._current_dir._add_file(file_name)  # the state changes ...
        raise RuntimeError("disk full")  # ... and then the call fails

    files.touch = half_applied_touch
    verdict = session.step(ToolCall("touch", {"file_name": "ghost.txt"}))
    assert verdict.label is FailureLabel.SCHEMA
    assert "raised RuntimeError" in verdict.reason
    listing = session.step(ToolCall("ls", {})).result
    assert "ghost.txt" not in listing
    assert "final_report.pdf" in listing  # rebuilt: still in document/


def test_a_call_over_the_time_bound_is_refused_and_rolled_back() -> None:
    env = BfclEnvironment(time_limit=0.2)
    session = env.start(BASE_0)
    assert session.step(ToolCall("cd", {"folder": "document"})).accepted
    files = session.instances["GorillaFileSystem"]

    def endless(a: bool = False) -> None:
        files._current_dir._add_file("ghost.txt")
        while True:
            pass

    files.ls = endless
    verdict = session.step(ToolCall("ls", {}))
    assert verdict.label is FailureLabel.SCHEMA
    assert "time bound" in verdict.reason
    assert "ghost.txt" not in session.step(ToolCall("ls", {})).result


@pytest.mark.parametrize("task_id", ["multi_turn_base_14", "multi_turn_long_context_150"])  # MessageAPI, TravelAPI
def test_copies_draw_what_deep_copies_draw(env: BfclEnvironment, task_id: str) -> None:
    import random

    instances = env.start(task_id).instances
    generators = {
        name: i._random for name, i in instances.items() if isinstance(getattr(i, "_random", None), random.Random)
    }
    assert generators
    for generator in generators.values():
        generator.gauss(0.0, 1.0)  # a pending second normal draw (gauss_next) is part of the state too
    copied, oracle = api_classes.clone(instances), copy.deepcopy(instances)
    for name, generator in generators.items():
        mine, theirs = copied[name]._random, oracle[name]._random
        assert type(mine) is random.Random
        assert mine is not generator
        assert mine.getstate() == theirs.getstate() == generator.getstate()
        assert vars(mine) == vars(theirs)
        assert [mine.gauss(0.0, 1.0) for _ in range(3)] == [theirs.gauss(0.0, 1.0) for _ in range(3)]
        assert [mine.randint(10000, 99999) for _ in range(5)] == [theirs.randint(10000, 99999) for _ in range(5)]
