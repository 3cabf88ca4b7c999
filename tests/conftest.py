"""Shared fixtures: the real benchmark logs in ../shared/data and the example tool set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
TICKETING = REPO / "examples" / "ticketing"

# litellm (tau2's user simulator) fetches a price list from the network on import unless told not to; the
# tests run with loopback only.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared fixtures are missing: expected {SHARED_DATA} beside the repository")
    return SHARED_DATA


@pytest.fixture(scope="session")
def ticketing() -> Path:
    return TICKETING


def pytest_sessionstart(session: pytest.Session) -> None:
    """Everything 'make setup' installs is required: a missing package fails the run, it never skips tests."""
    import importlib

    missing = []
    for module in ("bfcl_eval", "tau2", "tool_sandbox", "ray", "litellm", "matplotlib", "openai"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{module} ({exc})")
    if missing:
        raise pytest.UsageError(f"not installed: {', '.join(missing)}; run 'make setup' first")
