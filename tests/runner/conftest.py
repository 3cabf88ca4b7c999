"""Shared by the runner tests: the scripted OpenAI-protocol server playing the ticketing example, and one Ray
instance per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fakes import ticketing_agent
from fakes.openai_server import ScriptedServer


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(ticketing_agent.respond) as s:
        yield s


#: Settings of tests/conftest.py that Ray's workers must see too (the shared ToolSandbox scenario build).
_SHARED_ENV = {name: os.environ[name] for name in ("PREFIX_EXEC_TOOLSANDBOX_SCENARIO_CACHE",) if name in os.environ}


@dataclass(frozen=True)
class RaySession:
    """The one local Ray instance the runner tests share (starting Ray costs 5 to 20 s each time).

    ``die_once`` is the marker path the dying-worker hook (test_run_dir) reads from its environment: Ray's
    workers get their environment when the instance starts, so it is fixed here, once per session.
    """

    ray: Any
    die_once: Path


@pytest.fixture(scope="session")
def ray_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaySession]:
    import ray

    die_once = tmp_path_factory.mktemp("ray") / "died"
    # A local instance of this session's own: no address (RAY_ADDRESS is ignored), so two copies of the suite
    # never share a cluster, and Ray picks free ports.
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PREFIX_EXEC_TEST_DIE_ONCE": str(die_once), **_SHARED_ENV}},
    )
    try:
        yield RaySession(ray, die_once)
    finally:
        ray.shutdown()
