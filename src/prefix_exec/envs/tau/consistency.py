"""Consistency report: where our replay and the recorded run disagree on whether a call failed.

For every replayed action (depths 1..min(FED, T)) the record holds our verdict and the recorded tool message's
``error`` flag. A disagreement (we reject what the run accepted, or accept what it rejected) means version
skew between the tau2 that produced the file and the one installed, nondeterminism, or a check of ours the
benchmark does not make (schema binding, information availability). It is listed, never hidden; the entry
says which by its ``kind``:

- ``env-skew``: the toolkit itself disagrees with the recorded error flag (version skew or nondeterminism);
- ``extra-check``: the toolkit agrees with the run (it accepted), but one of our checks the benchmark does not
  make rejected the call (schema binding or information availability);
- ``task_mismatch`` (depth 0, a whole simulation): its conversation does not fit the task it is filed under
  (:mod:`prefix_exec.envs.tau.mismatch`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from prefix_exec.jsonl import UnitKey
from prefix_exec.trajectory import PrefixRecord


@dataclass(frozen=True)
class Disagreement:
    """One call whose replayed outcome differs from the recorded one. ``depth`` is 1-based."""

    dataset: str
    task_id: str
    trial: int
    depth: int
    tool: str
    arguments: dict[str, Any]
    recorded_error: bool
    recorded_content: Any
    replay_accepted: bool
    replay_label: str | None
    replay_reason: str
    kind: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        if self.kind == "task_mismatch":  # a whole simulation (envs/tau/mismatch.py), not one call
            return f"{self.dataset} task {self.task_id} trial {self.trial}: {self.replay_reason} [{self.kind}]"
        ours = "accepted" if self.replay_accepted else f"rejected ({self.replay_label}: {self.replay_reason})"
        theirs = f"error: {self.recorded_content}" if self.recorded_error else "accepted"
        return (
            f"{self.dataset} task {self.task_id} trial {self.trial} call {self.depth} {self.tool}: "
            f"recorded {theirs}; replay {ours} [{self.kind}]"
        )


def disagreements(record: PrefixRecord) -> list[Disagreement]:
    """The replayed calls of ``record`` whose verdict contradicts the recorded error flag.

    Calls without a recorded observation (or whose log has no error flag) are not compared.
    """
    found: list[Disagreement] = []
    if record.no_tool:
        return found
    for depth, (call, verdict) in enumerate(zip(record.actions, record.verdicts, strict=False), start=1):
        observation = call.observation
        if observation is None or observation.error is None:
            continue
        recorded_error = bool(observation.error)
        if recorded_error != verdict.accepted:
            continue
        # Our toolkit rejections carry tau2's "Error: ..." text; anything else is a check tau2 does not make.
        extra = not verdict.accepted and not verdict.reason.startswith("Error:")
        found.append(
            Disagreement(
                dataset=record.dataset,
                task_id=record.task_id,
                trial=record.trial,
                depth=depth,
                tool=call.name,
                arguments=dict(call.arguments),
                recorded_error=recorded_error,
                recorded_content=observation.content,
                replay_accepted=verdict.accepted,
                replay_label=verdict.label.value if verdict.label else None,
                replay_reason=verdict.reason,
                kind="extra-check" if extra else "env-skew",
            )
        )
    return found


def compared(record: PrefixRecord) -> int:
    """How many replayed calls of ``record`` :func:`disagreements` compares (those with a recorded error flag)."""
    if record.no_tool:
        return 0
    return sum(
        1
        for call, _ in zip(record.actions, record.verdicts, strict=False)
        if call.observation is not None and call.observation.error is not None
    )


def summarize(entries: Iterable[Disagreement]) -> dict[str, int]:
    """Counts by kind, for the command's summary line."""
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry.kind] = counts.get(entry.kind, 0) + 1
    return counts


@dataclass
class Consistency:
    """The consistency check of one scoring run, fed one record at a time (``score_to_file``'s ``on_record``):
    the disagreements found, how many calls had a recorded error flag to compare, and the units scored."""

    found: list[Disagreement] = field(default_factory=list)
    calls: int = 0
    scored: set[UnitKey] = field(default_factory=set)

    def add(self, record: PrefixRecord) -> None:
        self.found.extend(disagreements(record))
        self.calls += compared(record)
        self.scored.add(record.key)

    def restart(self) -> None:
        """Forget the comparisons (not the scored units), to compare a resumed output's every record again."""
        self.found.clear()
        self.calls = 0

    def compare_again(self, records: Iterable[PrefixRecord]) -> None:
        """Forget the comparisons made so far and make them on ``records`` (a resumed output's every record,
        the kept ones included), adding them to the scored units."""
        self.restart()
        for record in records:
            self.add(record)

    def write(self, path: str, log: TextIO, *, first: Sequence[Disagreement] = ()) -> None:
        """Write the report (a JSON list of :meth:`Disagreement.to_json`: the entries ``first``, then those
        found) to ``path`` and say on ``log`` what it holds: every entry, or that replay agrees, or that no call
        could be compared."""
        entries = [*first, *self.found]
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(
            json.dumps([d.to_json() for d in entries], indent=1, default=str) + "\n", encoding="utf-8"
        )
        if not self.calls:
            print(f"prefix-exec: consistency: no call with a recorded error flag to compare -> {path}", file=log)
            return
        if not entries:
            agrees = f"replay agrees with every recorded error flag ({self.calls} calls)"
            print(f"prefix-exec: consistency: {agrees} -> {path}", file=log)
            return
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(summarize(entries).items()))
        print(
            f"prefix-exec: consistency: {len(entries)} disagreement(s) ({counts}) in {self.calls} calls compared "
            f"-> {path}",
            file=log,
        )
        for entry in entries:
            print(f"  {entry.describe()}", file=log)
