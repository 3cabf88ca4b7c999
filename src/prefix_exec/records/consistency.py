"""Consistency reports: the calls where our verdict and what the run recorded of the call disagree.

A record holds our verdict of each replayed call and, on the call, what the run recorded when it made it
(``ToolCall.observation``). Where the two disagree the entry is listed, never hidden; a comparison function
(``Compare``) decides per record which calls disagree and how many it compared, and says why by each entry's
``kind``. Two comparisons exist, both of one signature, ``(record) -> (entries, calls compared)``:

- tau's (:func:`prefix_exec.envs.tau.consistency.compare_tau`): our replay on tau2's toolkit against tau2's
  ``error`` flags;
- the generic environment's (:func:`prefix_exec.envs.custom.evidence.compare_custom`, its policy bound by
  ``functools.partial``): our own checks against the recorded outcome (an error flag, or a reply the error
  pattern matches).

:class:`Consistency` (``Consistency(<the comparison>)``) collects one scoring run's entries (``score_to_file``'s
``on_record``) and writes the report: a JSON list of :meth:`Disagreement.to_json`, and one line on stderr.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TextIO, cast

from prefix_exec.json_types import JsonObject
from prefix_exec.records import outputs
from prefix_exec.records.infrastructure import name_of
from prefix_exec.trajectory import PrefixRecord, UnitKey

#: Characters a line on a terminal must not carry raw: C0 and C1 controls (line breaks, escapes that move the
#: cursor or recolour the screen) and DEL. Input's text is shown with them escaped (``\\n``, ``\\u001b``).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: The longest recorded reply an entry's line on stderr quotes (the report file keeps it whole).
SHOWN_CHARS = 300


@dataclass(frozen=True)
class Disagreement:
    """One call whose replayed outcome differs from the recorded one. ``depth`` is 1-based.

    The rollout is named by its whole key (``dataset``, ``task_id``, ``model``, ``method``, ``trial``): a file that
    holds several models' runs of one task (AgentDojo's runs of four pipelines, say) has one entry per run.
    ``recorded_error`` is what the run recorded (the call failed); ``replay_accepted``, ``replay_label`` and
    ``replay_reason`` are what our side said of it; ``kind`` names the comparison's reading of the difference.
    """

    dataset: str
    task_id: str
    model: str
    method: str
    trial: int
    depth: int
    tool: str
    arguments: JsonObject
    recorded_error: bool
    recorded_content: Any
    replay_accepted: bool
    replay_label: str | None
    replay_reason: str
    kind: str

    @classmethod
    def of_call(
        cls,
        record: PrefixRecord,
        depth: int,
        *,
        recorded_error: bool,
        recorded_content: Any,
        replay_accepted: bool,
        replay_label: str | None,
        replay_reason: str,
        kind: str,
    ) -> Disagreement:
        """The entry of ``record``'s call at ``depth`` (1-based, within ``record.actions``): the unit, the tool and a
        copy of its arguments from the record, the rest as given."""
        call = record.actions[depth - 1]
        return cls(
            dataset=record.dataset,
            task_id=record.task_id,
            model=record.model,
            method=record.method,
            trial=record.trial,
            depth=depth,
            tool=call.name,
            arguments=dict(call.arguments),
            recorded_error=recorded_error,
            recorded_content=recorded_content,
            replay_accepted=replay_accepted,
            replay_label=replay_label,
            replay_reason=replay_reason,
            kind=kind,
        )

    def to_json(self) -> JsonObject:
        # Shallow: the fields already hold JSON values, and asdict's deep copy recurses into the arguments.
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def key(self) -> UnitKey:
        return (self.dataset, self.task_id, self.model, self.method, self.trial)

    def describe(self) -> str:
        """The line on stderr, ``dataset/task (model, method, trial N) call K tool: ...``, input's text shown with
        its control characters escaped."""
        if self.kind == "task_mismatch":  # a whole simulation (envs/tau/mismatch.py), not one call
            return one_line(f"{name_of(self.key)}: {self.replay_reason} [{self.kind}]")
        ours = "accepted" if self.replay_accepted else f"rejected ({self.replay_label}: {self.replay_reason})"
        theirs = f"error: {_cut(self.recorded_content)}" if self.recorded_error else "accepted"
        side = "our checks" if self.kind == "recorded-refusal" else "replay"  # the step itself was rejected
        return one_line(
            f"{name_of(self.key)} call {self.depth} {self.tool}: recorded {theirs}; {side} {ours} [{self.kind}]"
        )


def _cut(content: Any) -> str:
    """A recorded reply as text (JSON for a structure), cut at :data:`SHOWN_CHARS`."""
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def one_line(text: str) -> str:
    """``text`` as one line safe on a terminal: each control character (:data:`_CONTROL`) as its JSON escape."""
    return _CONTROL.sub(lambda found: json.dumps(found.group())[1:-1], text)


#: A record's comparison: the disagreements found in it, and how many of its calls could be compared.
Compare = Callable[[PrefixRecord], tuple[list[Disagreement], int]]


def count_kinds(entries: Iterable[Disagreement]) -> dict[str, int]:
    """Counts by kind, for the command's line on stderr."""
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry.kind] = counts.get(entry.kind, 0) + 1
    return counts


@dataclass
class Consistency:
    """The consistency check of one scoring run, fed one record at a time (``score_to_file``'s ``on_record``):
    the disagreements found, how many calls had a recorded outcome to compare, and the units scored.

    ``compare`` judges one record; ``theirs`` names the recorded side in the line on stderr (``recorded error flag``
    for tau, ``recorded outcome`` for the generic environment).
    """

    compare: Compare
    theirs: str = "recorded error flag"
    found: list[Disagreement] = field(default_factory=list)
    calls: int = 0
    scored: set[UnitKey] = field(default_factory=set)

    def add(self, record: PrefixRecord) -> None:
        self.take(record.key, self.compare(record))

    @property
    def look(self) -> Compare:
        """The comparison, run where a record is made (a worker process, with ``score --workers``):
        :class:`~prefix_exec.scoring.replayer.Observer`'s first half."""
        return self.compare

    def take(self, key: UnitKey, seen: object) -> None:
        """Add the comparison ``seen`` (what :attr:`look` gave) of the record of ``key``."""
        found, calls = cast(tuple[list[Disagreement], int], seen)
        self.found.extend(found)
        self.calls += calls
        self.scored.add(key)

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

    def write(
        self, path: str, log: TextIO, *, first: Sequence[Disagreement] = (), inputs: Iterable[str | Path] = ()
    ) -> None:
        """Write the report (a JSON list of :meth:`Disagreement.to_json`: the entries ``first``, then those
        found) to ``path`` and say on ``log`` what it holds: every entry, or that replay agrees, or that no call
        could be compared. A ``path`` that is one of ``inputs`` or no regular file is an :class:`InputError`
        (:func:`prefix_exec.records.outputs.write_text`)."""
        entries = [*first, *self.found]
        rows = [d.to_json() for d in entries]
        try:
            text = json.dumps(rows, indent=1, default=str)
        except RecursionError:  # arguments nested past the indenting (pure Python) encoder's stack
            text = json.dumps(rows, default=str)
        outputs.write_text(path, text + "\n", inputs, option="--consistency")
        if not self.calls:
            print(f"prefix-exec: consistency: no call with a {self.theirs} to compare -> {path}", file=log)
            return
        if not entries:
            agrees = f"replay agrees with every {self.theirs} ({self.calls} calls)"
            print(f"prefix-exec: consistency: {agrees} -> {path}", file=log)
            return
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(count_kinds(entries).items()))
        print(
            f"prefix-exec: consistency: {len(entries)} disagreement(s) ({counts}) in {self.calls} calls compared "
            f"-> {path}",
            file=log,
        )
        for entry in entries:
            print(f"  {entry.describe()}", file=log)
