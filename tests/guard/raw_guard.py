"""The guard as a subprocess spoken to line by line, for the hostile tests: raw bytes in, JSON-RPC lines out.

Every read has a deadline (a hung guard fails the test, never hangs it), and the guard's stderr goes to a file
the test can read for tracebacks.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: Longest wait for one line from the guard, seconds (generous: 2 busy cores, the guard imports the MCP SDK).
READ_S = 60.0


class RawGuard:
    """``prefix-exec guard ARGS -- SERVER`` with pipes; use as a context manager (the process is killed at exit)."""

    def __init__(self, guard_args: list[str], server: list[str], stderr: Path) -> None:
        self.stderr_path = stderr
        self._stderr = stderr.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "prefix_exec", "guard", *guard_args, "--", *server],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=dict(os.environ),
        )
        self._buffer = b""

    def __enter__(self) -> RawGuard:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self._stderr.close()

    def send(self, line: str | bytes) -> None:
        assert self.process.stdin is not None
        data = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def request(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return the response to it (other lines, notifications, are passed over)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message))
        return self.response(request_id)

    def response(self, request_id: int | str | None) -> dict[str, Any]:
        while True:
            message = self.receive()
            if message is None:
                raise AssertionError(f"the guard closed its stdout before answering {request_id!r}")
            if "method" not in message and message.get("id") == request_id:
                return message

    def initialize(self) -> dict[str, Any]:
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        answer = self.request(0, "initialize", params)
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return answer

    def receive(self, timeout: float = READ_S) -> dict[str, Any] | None:
        """The next line as JSON, or None at the end of the guard's stdout."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line from the guard within {timeout} s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    def ends_within(self, seconds: float) -> int:
        """The exit code, once stdout closed and the process ended within ``seconds``."""
        assert self.receive(seconds) is None, "the guard wrote more than expected"
        return self.process.wait(timeout=seconds)

    def close(self, seconds: float = 60) -> int:
        """Close the guard's stdin (the client is done) and return its exit code, bounded by ``seconds``."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.ends_within(seconds)

    def terminate(self) -> None:
        self.process.send_signal(signal.SIGTERM)

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")
