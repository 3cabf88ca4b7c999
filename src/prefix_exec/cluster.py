"""Where work runs beyond this process, as ``run`` and ``score`` both offer it: the launchers (:data:`LAUNCHERS`:
``local`` processes or threads, or ``ray`` actors), the connection to Ray (:func:`connect_ray`), how a Ray error
is said (:func:`ray_message`), and the bounds both hold Ray's actors to: their start (:data:`START_SECONDS`) and
their end (:func:`let_start`, :data:`SETTLE_SECONDS`).

Below both users: the runner's launchers (:mod:`prefix_exec.runner.launchers`) and the scoring pool's Ray actors
(:mod:`prefix_exec.scoring.pool.ray`) import it, so neither imports the other.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import socket
import time
from collections.abc import Mapping
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.extras import install_hint

#: The launchers ``run --launcher`` and ``score --launcher`` offer.
LAUNCHERS = ("local", "ray")
#: Seconds the cluster in ``RAY_ADDRESS`` (``host:port``, or ``ray://host:port``) has to accept a connection
#: before Ray is asked to join it: Ray itself tries an address that does not answer for about ten minutes
#: (20 tries of 30 s) before it gives up.
CONNECT_SECONDS = 10.0
#: Seconds a Ray actor may take to start: to be placed on a node with the CPU it asks for, its worker process
#: started and its settings loaded (1-3 s on this project's 2-core machines, some 15 s under a load of 15).
#: Work goes only to started actors; when none of a run's has started this long after it was asked for (the
#: cluster has no free CPU for them, or cannot start workers), the run fails with an error naming this bound.
START_SECONDS = 120.0
#: Seconds the end of a run waits at most for an actor asked for less than this long ago to start before killing
#: it: Ray 2.60 loses the worker, and the CPUs it holds, of an actor killed between its placement and its start
#: (the worker ignores the kill: "Mismatched ActorID"; a hostile sweep under Ray was left so with no free CPU on
#: its local instance, and the next command's actors never started). Older ones are waiting for a CPU.
SETTLE_SECONDS = 10.0
#: Actors that may die in a row as they start (their settings or worker cannot be built there) before none is asked
#: for again: in one place for ``score --launcher ray`` (the run goes on with the others), in all for ``run
#: --launcher ray`` (the run fails).
MOST_FAILED_STARTS = 3
#: The terminal colour codes Ray puts around an actor's name in its errors.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: The last line of a traceback: the exception raised (``ZeroDivisionError: division by zero``).
_RAISED = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


def connect_ray() -> Any:
    """The ``ray`` module, connected: to the cluster in ``RAY_ADDRESS`` when set, else a local instance started
    now, unless the caller already called ``ray.init``. Without Ray installed, an :class:`InputError` with the
    install hint."""
    try:
        import ray
    except ImportError:
        raise InputError("--launcher ray needs Ray", hint=install_hint("ray")) from None
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        if address:
            reach(address)
        ray.init(address=address, log_to_driver=False)
    return ray


def reach(address: str) -> None:
    """Connect to the cluster at ``address`` (``RAY_ADDRESS``) and hang up, within :data:`CONNECT_SECONDS`; an
    :class:`InputError` naming it when it does not accept. ``auto``, ``local`` and other forms than ``host:port``
    (after an optional ``ray://``) are left to Ray."""
    found = re.fullmatch(r"(?:ray://)?\[?([^\[\]/]+?)\]?:(\d{1,5})", address.strip())
    if found is None:
        return
    try:
        with socket.create_connection((found[1], int(found[2])), timeout=CONNECT_SECONDS):
            return
    except (OSError, ValueError) as exc:  # refused, unreachable, timed out, no such host, a port past 65535
        raise InputError(
            f"cannot reach the Ray cluster at RAY_ADDRESS={address} within {CONNECT_SECONDS:g} s ({exc})",
            hint="start it ('ray start --head'), set RAY_ADDRESS to a running cluster, or unset it for a local "
            "Ray instance",
        ) from None


def ray_message(exc: BaseException) -> str:
    """A Ray error in one line, without colour codes: its first line, or its last when the first only names the
    actor (``ray::_RayWorker.run() (pid=...)``, with the cause at the end); a first line that goes on to name the
    actor (``The actor died because of an error raised in its creation task, ray::ScoreActor.__init__() (pid=...``)
    is cut there, and the exception that ends the traceback after it is added (``...: ZeroDivisionError: ...``)."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    if lines[0].startswith("ray::"):
        return lines[-1]
    first = lines[0].split(" ray::")[0].rstrip(" ,")
    return f"{first}: {lines[-1]}" if len(lines) > 1 and _RAISED.match(lines[-1]) else first


def let_start(ray: Any, starting: Mapping[Any, float], started_cpus: float, actor_cpus: float) -> None:
    """Before a run kills its actors: wait until those still starting (``starting``: each one's readiness ref,
    ``actor.__ray_ready__.remote()``, and when it was asked for, on :func:`time.monotonic`'s clock) that were asked
    for less than :data:`SETTLE_SECONDS` ago have started, at most until then. Not when the cluster's CPUs less
    ``started_cpus`` (the started actors') leave fewer than ``actor_cpus``: then none can be placed before those
    are killed (kill the starting ones first)."""
    now = time.monotonic()
    young = {ref: asked for ref, asked in starting.items() if now - asked < SETTLE_SECONDS}
    if not young:
        return
    try:
        cpus = float(ray.cluster_resources().get("CPU", math.inf))
    except Exception:  # Ray's own errors, whatever they are: then wait, as for any other cluster
        cpus = math.inf
    if cpus - started_cpus < actor_cpus:
        return
    until = max(young.values()) + SETTLE_SECONDS
    with contextlib.suppress(Exception):  # a wait on actors being killed or gone: nothing is left to wait for
        ray.wait(list(young), num_returns=len(young), timeout=max(0.0, until - time.monotonic()))
