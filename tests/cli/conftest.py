"""Real inspect logs shared by the ``score inspect`` tests: each is made once per session by ``inspect eval``
(tests/fakes/inspect_logs.py), since a run costs seconds per sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.inspect_logs import BfclScript, bfcl_log, bfcl_plan, notes_log, tau_log, tau_variant_log


@pytest.fixture(scope="session")
def inspect_bfcl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BfclScript]:
    """A log of inspect_evals/bfcl (three multi-turn samples) and the plan that played it."""
    plan = bfcl_plan()
    return bfcl_log(tmp_path_factory.mktemp("inspect-bfcl"), plan), plan


@pytest.fixture(scope="session")
def inspect_tau(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log of inspect_evals/tau2_airline (one sample, fakes.inspect_logs.TAU_PLAN)."""
    return tau_log(tmp_path_factory.mktemp("inspect-tau"))


@pytest.fixture(scope="session")
def inspect_tau_variant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log of a policy variant of inspect_evals/tau2_airline (task ``tau2_airline_tighter_policy``, the same
    sample as :func:`inspect_tau`'s)."""
    return tau_variant_log(tmp_path_factory.mktemp("inspect-tau-variant"))


@pytest.fixture(scope="session")
def inspect_notes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Logs of two tasks of no benchmark (tests/fakes/inspect_notes_task.py): ``notes`` (tools, one sample
    without a call) and ``qa`` (no tool offered)."""
    folder = tmp_path_factory.mktemp("inspect-notes")
    return notes_log(folder / "notes", "notes"), notes_log(folder / "qa", "qa")


@pytest.fixture(scope="session")
def inspect_server_error(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log of the ``notes`` task whose first sample errored: the model server answered its requests with 500s."""
    return notes_log(tmp_path_factory.mktemp("inspect-500") / "notes", "notes", server_errors=3)
