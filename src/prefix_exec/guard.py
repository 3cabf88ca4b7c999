"""A runtime guard: check a candidate tool call against the live environment before it executes.

:func:`check` runs the call on a fork of the session, so the live state never changes, and returns the
environment's verdict (a call the model's output could not be parsed into is a ``schema`` rejection without
reaching the environment). An agent can then execute only accepted calls and hand rejections back to the
model as feedback; that is the ``guarded-react`` variant. The cost is one fork and one extra step per call.
"""

from __future__ import annotations

from prefix_exec.envs.base import Session
from prefix_exec.replay import check_action
from prefix_exec.trajectory import ToolCall, Verdict


def check(session: Session, call: ToolCall) -> Verdict:
    """The verdict ``call`` would get in the session's current state; ``session`` is left unchanged."""
    return check_action(session.fork(), call)
