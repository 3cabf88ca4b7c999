"""Shared fixtures: the real benchmark logs in ../shared/data and the example tool set.

The logs are found as :func:`shared_folder.shared_data` says (beside the repository, beside the folder
holding a worktree, or at ``PREFIX_EXEC_SHARED_DATA``); they are read in place, never copied.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import shared_folder

# On 2 busy cores (two copies of the suite, other jobs) one example can take seconds: hypothesis's 200 ms
# deadline and its too-slow health check would fail correct tests. Timing is measured in benchmarks/ instead.
settings.register_profile("loaded", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("loaded")

SHARED_DATA = shared_folder.shared_data()
TICKETING = shared_folder.REPO / "examples" / "ticketing"

# litellm (tau2's user simulator) fetches a price list from the network on import unless told not to; the
# tests run with loopback only.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# ToolSandbox's 1032 scenarios take 15 to 50 s to build, and this process, every spawned worker and every Ray
# actor would build its own: they share one build through a file in this session's own temporary folder (set
# here, before anything starts, so all of them inherit it; two copies of the suite never share it).
_SESSION_TMP = Path(tempfile.mkdtemp(prefix="prefix-exec-tests-"))
os.environ.setdefault("PREFIX_EXEC_TOOLSANDBOX_SCENARIO_CACHE", str(_SESSION_TMP / "toolsandbox-scenarios.pickle"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(
            f"the shared fixtures are missing: expected {SHARED_DATA} beside the repository"
            " (or set PREFIX_EXEC_SHARED_DATA to the folder holding bfcl/, tau/ and toolsandbox/)"
        )
    return SHARED_DATA


@pytest.fixture(scope="session")
def ticketing() -> Path:
    return TICKETING


def pytest_sessionstart(session: pytest.Session) -> None:
    """Everything 'make setup' installs is required: a missing package fails the run, it never skips tests.

    Presence is checked without importing (tau2, ToolSandbox and Ray take 10 to 30 s to import, which a run of
    a few light modules, such as each mutant of benchmarks/mutation.py, would pay for nothing); a package that
    is present but fails to import fails the tests that import it, since no skip passes (below).
    """
    from importlib.util import find_spec

    from loguru import logger

    logger.disable("tau2")  # tau2 logs its data folder and registry at import; none of it is a test's output
    required = (
        "bfcl_eval",
        "tau2",
        "tool_sandbox",
        "ray",
        "litellm",
        "matplotlib",
        "openai",
        "inspect_ai",
        "inspect_evals",
        "mcp",
        "mcp_server_time",
    )
    missing = [m for m in required if not find_spec(m)]
    if missing:
        raise pytest.UsageError(f"not installed: {', '.join(missing)}; run 'make setup' first")


def _no_skips(report: pytest.CollectReport | pytest.TestReport) -> None:
    """The suite skips nothing (CI runs everything): a skip, such as an importorskip whose import failed, fails."""
    if report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped, and nothing may be: {report.longrepr}; run 'make setup'"


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    _no_skips(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    _no_skips(report)
    return report


#: Session fixtures that cost seconds to build, and the modules that use them. ``make test`` runs the suite on
#: pytest-xdist workers, each with its own session: a module's tests always stay on one worker (so its
#: module-scoped fixtures are built once), and the modules sharing one of these builds form one group too.
_INSPECT_LOG_USERS = ("tests/cli/test_score_inspect_bfcl.py", "tests/cli/test_score_inspect_tau.py")
SHARED_BUILDS = {
    "ray_session": (
        "tests/runner/test_run.py",
        "tests/runner/test_run_dir.py",
        "tests/runner/test_toolsandbox_run.py",
        "tests/runner/test_score_ray.py",
        "tests/runner/test_run_depth.py",
    ),
    "inspect_bfcl": _INSPECT_LOG_USERS,
    "inspect_tau": _INSPECT_LOG_USERS,
}
#: The groups that take tens of seconds start first, so that no worker is left alone with one at the end.
SLOW_FIRST = (
    "tests/drivers/test_toolsandbox.py",
    "tests/cli/test_score_inspect_bfcl.py",
    "tests/cli/test_score_inspect_generic.py",
    "tests/runner/test_run.py",
    "tests/drivers/test_tau.py",
    "tests/cli/test_score_tau_leaderboard.py",
    "tests/envs/test_tau_providers.py",
    "tests/test_plain_install.py",
)


def group_of(module: str) -> str:
    """The worker group of a test module (its path from the repository): the first module of the shared build
    it uses, else itself."""
    for modules in SHARED_BUILDS.values():
        if module in modules:
            return modules[0]
    return module


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Checks that :data:`SHARED_BUILDS` names every module using a shared build, and puts :data:`SLOW_FIRST`'s
    groups first (the order of the modules within each group, and of the tests within a module, is kept)."""
    for item in items:
        for fixture, modules in SHARED_BUILDS.items():
            if fixture in getattr(item, "fixturenames", ()) and _module(item.nodeid) not in modules:
                raise pytest.UsageError(f"{_module(item.nodeid)} uses {fixture}: add it to SHARED_BUILDS in {__file__}")
    rank = {group: index for index, group in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(group_of(_module(item.nodeid)), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``--numprocesses=auto``: one worker more than this process may use cores (``--maxprocesses`` caps it),
    since many end-to-end tests wait on a subprocess, a server or Ray with their core idle. On 2 quiet cores
    the whole suite took 286 s on 2 workers, 259 s on 3 and 286 s on 4 (one run each)."""
    # sched_getaffinity (the cores this process may run on: a taskset or cpuset may allow fewer) is Linux only
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    return len(usable) + 1


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scope scheduling, one scope per :func:`group_of`, in collection order (``pyproject.toml``
    passes ``--no-loadscope-reorder``, which keeps :data:`SLOW_FIRST` first), for the default ``--dist load``;
    any other ``--dist`` given is xdist's own. xdist's ``--dist loadgroup`` marks cannot do this under pytest 9:
    xdist 3.8 groups by renaming ``item._nodeid``, which pytest 9 no longer reads, so nothing is grouped."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(_module(nodeid))

    return GroupScheduling(config, log)


def pytest_sessionfinish(session: pytest.Session) -> None:
    shutil.rmtree(_SESSION_TMP, ignore_errors=True)
