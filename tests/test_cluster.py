"""The connection to Ray (prefix_exec.cluster): a RAY_ADDRESS that does not answer is the command's error at once,
not Ray's ten minutes of retries."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from prefix_exec.cluster import reach
from prefix_exec.errors import InputError

REPO = Path(__file__).resolve().parents[1]


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_an_address_nothing_listens_on_is_an_input_error() -> None:
    port = _closed_port()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(InputError, match=f"cannot reach the Ray cluster at RAY_ADDRESS={address} within 10 s"):
            reach(address)
    with pytest.raises(InputError, match="cannot reach"):
        reach("127.0.0.1:99999")  # no such port


def test_an_address_that_answers_passes_and_other_forms_are_left_to_ray() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        reach(f"127.0.0.1:{listener.getsockname()[1]}")
    for address in ("auto", "local", "ray://cluster"):
        reach(address)


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is the [ray] extra")
def test_score_on_a_ray_address_that_does_not_answer_exits_2_at_once(tmp_path: Path) -> None:
    ticketing = REPO / "examples" / "ticketing"
    env = {**os.environ, "RAY_ADDRESS": f"127.0.0.1:{_closed_port()}", "PYTHONPATH": str(REPO / "src")}
    command = [sys.executable, "-m", "prefix_exec", "score", "custom", "--tools", str(ticketing / "tools.yaml")]
    command += [str(ticketing / "rollouts.jsonl"), "--out", str(tmp_path / "out.jsonl"), "--launcher", "ray"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "prefix-exec: error: cannot reach the Ray cluster at RAY_ADDRESS=127.0.0.1:" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out.jsonl").exists()
