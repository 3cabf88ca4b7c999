"""Where work runs beyond this process, as ``run`` and ``score`` both offer it: the launchers (:data:`LAUNCHERS`:
``local`` processes or threads, or ``ray`` actors) and the connection to Ray (:func:`connect_ray`).

Below both users: the runner's launchers (:mod:`prefix_exec.runner.launchers`) and the scoring pool's Ray actors
(:mod:`prefix_exec.scoring.pool.ray`) import it, so neither imports the other.
"""

from __future__ import annotations

import os
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.extras import install_hint

#: The launchers ``run --launcher`` and ``score --launcher`` offer.
LAUNCHERS = ("local", "ray")


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
