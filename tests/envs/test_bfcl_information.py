"""BFCL's information check: credentials must come from the user, a tool or a doc; BFCL's answers all pass."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval")

from prefix_exec.envs.bfcl import BfclEnvironment, load_task
from prefix_exec.importers.bfcl import ground_truth_rollouts, read_results
from prefix_exec.replay import replay, with_success
from prefix_exec.trajectory import FailureLabel, PrefixRecord, Rollout, ToolCall

TRAVEL = "multi_turn_miss_param_197"  # TravelAPI; turn 0 withholds the access token, turn 1 gives 'abc123xyz456'
PLACEHOLDERS = {
    "client_id": "<UNKNOWN>",
    "client_secret": "<UNKNOWN>",
    "refresh_token": "<UNKNOWN>",
    "grant_type": "read_write",
    "user_first_name": "Michael",
    "user_last_name": "Thompson",
}


@pytest.fixture(scope="module")
def env() -> BfclEnvironment:
    return BfclEnvironment()


def scored(rollout: Rollout, env: BfclEnvironment) -> PrefixRecord:
    """The prefix replay only (Y is not at issue here, so it is set to 0)."""
    return replay(with_success(rollout, 0), env)


def test_ground_truth_800_of_800_fully_executable_with_the_check_on(env: BfclEnvironment) -> None:
    assert env.information
    records = [scored(rollout, env) for rollout in ground_truth_rollouts()]
    assert len(records) == 800
    assert [r.task_id for r in records if not r.executable] == []


def test_a_credential_nobody_gave_is_an_information_failure(env: BfclEnvironment) -> None:
    session = env.start(TRAVEL)
    token = session.instances["TravelAPI"].access_token
    verdict = session.step(ToolCall("authenticate_travel", PLACEHOLDERS, turn=0))
    assert not verdict.accepted
    assert verdict.label is FailureLabel.INFORMATION
    assert "client_id='<UNKNOWN>'" in (verdict.reason or "")
    assert "grant_type" not in (verdict.reason or "")
    # the call ran in the API (it sets a new token); rejected, it leaves the state as it was
    assert session.instances["TravelAPI"].access_token == token
    # the token the user gives in turn 1 is available from then on, not before
    budget = {"access_token": "abc123xyz456", "budget_limit": 100.0}
    assert env.start(TRAVEL).step(ToolCall("set_budget_limit", budget, turn=0)).label is FailureLabel.INFORMATION
    assert env.start(TRAVEL).step(ToolCall("set_budget_limit", budget, turn=1)).accepted


def test_a_token_from_a_tool_result_is_available(env: BfclEnvironment) -> None:
    # BFCL's answer authenticates in turn 0, then passes the token the call returned ('251675', seeded)
    task = load_task("multi_turn_base_161")
    assert "251675" in task.ground_truth[1][0]
    assert not any("251675" in q for q in task.questions)
    assert scored(next(ground_truth_rollouts([task.id])), env).executable


def test_a_soft_failed_login_is_not_checked(env: BfclEnvironment) -> None:
    verdict = env.start("multi_turn_base_0").step(
        ToolCall("authenticate_twitter", {"username": "nobody", "password": "wrong"})
    )
    assert verdict.accepted
    assert "soft: authentication_status=False" in verdict.notes


def test_an_api_failure_outranks_the_information_check(env: BfclEnvironment) -> None:
    # an unseen token that the API also refuses: the API's label, earlier in the tie-break order
    verdict = env.start(TRAVEL).step(ToolCall("set_budget_limit", {"access_token": "zzz", "budget_limit": 1.0}))
    assert not verdict.accepted
    assert verdict.label is not FailureLabel.INFORMATION


def test_off_switch_and_forks(env: BfclEnvironment) -> None:
    call = ToolCall("authenticate_travel", PLACEHOLDERS, turn=0)
    assert BfclEnvironment(information=False).start(TRAVEL).step(call).accepted
    assert env.start(TRAVEL, strict=False).step(call).accepted  # BFCL's own execution makes no such check
    session = env.start(TRAVEL)
    assert session.step(ToolCall("list_all_airports", {}, turn=1)).accepted  # turn 1's message is read
    fork = session.fork()
    budget = ToolCall("set_budget_limit", {"access_token": "abc123xyz456", "budget_limit": 1.0}, turn=1)
    assert fork.step(budget).accepted
    assert session.fork().step(budget).accepted


@pytest.mark.parametrize(
    ("folder", "task_id", "fed"),
    [
        ("glyphh-ada-1.1", "multi_turn_miss_param_197", 1),
        ("glyphh-ada-1.1", "multi_turn_miss_param_164", 6),
        ("airev-agent-0.8b", "multi_turn_miss_param_163", 1),
    ],
)
def test_real_information_failures(
    shared_data: Path, env: BfclEnvironment, folder: str, task_id: str, fed: int
) -> None:
    """Checked by hand (docs/bfcl.md): the agent authenticated with credentials the user never gave."""
    rollout = next(r for r in read_results([shared_data / "bfcl" / folder], only={task_id}) if isinstance(r, Rollout))
    record = scored(rollout, env)
    assert (record.fed, record.label) == (fed, FailureLabel.INFORMATION)
    assert rollout.actions[fed - 1].name == "authenticate_travel"
    unchecked = scored(rollout, BfclEnvironment(information=False))
    assert unchecked.fed > fed  # without the check the made-up credentials are executable


def test_glyphh_labels_with_the_check_on(shared_data: Path, env: BfclEnvironment) -> None:
    records = [
        scored(r, env) for r in read_results([shared_data / "bfcl" / "glyphh-ada-1.1"]) if isinstance(r, Rollout)
    ]
    information = sorted(r.task_id for r in records if r.label is FailureLabel.INFORMATION)
    assert information == ["multi_turn_miss_func_171", "multi_turn_miss_param_164", "multi_turn_miss_param_197"]


def test_every_session_starts_from_its_own_copy_of_the_function_docs(env: BfclEnvironment) -> None:
    import json

    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    from prefix_exec.envs.bfcl.tasks import data_dir

    task = load_task(TRAVEL)
    expected = []  # read from BFCL's doc files here, as the check must have them
    for class_name in task.involved_classes:
        path = data_dir() / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
        lines = path.read_text(encoding="utf-8").splitlines()
        expected += [json.dumps(json.loads(line)).lower().replace("#", " ") for line in lines if line.strip()]
    first = env.start(TRAVEL)
    assert first.evidence is not None
    assert first.evidence.texts == expected
    first.evidence.add("zz-only-in-the-first-session")
    second = env.start(TRAVEL)
    assert second.evidence is not None
    assert second.evidence.texts == expected
