"""Live ToolSandbox sessions: verdicts from ToolSandbox's own execution, forks, and hostile calls that run nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.envs.toolsandbox.calls import UnsafeCall, call_code, literal_arguments, parse_call_code
from prefix_exec.envs.toolsandbox.live import ToolSandboxEnvironment, ToolSandboxSession
from prefix_exec.envs.toolsandbox.sample import PAPER_SIZE, base_name, paper_sample, runnable, uses_rapid_api
from prefix_exec.trajectory import FailureLabel, ToolCall


@pytest.fixture(scope="module")
def env() -> ToolSandboxEnvironment:
    return ToolSandboxEnvironment()


def settings(session: ToolSandboxSession) -> dict[str, Any]:
    from tool_sandbox.common.execution_context import DatabaseNamespace

    return dict(session.context.get_database(DatabaseNamespace.SETTING).row(0, named=True))


def test_a_call_runs_on_the_sessions_own_context_and_a_fork_is_independent(env: ToolSandboxEnvironment) -> None:
    session = env.start("wifi_off")
    fork = session.fork()
    assert session.step(ToolCall(name="set_wifi_status", arguments={"on": False})).accepted
    assert settings(session)["wifi"] is False
    assert settings(fork)["wifi"] is True
    again = session.step(ToolCall(name="set_wifi_status", arguments={"on": False}))
    assert (again.accepted, again.label) == (False, FailureLabel.STATE_CONSISTENCY)
    assert fork.step(ToolCall(name="set_wifi_status", arguments={"on": False})).accepted  # the fork was untouched


def test_a_precondition_and_a_missing_argument_are_labelled_as_the_importer_labels_them(
    env: ToolSandboxEnvironment,
) -> None:
    session = env.start("send_message_with_contact_content_cellular_off")
    verdict = session.step(
        ToolCall(name="send_message_with_phone_number", arguments={"phone_number": "+12453344098", "content": "hi"})
    )
    assert verdict.label is FailureLabel.PRECONDITION
    assert "ConnectionError" in str(verdict.result)
    assert session.step(ToolCall(name="send_message_with_phone_number", arguments={})).label is FailureLabel.SCHEMA


CANARY = "prefix_exec_toolsandbox_canary"
ESCAPES = [
    "__import__('pathlib').Path('{canary}').touch()",
    "'); __import__('pathlib').Path('{canary}').touch(); ('",
    '"""\n__import__(\'pathlib\').Path(\'{canary}\').touch()\n"""',
    "x\n__import__('pathlib').Path('{canary}').touch()\n#",
    "().__class__.__base__.__subclasses__()",
]


def hostile_calls(canary: Path) -> list[ToolCall]:
    escapes = [e.replace("{canary}", str(canary)) for e in ESCAPES]
    calls = []
    for text in escapes:
        calls.append(ToolCall(name=text, arguments={}))  # a name that is code
        calls.append(ToolCall(name=f"set_wifi_status(**{{}}); {text}; print", arguments={}))
        calls.append(ToolCall(name="set_wifi_status", arguments={text: False}))  # a key that is code
        calls.append(ToolCall(name="search_contacts", arguments={"__class__": text}))  # a dunder key
        calls.append(ToolCall(name="set_wifi_status", arguments={"on": False, "x": text}))  # a value, wrong key
        calls.append(
            ToolCall(name="set_wifi_status", arguments={}, parse_error=f"Expecting value: {text}", raw=text)
        )  # arguments that are not JSON
        calls.append(ToolCall(name="set_wifi_status", call_id=f"x = 1\n{text}\n", arguments={"z": text}))  # an id
    calls.append(ToolCall(name="__import__", arguments={"name": "os"}))
    calls.append(ToolCall(name="print", arguments={"x": 1}))
    calls.append(ToolCall(name="set_wifi_status", arguments={"on": {"a": [1] * 3}, "__init__": float("nan")}))
    return calls


def test_hostile_names_ids_and_arguments_execute_nothing_and_are_schema_failures(
    env: ToolSandboxEnvironment,
    tmp_path: Path,
) -> None:
    canary = tmp_path / CANARY
    session = env.start("wifi_off")
    before = settings(session)
    for call in hostile_calls(canary):
        verdict = session.step(call)
        assert (verdict.accepted, verdict.label) == (False, FailureLabel.SCHEMA), (call, verdict.reason)
    assert not canary.exists()
    assert settings(session) == before  # not one call changed the device
    # Every row handed to the interpreter is our own code shape with literal arguments, or a comment.
    from tool_sandbox.common.execution_context import DatabaseNamespace

    rows = session.context.get_database(DatabaseNamespace.SANDBOX, get_all_history_snapshots=True).to_dicts()
    agent_rows = [r for r in rows if r["sender"] == "AGENT" and r["recipient"] == "EXECUTION_ENVIRONMENT"]
    assert len(agent_rows) == len(hostile_calls(canary))
    for row in agent_rows:
        parsed = parse_call_code(row["content"])
        if parsed is None:
            assert row["content"].startswith("# not executed")
            continue
        call_id, literal, name = parsed
        assert call_id.startswith("call_")
        assert name in ("set_wifi_status", "search_contacts")
        assert literal_arguments(literal) is not None


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "arguments",
    [{"x": float("inf")}, {"x": 10**2000}, {"x": object()}, {1: 2}, {"x": nested(40)}, ["not", "an", "object"]],
)
def test_arguments_that_are_not_bounded_json_values_are_refused(arguments: Any) -> None:
    with pytest.raises(UnsafeCall):
        call_code("call_1", "search_contacts", arguments)


def test_generated_code_reads_back_exactly() -> None:
    arguments = {"name": "a'\n\"b\\", "n": [1, 2.5, None, True], "d": {"k": "é"}}
    code = call_code("call_7", "search_contacts", arguments)
    assert parse_call_code(code) is not None
    call_id, literal, name = parse_call_code(code) or ("", "", "")
    assert (call_id, name, literal_arguments(literal)) == ("call_7", "search_contacts", arguments)
    assert json.loads(json.dumps(arguments)) == literal_arguments(literal)


def test_the_paper_sample_is_200_runnable_stratified_scenarios_without_rapid_api(
    env: ToolSandboxEnvironment,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAPID_API_KEY", raising=False)
    from prefix_exec.envs.toolsandbox.sample import rapid_api_tools

    tools = rapid_api_tools()
    bases = [name for name in env.scenarios if base_name(name) == name]
    assert len(env.scenarios) == 1032
    assert len(bases) == 129
    assert sum(uses_rapid_api(name, env.scenarios, tools) for name in bases) == 38
    pool = runnable(env.scenarios)
    assert len(pool) == 1032 - 38 * 8
    sample = paper_sample(env.scenarios)
    assert len(sample) == PAPER_SIZE == len(set(sample))
    assert set(sample) <= set(pool)
    assert sample == paper_sample(env.scenarios)  # deterministic
    monkeypatch.setenv("RAPID_API_KEY", "k")
    assert len(runnable(env.scenarios)) == 1032


def test_the_scenario_cache_builds_once_across_processes_and_rebuilds_a_foreign_or_damaged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from prefix_exec.envs.toolsandbox import live

    builds: list[int] = []

    def build() -> dict[str, Any]:
        builds.append(1)
        return {"wifi_off": len(builds)}

    cache = tmp_path / "cache" / "scenarios.pickle"
    monkeypatch.setattr(live, "_build_scenarios", build)
    monkeypatch.setenv(live.SCENARIO_CACHE_ENV, str(cache))

    def fresh() -> dict[str, Any]:
        monkeypatch.setattr(live, "_SCENARIOS", None)
        return live.named_scenarios()

    # Two starting together (each its own lock handle, as two processes have): one builds, the other waits and reads.
    found: list[dict[str, Any]] = []
    threads = [threading.Thread(target=lambda: found.append(live._cached_scenarios(cache))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)  # only a bound on a hang
        assert not thread.is_alive()
    assert found == [{"wifi_off": 1}, {"wifi_off": 1}]
    assert len(builds) == 1
    assert fresh() == {"wifi_off": 1}
    assert len(builds) == 1
    assert sorted(p.name for p in cache.parent.iterdir()) == ["scenarios.pickle", "scenarios.pickle.lock"]
    # A build for another ToolSandbox (another key) is not used, nor is a damaged file: both are built again.
    monkeypatch.setattr(live, "_scenario_key", lambda: "another ToolSandbox")
    assert fresh() == {"wifi_off": 2}
    cache.write_bytes(cache.read_bytes()[:10])
    assert fresh() == {"wifi_off": 3}
    assert fresh() == {"wifi_off": 3}
    # Unset, nothing is written and every process builds its own.
    monkeypatch.delenv(live.SCENARIO_CACHE_ENV)
    cache.unlink()
    assert fresh() == {"wifi_off": 4}
    assert not cache.exists()


def test_the_scenario_cache_and_run_files_are_never_written_through_a_planted_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old fixed temporary names (``scenarios.pickle.<pid>.tmp``, ``<file>.tmp``) and the lock file, each a
    symlink to another file: that file keeps its text, and the real file is written."""
    import os
    from types import SimpleNamespace

    from prefix_exec.drivers.toolsandbox_files import write_run_files
    from prefix_exec.envs.toolsandbox import live

    monkeypatch.setattr(live, "_build_scenarios", lambda: {"wifi_off": 1})
    monkeypatch.setattr(live, "_scenario_key", lambda: "k")
    cache = tmp_path / "cache" / "scenarios.pickle"
    cache.parent.mkdir()
    folder = tmp_path / "files"
    (folder / "trajectories" / "s").mkdir(parents=True)
    planted = [
        cache.with_name(f"{cache.name}.{os.getpid()}.tmp"),
        cache.with_name(f"{cache.name}.lock"),
        folder / "result_summary.json.tmp",
        folder / "trajectories" / "s" / "execution_context.json.tmp",
    ]
    victims = []
    for index, link in enumerate(planted):
        victim = tmp_path / f"victim{index}"
        victim.write_text("keep me\n", encoding="utf-8")
        link.symlink_to(victim)
        victims.append(victim)
    assert live._cached_scenarios(cache) == {"wifi_off": 1}
    scenario = SimpleNamespace(categories=["a"], max_messages=3)
    context = SimpleNamespace(to_dict=lambda serialize_console: {"ok": True})
    write_run_files(folder, "s", scenario, context, None, {"exception_type": "E", "traceback": "t"})
    assert [v.read_text(encoding="utf-8") for v in victims] == ["keep me\n"] * len(victims)
    assert json.loads((folder / "result_summary.json").read_text())["per_scenario_results"][0]["name"] == "s"
    assert json.loads((folder / "trajectories" / "s" / "execution_context.json").read_text()) == {"ok": True}
