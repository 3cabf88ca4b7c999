"""A minimal headless-Chromium driver over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
commands go to the browser's fd 3 and answers come from its fd 4, as NUL-terminated JSON. Standard library
only, so the browser test needs nothing beyond Debian's ``chromium`` package."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
)


def ensure_chromium() -> Path:
    """Debian's chromium at /usr/bin/chromium, installed with apt-get when missing (needs root)."""
    if CHROMIUM.exists():
        return CHROMIUM
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise RuntimeError("the browser test needs Debian's chromium: run 'apt-get install -y chromium' as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=600)
    subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env, timeout=1200)
    if not CHROMIUM.exists():
        raise RuntimeError("apt-get installed chromium but /usr/bin/chromium is missing")
    return CHROMIUM


def _high(fd: int) -> int:
    """``fd`` moved to a descriptor >= 10, so that wiring the child's fds 3 and 4 never clobbers one with
    the other, and dup2 never degenerates to a no-op that would leave close-on-exec set."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Browser:
    """One headless browser with one page. ``call`` sends a command and waits for its answer."""

    def __init__(self, user_data_dir: Path, width: int = 1280, height: int = 900) -> None:
        cmd_r, self._cmd = (_high(fd) for fd in os.pipe())
        self._resp, resp_w = (_high(fd) for fd in os.pipe())

        def wire() -> None:  # in the child: the protocol's fixed descriptors (dup2 makes them inheritable)
            os.dup2(cmd_r, 3)
            os.dup2(resp_w, 4)

        self.process = subprocess.Popen(
            [str(ensure_chromium()), *FLAGS, f"--user-data-dir={user_data_dir}", "about:blank"],
            preexec_fn=wire,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(cmd_r)
        os.close(resp_w)
        self._next = 0
        self._buffer = b""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._cmd, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._resp, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(raw)
        return parsed

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str, timeout: float = 20.0) -> None:
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("document.readyState === 'complete'", timeout)

    def wait_for(self, condition: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(f"Boolean({condition})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for {condition}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real mouse click (press and release) at the centre of the first element matching ``selector``."""
        box = self.evaluate(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)}); if (!el) return null;"
            " el.scrollIntoView({block: 'center'}); const r = el.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        if box is None:
            raise LookupError(f"nothing matches {selector}")
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y, button="left", clickCount=1)

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.call("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._cmd)
        os.close(self._resp)
