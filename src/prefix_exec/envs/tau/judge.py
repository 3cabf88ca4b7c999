"""Token counts of tau2's NL-assertion judge, which tau2's evaluator does not return.

tau2's ``NLAssertionsEvaluator`` calls ``generate`` (its module's global, from ``tau2.utils.llm_utils``) and
keeps only the parsed verdicts; the judge's usage is on the message ``generate`` returns. :func:`metered`
wraps that global once per process (under a lock, idempotently) with a function that calls the original and,
only when the *calling thread* is inside :func:`metering`, adds the returned message's token counts to that
thread's sink. The judge call runs synchronously in the thread that evaluates, so concurrent rollouts in
other threads never see each other's counts, and callers outside :func:`metering` get exactly tau2's
behaviour. A Ray worker process installs its own wrapper.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_SINK = threading.local()
_LOCK = threading.Lock()
_MARK = "_prefix_exec_metered"


def count(usage: dict[str, int], message: Any) -> None:
    """Add one call and ``message.usage``'s prompt and completion tokens (missing counts as 0) to ``usage``."""
    usage["calls"] += 1
    data = getattr(message, "usage", None) or {}
    usage["prompt_tokens"] += int(data.get("prompt_tokens") or 0)
    usage["completion_tokens"] += int(data.get("completion_tokens") or 0)


def new_usage() -> dict[str, int]:
    return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}


def metered(nl_module: Any) -> None:
    """Make ``nl_module.generate`` (tau2's NL-assertion evaluator module) report to :func:`metering`."""
    with _LOCK:
        original = nl_module.generate
        if getattr(original, _MARK, False):
            return
        nl_module.generate = _wrap(original)


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
    def generate(*args: Any, **kwargs: Any) -> Any:
        message = original(*args, **kwargs)
        sink = getattr(_SINK, "usage", None)
        if sink is not None:
            count(sink, message)
        return message

    setattr(generate, _MARK, True)
    return generate


@contextmanager
def metering(usage: dict[str, int]) -> Iterator[dict[str, int]]:
    """Within the block, judge calls made by this thread add to ``usage`` (see :func:`new_usage`)."""
    previous = getattr(_SINK, "usage", None)
    _SINK.usage = usage
    try:
        yield usage
    finally:
        _SINK.usage = previous
