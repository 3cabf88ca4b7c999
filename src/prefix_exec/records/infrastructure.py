"""Infrastructure failures: rollouts that ended because the system failed, not the agent. The one rule, for every
reader, scorer, table and view.

An inference crash (BFCL writes ``"result": "Error during inference: Error code: 500 ..."`` for the entry), a model
server error or timeout in a run's log, a simulation tau2 ended with ``termination_reason: infrastructure_error``,
an MCP server that exits or stops answering under the guard: the agent was never given its turn, so the rollout
says nothing of its prefix executability. Scored as it is, it becomes FED 1 with ``precondition`` ("the agent made
none") and drags PEC, FED and TER down for a reason that is the harness's.

**The mark.** A reader (or the guard) that recognizes one puts the failure's text on the rollout's
``metadata["infrastructure"]`` (:func:`mark`); the record scored from it keeps that metadata. A rollout or record
is an infrastructure failure exactly when :func:`failure_of` finds that text.

**The label.** Such a record's first-failure label is :data:`LABEL`, never one of the five: the codec writes it
(and the failure's text as the reason) whatever replay's verdicts say, and every reader takes it from the mark
(:func:`label_of`), so records written before this rule, which kept replay's label, are read the same way. The
verdicts keep what replay saw (the call in flight then has the server's error as its observation).

**Left out or kept** (:class:`Exclusion`, the same in ``score``, ``metrics`` and ``report``): by default such a
rollout is left out of PEC/FED/TER and of every table and figure, and stderr says how many, which, and N with and
without them; with ``--keep-infrastructure-failures`` it is counted, under :data:`LABEL`. The paper's fixed cohort
is about agents: its N states what was left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from prefix_exec.records.redaction import redact_text
from prefix_exec.trajectory import PrefixRecord, Rollout, UnitKey

#: The metadata key that holds the text of an infrastructure failure (the readers' and the guard's).
KEY = "infrastructure"
#: The first-failure label of an infrastructure failure: not one of the five (the agent did not fail).
LABEL = "infrastructure"
#: Texts that say the system failed rather than the agent: an HTTP 5xx or 429 from the model server, a timeout or a
#: lost connection reported by the harness in place of the model's answer. The forms are the ones real clients and
#: frameworks write: the openai client's ``Error code: 500 - ...`` and its exception names, its bare ``Request
#: timed out.`` and ``Connection error.`` (the Agents SDK records these without the name), pydantic-ai's
#: ``status_code: 500, model_name: ...`` and its ``Model...Error`` names. BFCL writes every inference error as
#: ``Error during inference: <the exception's text>``: the text after it decides, so a 400 (a prompt too long)
#: stays the agent's.
SYSTEM_TEXT = re.compile(
    r"\b(Error code|status_code): (5\d\d|429)\b|\b(Internal Server Error|"
    r"Service Unavailable|Bad Gateway|Gateway Time-?out|Request timed out|Connection error)\b|\b(APIConnectionError|"
    r"APITimeoutError|InternalServerError|RateLimitError|ServiceUnavailableError|ModelServerError|"
    r"ModelTimeoutError|ModelConnectionError|ModelUnavailableError|ModelOverloadedError|ModelRateLimitError)\b",
    re.IGNORECASE,
)
#: A mark's text is cut at this many characters.
TEXT_CHARS = 500
#: Ids listed in a note before the rest are counted.
LISTED = 20


def system_failure(text: str) -> bool:
    """Whether ``text`` (a harness's note in place of the model's answer) says the system failed."""
    return SYSTEM_TEXT.search(text[:2000]) is not None


def mark(rollout: Rollout, text: str) -> Rollout:
    """``rollout`` marked as an infrastructure failure whose text is ``text`` (cut at :data:`TEXT_CHARS`)."""
    return replace(rollout, metadata={**rollout.metadata, KEY: text[:TEXT_CHARS]})


def failure_of(metadata: object) -> str | None:
    """The infrastructure failure a rollout's or record's ``metadata`` (any JSON value) is marked with, or
    ``None``: a non-empty string under :data:`KEY`; anything else there is no mark."""
    if not isinstance(metadata, Mapping):
        return None
    text = metadata.get(KEY)
    return text if isinstance(text, str) and text else None


def label_of(label: str | None, metadata: object) -> str | None:
    """The first-failure label a record with replay's ``label`` and this ``metadata`` is counted under:
    :data:`LABEL` for an infrastructure failure (executable or not: the system ended it), else ``label``."""
    return LABEL if failure_of(metadata) is not None else label


def record_label(record: PrefixRecord) -> str | None:
    """The first-failure label ``record`` is counted under (:func:`label_of`): :data:`LABEL`, a label's name, or
    ``None`` for an executable record."""
    return record_labelled(record)[0]


def record_labelled(record: PrefixRecord) -> tuple[str | None, str | None]:
    """The ``(label, reason)`` ``record`` is written and shown with (:func:`labelled`)."""
    return labelled(record.label.value if record.label else None, record.reason, record.metadata)


def labelled(label: str | None, reason: str | None, metadata: object) -> tuple[str | None, str | None]:
    """The ``(label, reason)`` a record is written with: :data:`LABEL` and the failure's text (credentials in its
    URLs removed, as the metadata it comes from is) for an infrastructure failure, else replay's ``label`` and
    ``reason``."""
    text = failure_of(metadata)
    if text is None:
        return label, reason
    return LABEL, f"infrastructure failure (the system's, not the agent's): {redact_text(text)}"


def name_of(key: UnitKey) -> str:
    """How a note names a rollout: ``dataset/task (model, method, trial N)``."""
    dataset, task_id, model, method, trial = key
    return f"{dataset}/{task_id} ({model}, {method}, trial {trial})"


@dataclass
class Exclusion:
    """Which infrastructure failures a command leaves out (``keep``: none, they are counted under :data:`LABEL`),
    and the ones it left out and kept, named by :func:`name_of` in the order met."""

    keep: bool = False
    excluded: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def admit(self, key: UnitKey, failure: str | None) -> bool:
        """Whether the rollout ``key`` (marked with ``failure``, or not) is counted; a marked one is noted."""
        if failure is None:
            return True
        (self.kept if self.keep else self.excluded).append(name_of(key))
        return self.keep

    def filter[U](
        self, units: Iterable[U], key: Callable[[U], UnitKey], failure: Callable[[U], str | None]
    ) -> Iterator[U]:
        """``units`` less the infrastructure failures (each noted), or all of them with ``keep``."""
        return (unit for unit in units if self.admit(key(unit), failure(unit)))

    def note(self, counted: int) -> str | None:
        """What was done, in one line for stderr (``counted``: the rollouts counted, the kept ones included), or
        ``None`` when no infrastructure failure was met."""
        if self.kept:
            n = len(self.kept)
            return (
                f"{_rollouts(n)} ended by an infrastructure failure (the system's, not the agent's) kept under the "
                f"label '{LABEL}' (--keep-infrastructure-failures): N = {counted} with them, {counted - n} without "
                f"them: {_listed(self.kept)}"
            )
        if not self.excluded:
            return None
        n = len(self.excluded)
        return (
            f"{_rollouts(n)} ended by an infrastructure failure (the system's, not the agent's) left out of "
            f"PEC/FED/TER: N = {counted} without them, {counted + n} with them (--keep-infrastructure-failures "
            f"counts them under the label '{LABEL}'): {_listed(self.excluded)}"
        )

    def sentence(self, counted: int) -> str | None:
        """What was done, in one sentence for a table's note or a figure's caption (``counted`` as in
        :meth:`note`), or ``None`` when nothing was."""
        if self.kept:
            n = len(self.kept)
            return (
                f"{_rollouts(n)} ended by an infrastructure failure (the system's, not the agent's) counted under "
                f"the label '{LABEL}' (--keep-infrastructure-failures): N = {counted} with them, {counted - n} "
                "without."
            )
        if not self.excluded:
            return None
        n = len(self.excluded)
        return (
            f"{_rollouts(n)} ended by an infrastructure failure (the system's, not the agent's) left out: "
            f"N = {counted} without them, {counted + n} with them."
        )

    def as_json(self, counted: int) -> dict[str, Any] | None:
        """What was done, for a summary file (``counted`` as in :meth:`note`), or ``None`` when nothing was."""
        if not self.kept and not self.excluded:
            return None
        met = self.kept or self.excluded
        return {
            "label": LABEL,
            "kept": bool(self.kept),
            "count": len(met),
            "N_with": counted if self.kept else counted + len(met),
            "N_without": counted - len(met) if self.kept else counted,
            "rollouts": list(met),
        }


def _rollouts(count: int) -> str:
    return f"{count} rollout{'s' if count != 1 else ''}"


def _listed(items: list[str]) -> str:
    more = len(items) - LISTED
    return ", ".join(items[:LISTED]) + (f" and {more} more" if more > 0 else "")
