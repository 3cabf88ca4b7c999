"""Infrastructure failures: rollouts that ended because the system failed, not the agent.

An inference crash (BFCL writes ``"result": "Error during inference: Error code: 500 ..."`` for the entry), a
model server error or timeout, a simulation tau2 ended with an infrastructure error: the agent was never given
its turn, so the rollout says nothing about its prefix executability. Scored as it is, it becomes FED 1 with
``precondition`` ("the agent made none") and drags PEC, FED and TER down for a reason that is the harness's.

A reader that recognizes one puts its text on the rollout's ``metadata["infrastructure"]``
(:func:`mark`). The score commands then (:class:`Exclusion`):

- by default **exclude** it from the records, so from PEC/FED/TER and every table, and say so on stderr with the
  count, the ids and N with and without them;
- with ``--keep-infrastructure-failures``, score it like any rollout, its record keeping
  ``metadata.infrastructure`` so that a report can tell it apart.

The paper's fixed cohort is about agents: an excluded rollout is outside it, and a table built from the records
states N without them (the score command's last lines state both).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from prefix_exec.trajectory import Rollout, Skipped

#: The rollout metadata key that holds the text of an infrastructure failure.
KEY = "infrastructure"
#: Texts that say the system failed rather than the agent: BFCL's inference crash, an HTTP 5xx or 429 from the
#: model server, a timeout or a lost connection reported by the harness in place of the model's answer.
SYSTEM_TEXT = re.compile(
    r"\AError during inference\b|\bError code: (5\d\d|429)\b|\b(Internal Server Error|Service Unavailable|"
    r"Bad Gateway|Gateway Time-?out)\b|\b(APIConnectionError|APITimeoutError|InternalServerError|RateLimitError|"
    r"ServiceUnavailableError)\b",
    re.IGNORECASE,
)
#: Ids listed on stderr before the rest are counted.
LISTED_IDS = 20


def system_failure(text: str) -> bool:
    """Whether ``text`` (a harness's note in place of the model's answer) says the system failed."""
    return SYSTEM_TEXT.search(text[:2000]) is not None


def mark(rollout: Rollout, text: str) -> Rollout:
    """``rollout`` marked as an infrastructure failure whose text is ``text``."""
    return replace(rollout, metadata={**rollout.metadata, KEY: text[:500]})


def failure_of(rollout: Rollout) -> str | None:
    """The infrastructure failure ``rollout`` is marked with, or ``None``."""
    text = rollout.metadata.get(KEY)
    return text if isinstance(text, str) and text else None


@dataclass
class Exclusion:
    """Which infrastructure failures a run leaves out (``keep``: none), and those it left out and kept, for the
    log: ``excluded`` and ``kept`` hold ``task_id (trial, source)`` strings in input order."""

    keep: bool = False
    excluded: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def filter(self, units: Iterable[Rollout | Skipped]) -> Iterator[Rollout | Skipped]:
        """``units`` without the infrastructure failures (each one noted), or all of them with ``keep``."""
        for unit in units:
            if isinstance(unit, Skipped) or failure_of(unit) is None:
                yield unit
                continue
            where = f"{unit.task_id} ({unit.metadata.get('source', 'trial ' + str(unit.trial))})"
            if self.keep:
                self.kept.append(where)
                yield unit
            else:
                self.excluded.append(where)

    def describe(self, scored: int) -> str | None:
        """What the run did with infrastructure failures (``scored``: rollouts scored), or ``None`` without any."""
        if self.kept:
            return (
                f"{len(self.kept)} infrastructure failure{'s' if len(self.kept) != 1 else ''} kept "
                f"(--keep-infrastructure-failures; metadata.infrastructure says which): N = {scored} with them, "
                f"{scored - len(self.kept)} without: {_listed(self.kept)}"
            )
        if not self.excluded:
            return None
        count = len(self.excluded)
        return (
            f"{count} rollout{'s' if count != 1 else ''} ended by an infrastructure failure (the system's, not the "
            f"agent's) excluded from PEC/FED/TER: N = {scored} without them, {scored + count} with them "
            f"(--keep-infrastructure-failures keeps them): {_listed(self.excluded)}"
        )


def _listed(items: list[str]) -> str:
    more = len(items) - LISTED_IDS
    return ", ".join(items[:LISTED_IDS]) + (f" and {more} more" if more > 0 else "")
