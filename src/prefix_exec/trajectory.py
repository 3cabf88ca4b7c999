"""Typed records of the protocol: tool calls, rollouts (or the input units skipped unscored), verdicts and scored
prefix records.

Data flows one way: an importer or the runner builds a :class:`Rollout`; :func:`prefix_exec.replay.replay`
walks it against an environment and returns a :class:`PrefixRecord`; metrics read records.

All records are frozen. They are validated at the edges (``prefix_exec.records.codec`` and the importers), not here,
except for invariants that would make a record meaningless (a rejection with no cause, FED out of range).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from prefix_exec.json_types import JsonMapping, dumps

#: Longest verdict result kept in a record, in characters. Sessions hand agents whole results; records keep
#: a bounded excerpt so a long_context listing or a big DB row does not swell every line.
RESULT_CHARS = 1000

#: A work unit's key: ``(dataset, task_id, model, method, trial)``, as :attr:`Rollout.key` gives it.
UnitKey = tuple[str, str, str, str, int]


class FailureLabel(enum.Enum):
    """The primary cause of a first failure, in the protocol's fixed tie-break order.

    When several causes apply to one rejected action, the earliest in this order wins
    (``schema < dependency < precondition < state_consistency < information``). Labels are diagnostic
    only: no metric reads them.
    """

    SCHEMA = "schema"
    DEPENDENCY = "dependency"
    PRECONDITION = "precondition"
    STATE_CONSISTENCY = "state_consistency"
    INFORMATION = "information"

    @property
    def rank(self) -> int:
        """Position in the tie-break order, 0 for ``schema``."""
        return _LABEL_ORDER.index(self)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, FailureLabel):
            return NotImplemented
        return self.rank < other.rank

    @classmethod
    def parse(cls, text: str) -> FailureLabel:
        """The label named ``text``; raises ``ValueError`` listing the valid names otherwise."""
        try:
            return cls(text)
        except ValueError:
            names = ", ".join(label.value for label in cls)
            raise ValueError(f"unknown failure label {text!r}; expected one of: {names}") from None

    @classmethod
    def primary(cls, causes: Iterable[FailureLabel]) -> FailureLabel:
        """The cause that wins the fixed tie-break order. ``causes`` must not be empty."""
        return min(causes)


_LABEL_ORDER: tuple[FailureLabel, ...] = tuple(FailureLabel)


@dataclass(frozen=True)
class Observation:
    """What the benchmark returned for a call when the rollout was produced (not replayed).

    ``error`` is the recorded error flag where the log has one (tau2's ``error``, ToolSandbox's exception,
    MCP's ``isError``, Anthropic's ``is_error``, LangChain's ``status``), ``None`` when the log does not say.
    ``error_type`` is the error's kind where the log names one (inspect's ``ToolCallError.type``, an
    exception class), ``None`` otherwise.
    """

    content: Any = None
    error: bool | None = None
    error_type: str | None = None


@dataclass(frozen=True)
class ToolCall:
    """One predicted tool action a_t.

    ``turn`` is the 0-based user turn the call belongs to; multi-turn rollouts concatenate every turn's
    calls in order. ``raw`` is the model's text for the call when the log recorded it. ``parse_error`` is set
    by an importer when the raw text could not be decoded into a call; replay then rejects the action as a
    ``schema`` failure without reaching the environment.
    """

    name: str
    arguments: JsonMapping = field(default_factory=dict)
    call_id: str | None = None
    turn: int = 0
    observation: Observation | None = None
    raw: str | None = None
    parse_error: str | None = None


@dataclass(frozen=True)
class CallCost:
    """Telemetry of one LLM call made by an agent. Tokens are counts; times are wall seconds.

    ``latency_s`` is the attempt that answered; ``queue_s`` the wait for a concurrency slot and ``backoff_s``
    the sleeps between retries (both 0 without contention or retries). ``role`` is ``planner``, ``verifier``
    or ``executor`` for agent calls; simulator and evaluator calls use their own roles and are never counted
    as agent cost.
    """

    role: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    latency_s: float = 0.0
    model: str | None = None
    queue_s: float = 0.0
    backoff_s: float = 0.0


#: Roles an agent's calls are attributed to; other roles (a user simulator, a judge) are never agent cost.
AGENT_ROLES = frozenset({"planner", "verifier", "executor"})


@dataclass(frozen=True)
class AgentCost:
    """A rollout's agent-side cost: ``tokens`` (prompt + completion, which already counts reasoning),
    ``seconds`` (the sum of the agent calls' latencies: cumulative agent-call latency, not wall time) and
    ``calls`` (their number)."""

    tokens: int
    seconds: float
    calls: int


def agent_cost(costs: Iterable[CallCost]) -> AgentCost | None:
    """The agent-side cost of one rollout's calls (roles in :data:`AGENT_ROLES`); ``None`` without any."""
    agent = [c for c in costs if c.role in AGENT_ROLES]
    if not agent:
        return None
    return AgentCost(
        sum(c.prompt_tokens + c.completion_tokens for c in agent), sum(c.latency_s for c in agent), len(agent)
    )


@dataclass(frozen=True)
class Unit:
    """The identity of one rollout: a unit of a run's grid (:mod:`prefix_exec.runner.grid`), and the first
    fields of every record scored from it (:class:`PrefixRecord`, :class:`prefix_exec.analysis.rows.MetricRow`).
    ``key`` matches :attr:`Rollout.key`."""

    dataset: str
    task_id: str
    model: str
    method: str
    trial: int

    @property
    def key(self) -> UnitKey:
        return (self.dataset, self.task_id, self.model, self.method, self.trial)

    @property
    def condition(self) -> tuple[str, str, str]:
        """The ``(dataset, model, method)`` condition the unit belongs to: what summaries and tables group by."""
        return (self.dataset, self.model, self.method)


@dataclass(frozen=True)
class Rollout:
    """A predicted trajectory a_1..a_T plus the benchmark's final success Y.

    ``success`` is 0 or 1; it may be ``None`` only between an importer and a benchmark-specific success
    check that fills it in (replay refuses a rollout still without it), or, with ``success_absent``, for good:
    the input records no Y and nothing computes one (``score traces`` without ``--success-field``), and the
    record's Y is absent (:attr:`PrefixRecord.success` ``None``). An empty ``actions`` tuple is a rollout that
    stopped before any tool call; replay scores it by the terminal no-tool convention (T = 1).

    ``trial_given`` is False when the input named no trial number and ``trial`` is the importer's 0. Before
    scoring, :class:`prefix_exec.scoring.numbering.Numbering` gives different rollouts of one (dataset, task, model,
    method) distinct trials in input order (so rollouts naming none become trials 0, 1, ...), and says whether
    each had named its trial. The flag is not part of the identity and is never written: a written rollout or
    record states its trial.
    """

    dataset: str
    task_id: str
    model: str
    method: str
    actions: tuple[ToolCall, ...] = ()
    success: int | None = None
    trial: int = 0
    transcript: tuple[JsonMapping, ...] | None = None
    cost: tuple[CallCost, ...] = ()
    metadata: JsonMapping = field(default_factory=dict)
    trial_given: bool = True
    success_absent: bool = False

    def __post_init__(self) -> None:
        if self.success_absent and self.success is not None:
            raise ValueError(f"a rollout whose final success is absent has none, got {self.success!r}")

    @property
    def key(self) -> UnitKey:
        """The unit identity ``(dataset, task_id, model, method, trial)``."""
        return (self.dataset, self.task_id, self.model, self.method, self.trial)


@dataclass(frozen=True)
class Skipped:
    """An input unit that could not be scored, and why. Reported, never silently dropped.

    ``where`` names the unit (a file and line, or a rollout's identity) so the user can find it.
    ``infrastructure``: the system lost it (the Ray actors replaying it died, or never answered), not the input
    nor the agent: a ``score`` command lists it apart, goes on without ``--keep-going``, and ``--resume`` scores it.
    """

    where: str
    error: str
    infrastructure: bool = False


@dataclass(frozen=True)
class Verdict:
    """The environment's answer for one action: accepted, or rejected with one or more causes.

    A failed check is data, not an exception. ``label`` is derived from ``causes`` by the fixed order.
    ``notes`` keep soft signals that did not reject the action (BFCL's ``{"verification_status": false}``)
    and provenance flags (``heuristic``: the verdict was inferred from message text, not an execution record).
    """

    accepted: bool
    reason: str = ""
    causes: tuple[FailureLabel, ...] = ()
    result: Any = None
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.accepted and self.causes:
            raise ValueError("an accepted verdict carries no failure cause")
        if not self.accepted and not self.causes:
            raise ValueError("a rejected verdict needs at least one failure cause")

    @property
    def label(self) -> FailureLabel | None:
        """The primary cause by the fixed order, or ``None`` when accepted."""
        return FailureLabel.primary(self.causes) if self.causes else None

    @classmethod
    def accept(cls, result: Any = None, notes: Iterable[str] = ()) -> Verdict:
        return cls(accepted=True, result=result, notes=tuple(notes))

    @classmethod
    def reject(
        cls,
        causes: FailureLabel | Iterable[FailureLabel],
        reason: str,
        *,
        result: Any = None,
        notes: Iterable[str] = (),
    ) -> Verdict:
        if isinstance(causes, FailureLabel):
            causes = (causes,)
        ordered = tuple(sorted(set(causes)))
        return cls(accepted=False, reason=reason, causes=ordered, result=result, notes=tuple(notes))


@dataclass(frozen=True)
class PrefixRecord(Unit):
    """A scored rollout: the protocol's per-rollout quantities.

    ``T`` >= 1 is the number of evaluated action slots (1 for the terminal no-tool action). ``fed`` is the
    first-error depth in ``1..T``, or ``T + 1`` when every prefix is executable. ``verdicts`` has one entry per
    replayed action, ``min(fed, T)`` of them: replay stops at the first rejection. ``actions`` keeps the full
    rollout, including the steps after the first failure (recovery), for reports. ``success`` is Y, 0 or 1, or
    ``None`` when the input recorded no Y (absent, never read as 0: success and RR are taken over the records
    whose Y is known, :mod:`prefix_exec.analysis.metrics`).
    """

    T: int
    fed: int
    success: int | None
    verdicts: tuple[Verdict, ...] = ()
    actions: tuple[ToolCall, ...] = ()
    no_tool: bool = False
    cost: tuple[CallCost, ...] = ()
    metadata: JsonMapping = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.T < 1:
            raise ValueError(f"T must be >= 1, got {self.T}")
        if not 1 <= self.fed <= self.T + 1:
            raise ValueError(f"fed must lie in 1..T+1 = 1..{self.T + 1}, got {self.fed}")
        if self.success not in (0, 1, None):
            raise ValueError(f"success must be 0, 1 or None (not recorded), got {self.success!r}")

    @property
    def executable(self) -> bool:
        """True when the whole rollout is executable (FED = T + 1)."""
        return self.fed == self.T + 1

    @property
    def failing_verdict(self) -> Verdict | None:
        """The verdict of the first rejected action, or ``None`` when fully executable."""
        if self.executable or not self.verdicts:
            return None
        return self.verdicts[self.fed - 1]

    @property
    def label(self) -> FailureLabel | None:
        verdict = self.failing_verdict
        return verdict.label if verdict else None

    @property
    def reason(self) -> str | None:
        verdict = self.failing_verdict
        return verdict.reason if verdict else None


def excerpt(result: Any) -> Any:
    """``result`` as a record keeps it: unchanged when short, else its JSON text cut to :data:`RESULT_CHARS`
    characters with the full length appended."""
    text = result if isinstance(result, str) else dumps(result)
    if len(text) <= RESULT_CHARS:
        return result
    return text[:RESULT_CHARS] + f"... ({len(text)} characters)"
