"""Where a planning method's plans went before the executor: proposed, refused by the structure check, refused
by the verifier, revised, accepted (issue 46: a dual-loop run whose every plan failed the structure check, so
that its verifier never ran, showed only "planner 12").

Read from what a rollout (or its record) notes in ``metadata`` (:mod:`prefix_exec.agents.dual_loop`,
:mod:`prefix_exec.agents.plan_conditioned`): ``plans`` (proposals), ``plan_parse_errors`` (proposals that failed
the structure check), ``verifier_parse_errors`` (verifier answers that were no verdict, re-asked),
``verification_rounds`` and ``plan_approved`` (one entry per planned turn) and ``planned_turns``. Each round of a
turn is exactly one of: a plan refused by the structure check (no verifier call), a verifier answer that was no
verdict, an approval, a rejection by the verifier; so the verifier's rejections are the rounds less the others.
A revision is a proposal after a turn's first. Nothing here is read from the transcript: records carry it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PlanFunnel:
    """One rollout's (or a sum of rollouts') plans: ``turns`` planned turns, ``proposed`` plans, of which
    ``structure`` failed the structure check; ``verifier`` rejections and ``unreadable`` verifier answers;
    ``revised`` proposals after a turn's first; ``accepted`` turns whose last plan the verifier approved."""

    turns: int = 0
    proposed: int = 0
    structure: int = 0
    verifier: int = 0
    unreadable: int = 0
    revised: int = 0
    accepted: int = 0

    def __add__(self, other: PlanFunnel) -> PlanFunnel:
        return PlanFunnel(*(a + b for a, b in zip(self.counts(), other.counts(), strict=True)))

    def counts(self) -> tuple[int, ...]:
        return (
            self.turns,
            self.proposed,
            self.structure,
            self.verifier,
            self.unreadable,
            self.revised,
            self.accepted,
        )

    def describe(self) -> str:
        """One line, e.g. ``4 plans for 2 turns: 4 refused by the structure check (the verifier never ran), 0 by
        the verifier, 2 revisions, 0 accepted``."""
        never = " (the verifier never ran)" if self.proposed and self.structure == self.proposed else ""
        unreadable = f", {self.unreadable} verifier answers that were no verdict" if self.unreadable else ""
        return (
            f"{_n(self.proposed, 'plan')} for {_n(self.turns, 'turn')}: {self.structure} refused by the structure "
            f"check{never}, {self.verifier} by the verifier{unreadable}, {_n(self.revised, 'revision')}, "
            f"{self.accepted} accepted"
        )

    def headline(self) -> str:
        """Where the plans stopped, in a few words (a report's table says it beside the counts): every plan
        refused by the structure check (so the verifier never ran), no verifier at all (plan-conditioned: the plans
        went to the executor unchecked), or how many turns' plans were accepted."""
        if not self.proposed:
            return "no plan proposed"
        if self.structure == self.proposed:
            return "every plan refused by the structure check: the verifier never ran"
        if not (self.verifier or self.unreadable or self.accepted):
            refused = f" ({self.structure} refused by the structure check, given as raw text)" if self.structure else ""
            return f"no verifier: the plans went to the executor unchecked{refused}"
        if self.accepted == self.turns:
            return "every turn's plan accepted"
        return "no plan accepted" if not self.accepted else f"plans accepted in {self.accepted} of {self.turns} turns"


def funnel_of(metadata: Mapping[str, Any]) -> PlanFunnel | None:
    """The funnel a rollout's ``metadata`` notes; ``None`` for a rollout that planned nothing (``react``)."""
    rounds = _ints(metadata.get("verification_rounds"))
    approved = metadata.get("plan_approved")
    if not rounds and not metadata.get("plans"):
        return None
    proposed, structure = _int(metadata.get("plans")), _int(metadata.get("plan_parse_errors"))
    unreadable = _int(metadata.get("verifier_parse_errors"))
    accepted = sum(1 for flag in approved if flag is True) if isinstance(approved, list) else 0
    turns = len(rounds) or len(_ints(metadata.get("planned_turns")))
    rejected = max(0, sum(rounds) - structure - unreadable - accepted)
    return PlanFunnel(turns, proposed, structure, rejected, unreadable, max(0, proposed - turns), accepted)


def funnel_rows(rows: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[tuple[str, str, PlanFunnel]]:
    """``(method, task, funnel)`` of each ``(method, task, metadata)`` that planned, then one ``(method, "all",
    sum)`` per method with two or more, in method then task order."""
    found = sorted((m, t, f) for m, t, meta in rows if (f := funnel_of(meta)) is not None)
    out: list[tuple[str, str, PlanFunnel]] = []
    for method in dict.fromkeys(m for m, _, _ in found):
        mine = [(m, t, f) for m, t, f in found if m == method]
        out += mine
        if len(mine) > 1:
            out.append((method, "all", sum((f for _, _, f in mine), PlanFunnel())))
    return out


def funnel_lines(rows: Sequence[tuple[str, str, PlanFunnel]], *, indent: str = "  ") -> list[str]:
    """``rows`` (:func:`funnel_rows`) as text, one line each: ``method task: description``."""
    return [f"{indent}{method} {task}: {funnel.describe()}" for method, task, funnel in rows]


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _ints(value: object) -> list[int]:
    return [_int(v) for v in value] if isinstance(value, list) else []
