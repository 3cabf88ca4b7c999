"""The initial plan of a planned turn, made once and shared by every planning method of one unit of work.

The sensitivity study (paper 3.3) compares Dual-Loop reruns and the acceptance-wrapper control with the matching
Plan-Conditioned run *on the same initial plan* (:func:`~prefix_exec.agents.plan_conditioned.initial_plan` applies
this module's rule). So a turn's first planner proposal is looked up in a :class:`PlanBook` (the plans of one
dataset, task, model and trial) before the planner is asked: the first method that needs it asks the planner and
stores the answer, and every later one (``plan-conditioned``, ``dual-loop`` with any verifier or ``k_val``,
``dual-loop-accept-all``) reuses it. This is explicit, not a side effect of the LLM response cache: it holds with
the cache off, and with a server that would answer a second request differently.

A plan is stored under its turn and the :meth:`~prefix_exec.llm.backend.ChatBackend.request_digest` of the
planner request (model, decoding, seed, messages): a turn whose plan request differs (a later BFCL turn after
different earlier answers) gets a plan of its own. Revisions (dual-loop) are never shared.

Every rollout that uses a plan is charged its planner call (the cost recorded when it was made), so per-rollout
cost does not depend on which method ran first. Per planned turn ``metadata`` records ``plan_digest`` (SHA-256
of the planner's answer text), ``plan_source`` (``generated``: this rollout's planner call made it;
``shared``: taken from the book) and ``plan_generated_by`` (the method that made it). A planner call whose
answer lost a race to another unit's (two workers asked at once) is counted in ``metadata["plans_discarded"]``;
the rollout uses the stored plan (this can only happen between machines: on one, a second asker waits for the
first's answer).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Protocol

from prefix_exec.trajectory import CallCost

GENERATED, SHARED = "generated", "shared"


def plan_digest(content: str) -> str:
    """SHA-256 (hex) of a planner's answer text."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class SharedPlan:
    """A planner's answer (``content``, ``""`` for none) with the cost of the call that made it and the method
    of the unit that made it."""

    content: str
    cost: CallCost
    generated_by: str

    @property
    def digest(self) -> str:
        return plan_digest(self.content)


class PlanBook(Protocol):
    """The initial plans of one (dataset, task, model, trial), by planned turn and planner request digest."""

    def obtain(self, turn: int, request: str, make: Callable[[], SharedPlan]) -> SharedPlan:
        """The plan stored under ``(turn, request)``, else ``make()``'s, stored. The result is ``make()``'s
        own object exactly when this call stored it. ``make`` runs at most once, and never while another
        caller is making the same plan (whose plan is then returned): one planner call per plan, except
        across machines, where two may race and the first stored wins."""
        ...


class KeyedLocks:
    """One :class:`threading.Lock` per key, made on first use."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[Hashable, threading.Lock] = {}

    def __call__(self, key: Hashable) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


@dataclass
class MemoryPlanBook:
    """A :class:`PlanBook` in memory, for agents run side by side in one process (the runner uses the on-disk
    :class:`~prefix_exec.runner.plan_store.PlanStore`)."""

    plans: dict[tuple[int, str], SharedPlan] = field(default_factory=dict)
    _locks: KeyedLocks = field(default_factory=KeyedLocks, repr=False)

    def obtain(self, turn: int, request: str, make: Callable[[], SharedPlan]) -> SharedPlan:
        with self._locks((turn, request)):
            found = self.plans.get((turn, request))
            if found is None:
                found = self.plans[(turn, request)] = make()
            return found
