"""Where work runs beyond this process, as ``run`` and ``score`` both offer it: the launchers (:data:`LAUNCHERS`:
``local`` processes or threads, or ``ray`` actors), the connection to Ray (:func:`connect_ray`) and how a Ray
error is said (:func:`ray_message`).

Below both users: the runner's launchers (:mod:`prefix_exec.runner.launchers`) and the scoring pool's Ray actors
(:mod:`prefix_exec.scoring.pool.ray`) import it, so neither imports the other.
"""

from __future__ import annotations

import os
import re
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.extras import install_hint

#: The launchers ``run --launcher`` and ``score --launcher`` offer.
LAUNCHERS = ("local", "ray")
#: The terminal colour codes Ray puts around an actor's name in its errors.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def connect_ray() -> Any:
    """The ``ray`` module, connected: to the cluster in ``RAY_ADDRESS`` when set, else a local instance started
    now, unless the caller already called ``ray.init``. Without Ray installed, an :class:`InputError` with the
    install hint."""
    try:
        import ray
    except ImportError:
        raise InputError("--launcher ray needs Ray", hint=install_hint("ray")) from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), log_to_driver=False)
    return ray


def ray_message(exc: BaseException) -> str:
    """A Ray error in one line, without colour codes: its first line, or its last when the first only names the
    actor (``ray::_RayWorker.run() (pid=...)``, with the cause at the end)."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    return lines[-1] if lines[0].startswith("ray::") else lines[0]
