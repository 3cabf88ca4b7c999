"""One decoded call invoked on an API instance: a static cost bound, a wall-clock bound, BFCL's result text.

Time bound. A call runs in the caller's thread, and a Python thread cannot be killed, so the bound has two
layers:

1. **A static cost bound** (:func:`cost_excess`) stops, before anything runs, the argument values whose cost
   grows without bound inside a single C-level operation that no signal can interrupt: ``power`` with an integer
   result of more than :data:`MAX_RESULT_BITS` bits (``power(base=10, exponent=1000000000)``), a
   ``logarithm``/``square_root`` precision above :data:`MAX_PRECISION` digits, and ``round_number`` with
   more than :data:`MAX_PRECISION` decimal places. Every other BFCL method is linear in the size of its
   literal arguments and the task state.
2. **A wall-clock alarm** of ``time_limit`` seconds (``signal.setitimer``) when the call runs on the main
   thread, which is where ``prefix-exec score`` replays. It interrupts any pure-Python loop. Off the main
   thread (a library caller's worker) only the static cost bound applies.

A call that exceeds either bound is stopped and never half-runs past it. Inside a rollout's budget
(:mod:`prefix_exec.budget`) the alarm is cut to the time the rollout has left, past it the rollout stops with
:class:`~prefix_exec.budget.OverBudget`, and each call runs under the memory budget: an allocation past it
(``compute_exchange_rate(value="x" * 10**7)`` repeats a string 110 times in C) fails at once and the call is
stopped. Global numeric settings BFCL's
MathAPI changes (``mpmath.mp.dps``, the decimal context precision) are restored after each call, so one
call cannot slow down or change the next. Calls of one process run one at a time (a lock), because
``mpmath.mp.dps`` is process-global: two threads' ``logarithm`` calls would otherwise see each other's
precision. BFCL calls take microseconds, so the lock costs nothing next to a model's latency.
"""

from __future__ import annotations

import decimal
import importlib
import json
import math
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prefix_exec import budget
from prefix_exec.envs.bfcl import api_classes
from prefix_exec.envs.bfcl.calls import check_name
from prefix_exec.envs.bfcl.labels import error_of
from prefix_exec.json_types import JsonMapping

#: Largest integer result ``power`` may compute, in bits (about 315,000 decimal digits).
MAX_RESULT_BITS = 1 << 20
#: Largest precision (digits) for ``logarithm``/``square_root`` and decimal places for ``round_number``.
MAX_PRECISION = 100
#: Deepest nesting of lists/dicts allowed in an argument value.
MAX_NESTING = 32
#: Default per-call wall-clock bound, seconds.
TIME_LIMIT = 2.0
#: Held by every call: BFCL's process-global numeric state is set and restored inside it.
_ONE_CALL_AT_A_TIME = threading.Lock()


#: Names BFCL's own execution code refuses before evaluating a call (its own safety list), whatever they refer to.
BLOCKED_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})


class CallTimeout(BaseException):
    """Raised inside a call by the alarm. A BaseException so BFCL's ``except Exception`` cannot swallow it."""


@dataclass(frozen=True)
class CallOutcome:
    """What one call did.

    ``text`` is the result as BFCL's own execution code records it (a str as is, a dict as JSON, anything else via
    ``str``; a raised exception as ``"Error during execution: <message>"``), which the final-success check
    compares. ``error`` is the API's error message (an error result or a raised exception), ``exception`` the
    raised type's name, ``exceeded`` the bound the call exceeded, as the reason it was stopped (the static cost
    bound, a state it cannot finish on, the alarm, the memory budget).
    """

    text: str
    result: Any = None
    error: str | None = None
    exception: str | None = None
    exceeded: str | None = None
    timed_out: bool = False

    @property
    def ran_clean(self) -> bool:
        return self.error is None and self.exceeded is None


def nesting_depth(value: Any) -> int:
    """How deeply lists and dicts nest inside ``value`` (0 for a scalar), walked without recursion."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, list | tuple):
            children: Any = item
        elif isinstance(item, dict):
            children = item.values()
        else:
            deepest = max(deepest, depth)
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def cost_excess(name: str, arguments: JsonMapping) -> str | None:
    """Why the call's arguments exceed the static cost bound, or ``None`` when they are within it."""
    values = list(arguments.values())
    # Most calls pass scalars only (nesting 1): the walk is for the few that pass lists or objects.
    depth = nesting_depth(values) if any(isinstance(v, list | tuple | dict) for v in values) else 1
    if depth > MAX_NESTING + 1:
        # Copying, pickling or comparing such a value would exhaust the interpreter's stack.
        return f"{name}: arguments nest {depth - 1} levels deep, above the bound of {MAX_NESTING}"
    if name == "power":
        base, exponent = arguments.get("base"), arguments.get("exponent")
        if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
            bits = exponent * math.log2(abs(base))
            if bits > MAX_RESULT_BITS:
                return f"power: the result would have about {bits:.3g} bits, above the bound of {MAX_RESULT_BITS}"
    elif name in ("logarithm", "square_root"):
        precision = arguments.get("precision")
        if isinstance(precision, int | float) and abs(precision) > MAX_PRECISION:
            return f"{name}: precision {precision} is above the bound of {MAX_PRECISION} digits"
    elif name == "round_number":
        places = arguments.get("decimal_places")
        if isinstance(places, int | float) and abs(places) > MAX_PRECISION:
            return f"round_number: {places} decimal places is above the bound of {MAX_PRECISION}"
    return None


#: MessageAPI draws message ids from 10000..99999 until it finds a free one: with all 90,000 taken it loops
#: forever (each later call would wait out the whole time bound).
_MESSAGE_IDS = range(10000, 100000)


def state_excess(name: str, instance: Any) -> str | None:
    """Why ``name`` cannot finish on ``instance``'s current state, or ``None`` (checked before it runs)."""
    if name == "send_message":
        taken = getattr(instance, "generated_ids", None)
        if not isinstance(taken, set) or len(taken) < len(_MESSAGE_IDS):
            return None
        if len(taken & set(_MESSAGE_IDS)) >= len(_MESSAGE_IDS):
            return "send_message: every message id (10000 to 99999) is taken; no message can be sent"
    return None


def _on_alarm(signum: int, frame: Any) -> None:
    raise CallTimeout


_handler_installed = False


def _arm(seconds: float) -> bool:
    """Start the alarm for one call when it can run here (main thread, a platform with setitimer)."""
    global _handler_installed
    if seconds <= 0 or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    # The handler is installed once, on first use, and stays: installing it per call costs more than most
    # calls. It only raises while an alarm set here is running (setitimer is reset after every call).
    if not _handler_installed:
        signal.signal(signal.SIGALRM, _on_alarm)
        _handler_installed = True
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return True


def result_text(result: Any) -> str:
    """BFCL's string form of a result: str as is, dict as JSON (``str`` if not serialisable), else ``str``."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:
            return str(result)
    return str(result)


def error_text(message: str) -> str:
    return f"Error during execution: {message}"


def invoke(
    method: Callable[..., Any], name: str, arguments: JsonMapping, *, time_limit: float = TIME_LIMIT
) -> CallOutcome:
    """Call ``method(**arguments)`` under the cost bound and the alarm; never raises for a failing call."""
    exceeded = cost_excess(name, arguments)
    if exceeded is not None:
        return CallOutcome(text=error_text(exceeded), exceeded=exceeded)
    return run_bounded(method, name, arguments, time_limit=time_limit)


def run_bounded(
    method: Callable[..., Any], name: str, arguments: JsonMapping, *, time_limit: float = TIME_LIMIT
) -> CallOutcome:
    """:func:`invoke` for arguments that already passed :func:`cost_excess` (or copies of them, which nest
    alike): the rollout's budget, the alarm and the memory budget, without walking the arguments again."""
    budget.check()
    with _ONE_CALL_AT_A_TIME:
        return _invoke_alone(method, name, arguments, min(time_limit, max(budget.remaining(), 0.001)))


#: mpmath once a call found it fully imported (it stays imported).
_mpmath_module: Any = None


def _mpmath() -> Any:
    """mpmath, once BFCL's MathAPI brought it in, else ``None``. A plain import rather than a look into
    ``sys.modules``, which can hold a half-initialised module while another thread imports MathAPI."""
    global _mpmath_module
    if _mpmath_module is None:
        if "mpmath" not in sys.modules:
            return None
        # The import waits for another thread's import of the same module to finish.
        _mpmath_module = importlib.import_module("mpmath")
    return _mpmath_module


def _invoke_alone(method: Callable[..., Any], name: str, arguments: JsonMapping, time_limit: float) -> CallOutcome:
    mpmath = _mpmath()
    dps = mpmath.mp.dps if mpmath is not None else None
    context = decimal.getcontext()
    prec = context.prec
    armed = False
    try:
        try:
            armed = _arm(time_limit)
            with budget.call_memory():
                result = method(**arguments)
                if armed:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    armed = False
                # Serialised while the call's numeric precision is still in force, and before a later call
                # can mutate a returned module-level object (VehicleControlAPI returns one).
                text = result_text(result)
        except CallTimeout:
            armed = False
            budget.check()
            return _timed_out(name, time_limit)
        except MemoryError:
            reason = f"{name}: exceeded the per-call memory budget of {budget.current().call_memory_mb} MiB"
            return CallOutcome(text=error_text(reason), exceeded=reason)
        except Exception as exc:
            message = str(exc)
            return CallOutcome(
                text=error_text(message), error=message or type(exc).__name__, exception=type(exc).__name__
            )
        finally:
            if armed:
                signal.setitimer(signal.ITIMER_REAL, 0)
            context.prec = prec
            if mpmath is not None and dps is not None and mpmath.mp.dps != dps:  # setting it costs more than a call
                mpmath.mp.dps = dps
    except CallTimeout:  # pragma: no cover - the alarm fired between the call's end and the timer reset
        return _timed_out(name, time_limit)
    return CallOutcome(text=text, result=result, error=error_of(result))


def _timed_out(name: str, time_limit: float) -> CallOutcome:
    reason = f"{name}: exceeded the per-call time bound of {time_limit:g} s"
    return CallOutcome(text=error_text(reason), exceeded=reason, timed_out=True)


def invoke_as_bfcl(
    instances: api_classes.Instances,
    owners: Mapping[str, str],
    name: Any,
    arguments: Any,
    *,
    time_limit: float = TIME_LIMIT,
) -> CallOutcome:
    """Execute a decoded call as BFCL's own execution code would, on ``instances`` (changed in place, never
    rolled back).

    ``owners`` maps each public method of the task's involved classes to its class: every one of them runs,
    held-back miss_func functions and wrongly typed arguments included, as BFCL's ``eval`` runs them. The
    outcome's ``text`` is BFCL's answer: the result text, or ``"Error during execution: <message>"`` for
    BFCL's blocked names, an undefined name (``name 'x' is not defined``, as ``eval`` says it) and a raised
    exception. By design nothing is ``eval``-ed: a name that is not such a method is undefined here, where
    BFCL would evaluate it (a builtin, say); and the static cost bound and the time bound still apply.
    """
    if isinstance(name, str) and name in BLOCKED_NAMES:
        message = f"Function call {name} is not allowed."
        return CallOutcome(text=error_text(message), error=message, exception="Exception")
    if not isinstance(name, str) or check_name(name) or name not in owners:
        message = f"name {name!r} is not defined"
        return CallOutcome(text=error_text(message), error=message, exception="NameError")
    if not isinstance(arguments, Mapping):
        message = f"{name}: arguments are not named values"
        return CallOutcome(text=error_text(message), error=message, exception="TypeError")
    exceeded = cost_excess(name, arguments)  # before the arguments are copied (deep values)
    if exceeded is not None:
        return CallOutcome(text=error_text(exceeded), exceeded=exceeded)
    owner = owners[name]
    exhausted = state_excess(name, instances[owner])
    if exhausted is not None:
        return CallOutcome(text=error_text(exhausted), exceeded=exhausted)
    method = getattr(instances[owner], name)
    return run_bounded(method, name, api_classes.call_arguments(owner, name, arguments), time_limit=time_limit)
