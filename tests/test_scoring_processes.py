"""The process transport of ``score --workers N`` (prefix_exec.scoring_processes): its pipes hold a megabyte, so
a worker holds its queue of transcripts (16 KB each) in the pipe while the reading process is busy. Oracle: the
kernel's own report of a pipe's size (F_GETPIPE_SZ)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from prefix_exec.scoring_processes import PIPE_BYTES, widen


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")
def test_a_pipe_is_widened_to_a_megabyte_or_the_systems_most() -> None:
    most = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    read, write = os.pipe()
    try:
        assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) == 65536  # the default: four transcripts
        widen(write)
        assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) == min(PIPE_BYTES, most)
        assert fcntl.fcntl(read, fcntl.F_GETPIPE_SZ) == min(PIPE_BYTES, most)  # one buffer for both ends
    finally:
        os.close(read)
        os.close(write)
