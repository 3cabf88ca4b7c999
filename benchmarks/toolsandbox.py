"""Time the ToolSandbox driver per scenario against ToolSandbox's own ``Scenario.play``, same agent and user.

Both sides play the same scenarios with the same scripted answers from the loopback server
(tests/fakes/openai_server.py): the agent's tool calls and final answer and the simulated user's
``end_conversation`` call. Each side pays for its whole scenario as a user of it would:

- baseline: ToolSandbox's ``Scenario.play`` with its ``OpenAIAPIAgent`` and ``OpenAIAPIUser`` (clients pointed at
  the server) and ``ExecutionEnvironment``, then ``Scenario.evaluation.evaluate``, as its CLI does;
- prefix-exec: ``ToolSandboxDriver.play`` with the ``react`` variant (the same loop, with our agent role, our
  code building and checks, ToolSandbox's run files written) plus scoring the rollout by live replay.

ToolSandbox's import and scenario build are paid once before either side is timed. The server's own time is
subtracted from both. Prints per-scenario medians over ``--repeats`` and, as its last line, the overhead ratio
prefix-exec / baseline. Run: .venv/bin/python benchmarks/toolsandbox.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fakes.openai_server import ScriptedServer  # noqa: E402
from fakes.toolsandbox_agent import ToolSandboxScript  # noqa: E402
from prefix_exec.agents import Agent  # noqa: E402
from prefix_exec.drivers.base import to_rollout  # noqa: E402
from prefix_exec.drivers.toolsandbox import ToolSandboxDriver  # noqa: E402
from prefix_exec.llm import ChatBackend, EndpointConfig  # noqa: E402
from prefix_exec.replay import replay  # noqa: E402

SCRIPT = {
    "wifi_off": [[("set_wifi_status", {"on": False})], "Wifi is turned off"],
    "cellular_off": [[("set_cellular_service_status", {"on": False})], "Cellular service is turned off"],
    "get_cellular": [[("get_cellular_service_status", {})], "Cellular service is on"],
    "search_phone_number_with_name": [[("search_contacts", {"name": "Fredrik Thordendal"})], "+12453344098"],
}


def baseline(name: str, server: ScriptedServer) -> None:
    from openai import OpenAI
    from tool_sandbox.common.execution_context import RoleType
    from tool_sandbox.roles.execution_environment import ExecutionEnvironment
    from tool_sandbox.roles.openai_api_agent import OpenAIAPIAgent
    from tool_sandbox.roles.openai_api_user import OpenAIAPIUser

    from prefix_exec.envs.toolsandbox.live import named_scenarios

    roles: dict[Any, Any] = {}
    for role_type, cls, model in (
        (RoleType.AGENT, OpenAIAPIAgent, "agent"),
        (RoleType.USER, OpenAIAPIUser, "user-sim"),
    ):
        role = cls.__new__(cls)  # their __init__ builds a client for OpenAI's URL, which needs a key
        role.model_name = model
        role.openai_client = OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        roles[role_type] = role
    roles[RoleType.EXECUTION_ENVIRONMENT] = ExecutionEnvironment()
    scenario = named_scenarios()[name]
    context = scenario.play(roles, name)
    scenario.evaluation.evaluate(execution_context=context, max_turn_count=scenario.max_messages)


def ours(name: str, driver: ToolSandboxDriver, server: ScriptedServer) -> None:
    endpoint = EndpointConfig(model="agent", base_url=server.base_url, api_key_env="", max_retries=0)
    outcome = driver.play(Agent("react", ChatBackend(endpoint)), name)
    rollout = to_rollout(outcome, dataset="toolsandbox", task_id=name, model="agent", method="react", trial=0)
    replay(rollout, driver.env_for(rollout))


def timed(work: Any, server: ScriptedServer) -> float:
    busy = server.busy_s
    started = time.perf_counter()
    work()
    return time.perf_counter() - started - (server.busy_s - busy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    script = ToolSandboxScript(SCRIPT)
    with ScriptedServer(script) as server, tempfile.TemporaryDirectory() as files:
        user = EndpointConfig(model="user-sim", base_url=server.base_url, api_key_env="", max_retries=0)
        started = time.perf_counter()
        driver = ToolSandboxDriver(user=user, files=Path(files))
        print(f"ToolSandbox import and scenario build (once per process): {time.perf_counter() - started:.1f} s")
        totals = {"baseline": 0.0, "prefix-exec": 0.0}
        for name in SCRIPT:
            script.scenario = name
            base = [timed(lambda name=name: baseline(name, server), server) for _ in range(args.repeats)]
            mine = [timed(lambda name=name: ours(name, driver, server), server) for _ in range(args.repeats)]
            b, m = statistics.median(base), statistics.median(mine)
            totals["baseline"] += b
            totals["prefix-exec"] += m
            print(f"{name:40s} Scenario.play {b * 1000:8.1f} ms   driver {m * 1000:8.1f} ms   ratio {m / b:5.2f}")
        ratio = totals["prefix-exec"] / totals["baseline"]
        print(f"per-scenario overhead ratio prefix-exec / ToolSandbox Scenario.play: {ratio:.2f}")


if __name__ == "__main__":
    main()
