"""The BFCL multi-turn driver end to end: scripted ground-truth play through the official client."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from fakes.bfcl_agent import BfclScript
from fakes.openai_server import ScriptedServer, text_message, tool_message
from prefix_exec.agents import METHODS, Agent, AgentSettings
from prefix_exec.drivers.base import to_rollout
from prefix_exec.drivers.bfcl import REVEAL_MESSAGE, BfclDriver, questions, reveal_message
from prefix_exec.envs.bfcl import FinalSuccess, load_task
from prefix_exec.llm import ChatBackend, EndpointConfig
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel

TASKS = ["multi_turn_base_0", "multi_turn_miss_func_1", "multi_turn_long_context_2", "multi_turn_miss_param_3"]


@pytest.fixture(scope="module")
def server() -> Any:
    with ScriptedServer(BfclScript(TASKS)) as s:
        yield s


def run(server: ScriptedServer, method: str, task_id: str, settings: AgentSettings | None = None) -> Any:
    driver = BfclDriver()
    backend = ChatBackend(EndpointConfig(model="m", base_url=server.base_url, api_key_env="", max_retries=0))
    agent = Agent(method, backend, settings=settings or AgentSettings())
    outcome = driver.play(agent, task_id)
    rollout = to_rollout(outcome, dataset="bfcl", task_id=task_id, model="m", method=method, trial=0)
    return rollout, replay(rollout, driver.environment())


@pytest.mark.parametrize("method", METHODS)
def test_ground_truth_play_is_executable_and_successful_for_every_variant(server: ScriptedServer, method: str) -> None:
    for task_id in TASKS:
        rollout, record = run(server, method, task_id)
        turns, _ = questions(load_task(task_id).category)[task_id]
        assert rollout.metadata["turns"] == len(turns)
        assert record.executable, (task_id, record.reason)
        assert rollout.success == 1, rollout.metadata.get("success_reason")
        assert {a.turn for a in rollout.actions} <= set(range(len(turns)))
        assert all(a.call_id and a.call_id.startswith(f"t{a.turn}.s") for a in rollout.actions)


def test_miss_func_reveals_the_held_back_tool_at_its_turn(server: ScriptedServer) -> None:
    task_id = "multi_turn_miss_func_1"
    _, held = questions("miss_func")[task_id]
    ((turn, names),) = held.items()
    before = len(server.requests)
    rollout, _ = run(server, "react", task_id)
    requests = server.requests[before:]
    assert reveal_message() == REVEAL_MESSAGE
    for body in requests:
        users = [m for m in body["messages"] if m["role"] == "user"]
        offered = {t["function"]["name"] for t in body["tools"]}
        revealed = len(users) > int(turn)
        assert set(names) <= offered if revealed else not set(names) & offered
        if revealed:
            assert users[int(turn)]["content"] == REVEAL_MESSAGE
    assert Counter(c.role for c in rollout.cost) == Counter({"executor": len(requests)})


def bfcl_convert_to_tool() -> Any:
    """bfcl_eval's own ``convert_to_tool``. Its module imports parsers for languages BFCL's multi-turn
    categories never use (tree_sitter) and a retry library; those absent here are stubbed for the import."""
    import importlib
    import sys
    import types

    class Anything:
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

        def __getattr__(self, name: str) -> Any:
            return lambda *args, **kwargs: None

    stubs: dict[str, types.ModuleType] = {}
    for name in ("tree_sitter", "tree_sitter_java", "tree_sitter_javascript", "tenacity"):
        if importlib.util.find_spec(name) is None:
            module = types.ModuleType(name)
            module.Language = module.Parser = Anything  # type: ignore[attr-defined]
            module.language = lambda: None  # type: ignore[attr-defined]
            for attr in ("retry", "retry_if_exception_message", "retry_if_exception_type", "wait_random_exponential"):
                setattr(module, attr, lambda *args, **kwargs: lambda f: f)
            stubs[name] = module
    before = set(sys.modules)
    sys.modules.update(stubs)
    try:
        utils = importlib.import_module("bfcl_eval.model_handler.utils")
        return utils.convert_to_tool
    finally:
        for name in set(sys.modules) - before:
            if name in stubs or name.startswith("bfcl_eval.model_handler"):
                del sys.modules[name]


def test_tools_are_exactly_bfcls_openai_conversion_for_every_tool_of_every_class() -> None:
    import json

    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI

    from prefix_exec.drivers.bfcl import tool_schema
    from prefix_exec.envs.bfcl.tasks import DOC_FILES, function_docs

    convert = bfcl_convert_to_tool()
    compared = 0
    for class_name in DOC_FILES:
        docs = [json.loads(json.dumps(doc)) for doc in function_docs(class_name).values()]
        theirs = convert(docs, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
        ours = [tool_schema(doc, hint=False).to_openai() for doc in docs]
        for a, b in zip(theirs, ours, strict=True):
            assert json.dumps(a) == json.dumps(b), a["function"]["name"]  # same content and key order
            compared += 1
    assert compared == 128
    mean = tool_schema(function_docs("MathAPI")["mean"], hint=False).to_openai()["function"]
    assert mean["parameters"]["properties"]["numbers"]["items"] == {"type": "number"}  # no float note on items
    assert "response" in mean


def test_a_failing_call_fixes_fed_and_the_rest_still_runs() -> None:
    script = BfclScript(["multi_turn_base_0"])

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        steps = [m for m in body["messages"] if m["role"] == "assistant"]
        if not steps and len([m for m in body["messages"] if m["role"] == "user"]) == 1:
            return tool_message([("cd", {"folder": "no_such_folder"})])
        return script(body)

    with ScriptedServer(respond) as server:
        rollout, record = run(server, "react", "multi_turn_base_0")
    assert rollout.actions[0].name == "cd"
    assert rollout.actions[0].observation.error
    assert (record.fed, record.label) == (1, FailureLabel.DEPENDENCY)
    assert len(rollout.actions) > 1  # the agent went on after the failure (recovery is kept for reports)


def test_grid_with_a_bfcl_dataset(server: ScriptedServer, tmp_path: Any) -> None:
    from prefix_exec.records.codec import read_records
    from prefix_exec.runner.run_dir import run_grid

    grid = tmp_path / "grid.toml"
    grid.write_text(
        f"""
methods = ["react", "dual-loop"]
[[datasets]]
name = "bfcl"
kind = "bfcl"
tasks = {TASKS[:2]!r}
[[models]]
model = "m"
base_url = "{server.base_url}"
api_key_env = ""
""".replace("'", '"')
    )
    report = run_grid(grid, tmp_path / "run", max_concurrency=2)
    records = list(read_records(tmp_path / "run" / "records.jsonl"))
    assert report.written == 4
    assert all(r.executable and r.success == 1 for r in records)


def test_the_tools_offered_per_turn_are_bfcls(server: ScriptedServer) -> None:
    """BFCL's dataset loader adds its Python hint to the functions offered from the start, not to miss_func's
    held-back ones (set aside before it runs); the tools sent are BFCL's conversion of exactly those docs."""
    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.utils import load_dataset_entry

    convert = bfcl_convert_to_tool()
    task_id = "multi_turn_miss_func_1"
    (entry,) = [e for e in load_dataset_entry("multi_turn_miss_func") if e["id"] == task_id]
    before = len(server.requests)
    run(server, "react", task_id)
    sent = [b["tools"] for b in server.requests[before:]]
    first = convert(entry["function"], GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
    revealed = convert(entry["missed_function"]["2"], GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
    assert sent[0] == first
    assert sent[-1] == first + revealed
    assert "Python 3 syntax" in first[0]["function"]["description"]
    assert "Python 3 syntax" not in revealed[0]["function"]["description"]


def always_pwd_after(script: Any, turn: int, *, then_stop_at: int | None = None) -> Any:
    """Ground-truth play, except that in ``turn`` the model keeps calling ``pwd`` (answering in text at
    step ``then_stop_at``, 0-based, if given)."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        if len(users) - 1 != turn:
            return script(body)
        steps = sum(1 for m in messages[users[-1] :] if m["role"] == "assistant")
        if then_stop_at is not None and steps >= then_stop_at:
            return text_message("Done.")
        return tool_message([("pwd", {})])

    return respond


def turn_requests(server: ScriptedServer, before: int, turn: int) -> int:
    return sum(1 for b in server.requests[before:] if sum(m["role"] == "user" for m in b["messages"]) == turn + 1)


def test_a_turn_past_bfcls_step_limit_force_quits_the_task_with_y_0() -> None:
    from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT

    task_id = "multi_turn_base_0"
    with ScriptedServer(always_pwd_after(BfclScript([task_id]), 0)) as server:
        rollout, record = run(server, "react", task_id)
        # BFCL force-quits once its count of executed steps exceeds the limit: limit + 1 model calls.
        assert len(server.requests) == turn_requests(server, 0, 0) == MAXIMUM_STEP_LIMIT + 1
    assert rollout.success == 0
    assert rollout.metadata["turns"] == 1
    assert rollout.metadata["success_reason"].startswith("[force_terminated]")
    assert rollout.metadata["force_terminated"] is True
    assert rollout.metadata["force_quit_turn"] == 0
    assert record.executable  # every call ran: validity and Y are separate


@pytest.mark.parametrize(("stop_at", "quits"), [(5, False), (6, True)])
def test_the_grids_max_steps_is_bfcls_step_limit(stop_at: int, quits: bool) -> None:
    """max_steps = 5: five tool-calling steps then a text answer is a normal turn; six force-quit."""
    task_id = "multi_turn_base_0"  # its ground truth needs at most 4 calls (5 model calls) per turn
    with ScriptedServer(always_pwd_after(BfclScript([task_id]), 0, then_stop_at=stop_at)) as server:
        rollout, _ = run(server, "react", task_id, AgentSettings(max_steps=5))
        assert turn_requests(server, 0, 0) == 6
    assert ("force_quit_turn" in rollout.metadata) is quits
    assert (rollout.metadata["turns"] == 1) is quits


def test_a_force_quit_in_the_last_turn_is_scored_normally_as_bfcl_does() -> None:
    task_id = "multi_turn_base_0"
    last = len(questions("base")[task_id][0]) - 1
    script = BfclScript([task_id])

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        answer = script(body)
        if len(users) - 1 == last and "tool_calls" not in answer:
            return tool_message([("pwd", {})])  # the turn's ground truth, then pwd forever
        return answer

    with ScriptedServer(respond) as server:
        rollout, _ = run(server, "react", task_id, AgentSettings(max_steps=5))
    assert rollout.metadata["force_quit_turn"] == last
    assert rollout.metadata["force_terminated"] is False
    assert rollout.metadata["turns"] == last + 1
    assert rollout.success == 1


def early_mv(body: dict[str, Any]) -> dict[str, Any]:
    """multi_turn_miss_func_1 with ``mv`` called in turn 1, before its reveal; retried at the reveal only if
    the first try failed (an error or the guard's rejection)."""
    messages = body["messages"]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    turn, steps = len(users) - 1, sum(1 for m in messages[users[-1] :] if m["role"] == "assistant")
    mv = ("mv", {"source": "log.txt", "destination": "archive"})
    plan: list[Any] = {
        0: [("ls", {"a": True})],
        1: [("cd", {"folder": "workspace"}), mv],
        3: [("cd", {"folder": "archive"}), ("grep", {"file_name": "log.txt", "pattern": "Error"})],
        4: [("tail", {"file_name": "log.txt", "lines": 20})],
    }.get(turn, [])
    if turn == 2:
        last = str([m for m in messages if m["role"] == "tool"][-1]["content"]).lower()
        failed = "error" in last or "not executed" in last
        plan = [mv] if failed else []
    return tool_message([plan[steps]]) if steps < len(plan) else text_message("Done.")


def test_a_held_back_tool_runs_live_as_in_bfcl_and_only_scoring_and_the_guard_reject_it() -> None:
    task_id = "multi_turn_miss_func_1"
    with ScriptedServer(early_mv) as server:
        react, record = run(server, "react", task_id)
        guarded, guarded_record = run(server, "guarded-react", task_id)
    mv = next(a for a in react.actions if a.name == "mv")
    assert mv.turn == 1
    assert mv.observation is not None
    assert not mv.observation.error
    assert "held back" not in str(mv.observation.content)
    assert "moved to" in str(mv.observation.content)
    # BFCL's loop gives Y = 0: the model did not call again at the reveal turn (empty_turn_model_response).
    assert react.success == 0
    assert "[empty_turn_model_response]" in react.metadata["success_reason"]
    assert react.metadata["live_session"] == "bfcl"
    assert guarded.metadata["live_session"] == "strict"
    assert (record.fed, record.label) == (react.actions.index(mv) + 1, FailureLabel.SCHEMA)
    assert "held back" in (record.reason or "")
    # guarded-react: its guard stops the early mv; the model retries at the reveal and succeeds.
    assert guarded.metadata["guard_rejections"] == 1
    assert guarded.success == 1
    assert guarded_record.executable


def test_planners_get_the_live_state_of_each_turn() -> None:
    task_id = "multi_turn_miss_func_1"
    with ScriptedServer(BfclScript([task_id])) as server:
        run(server, "dual-loop", task_id)
        states = [
            str(b["messages"][1]["content"]).split("State:\n", 1)[1]
            for b in server.requests
            if str(b["messages"][0]["content"]).startswith("You are the PLANNER")
        ]
    assert len(states) == 5
    assert len(set(states)) > 1
    assert '"cwd":"/alex"' in states[0]
    assert '"cwd":"/alex/workspace/archive"' in states[4]
    assert all(s.startswith('{"GorillaFileSystem":') and len(s) <= 2000 for s in states)


def test_malformed_call_json_continues_the_turn_unlike_bfcl_and_y_skips_only_that_call() -> None:
    """Documented deviation: BFCL ends the turn on an undecodable step and its evaluation skips the step;
    our loop hands the error back, runs the step's other calls and continues the turn."""
    task_id = "multi_turn_base_0"
    script = BfclScript([task_id])

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        if len([m for m in messages if m["role"] == "user"]) == 1 and not any(
            m["role"] == "assistant" for m in messages
        ):
            return tool_message([("cd", {"folder": "document"}), ("ls", "{not json")])  # the first step, and junk
        return script(body)

    with ScriptedServer(respond) as server:
        rollout, record = run(server, "react", task_id)
        turn_0 = turn_requests(server, 0, 0)
    first, bad = rollout.actions[0], rollout.actions[1]
    assert first.name == "cd"
    assert not first.observation.error  # ran live
    assert bad.parse_error is not None
    assert bad.observation.error
    assert turn_0 > 1
    assert rollout.metadata["turns"] == len(questions("base")[task_id][0])  # the turn went on
    assert (record.fed, record.label) == (2, FailureLabel.SCHEMA)
    # Y counts the cd that ran (BFCL's rule for its own logs, skipping the whole step, would not).
    assert rollout.metadata["loop"] == "prefix_exec"
    assert rollout.success == 1
    checker, task = FinalSuccess(), load_task(task_id)
    assert checker.check_rollout(task, rollout).success == 1
    assert checker.check(task, rollout.actions, rollout.metadata["turns"]).success == 0
