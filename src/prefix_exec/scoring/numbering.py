"""Distinct trials for rollouts of one task read together: :class:`Numbering`, in input order.

A rollout's identity is (dataset, task, model, method, trial); its trial is read from the input
(:mod:`prefix_exec.importers.trials`: ``--trial``, ``--trial-field``, the input's own field, else 0 and
:attr:`~prefix_exec.trajectory.Rollout.trial_given` False). :class:`Numbering` then tells apart, in input order,
rollouts that share the whole identity:

- byte-identical ones (the same :func:`rollout_digest`: the same rollout JSON, where it was read included)
  are one rollout read twice; they keep their trial, and scoring refuses the second as a duplicate;
- different ones are different runs: the first keeps its trial, each later one takes the trial after the
  highest its (dataset, task, model, method) had so far, and its record says why in ``metadata.trial_note``.
  So rollouts without trial numbers become trials 0, 1, 2, ..., and two tau2 results files that each hold
  trial 0 of a task give trials 0 and 1 (their own trials when those differ);
- with ``unique`` (``--unique-task``) different ones keep their trial too, and scoring refuses the later one,
  naming both.

Numbering depends only on the input order, so ``--resume`` over the same inputs in the same order gives every
rollout the trial it had, and the kept records are recognized; inputs in another order may be numbered
otherwise.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from prefix_exec.records.codec import rollout_to_json
from prefix_exec.trajectory import Rollout, Skipped, UnitKey

#: The renumbered rollouts a summary names (the rest are counted).
EXAMPLES = 3
#: The metadata key of a renumbered rollout's note saying why.
NOTE = "trial_note"


#: The last rollout digested and its digest: numbering and scoring's identity check both digest each rollout,
#: one after the other, mostly the same object (numbering returns it unchanged); the JSON of a transcript is
#: a tenth of the reading process's time. Rollouts are frozen and not changed once read.
_last_digest: tuple[Rollout | None, str] = (None, "")


def rollout_digest(rollout: Rollout) -> str:
    """A digest of the rollout's JSON (``io``'s, keys sorted): equal for byte-identical rollouts only."""
    global _last_digest
    last, digest = _last_digest
    if last is rollout:
        return digest
    text = json.dumps(rollout_to_json(rollout), sort_keys=True, ensure_ascii=True, default=repr)
    digest = hashlib.sha256(text.encode("ascii")).hexdigest()
    _last_digest = (rollout, digest)
    return digest


def where_read(rollout: Rollout) -> str:
    """`` from <where the rollout was read>`` for messages (ToolSandbox's ``metadata.scenario_dir``, the other
    importers' ``metadata.source``: a file, with its line or sample); empty when the importer does not say."""
    for key in ("scenario_dir", "source"):
        source = rollout.metadata.get(key)
        if isinstance(source, str) and source:
            return f" from {source}"
    return ""


@dataclass(frozen=True)
class _Renumbered:
    task: str
    before: int
    after: int
    given: bool
    source: str


@dataclass
class Numbering:
    """Distinct trials for one command's rollouts, in input order (see the module docstring); ``unique``: leave
    different rollouts of one identity as they are, for scoring to refuse."""

    unique: bool = False
    renumbered: list[_Renumbered] = field(default_factory=list)
    _taken: set[UnitKey] = field(default_factory=set, repr=False)  # the identities rollouts have had
    _highest: dict[tuple[str, str, str, str], int] = field(default_factory=dict, repr=False)
    # digest as read -> the trial it took and the note that said why (None: it kept its own)
    _trials: dict[str, tuple[int, str | None]] = field(default_factory=dict, repr=False)

    def number(self, rollout: Rollout) -> Rollout:
        """``rollout`` with its trial, the next free one when an earlier, different rollout has its identity."""
        digest = rollout_digest(rollout)
        taken = self._trials.get(digest)
        if taken is not None:  # one rollout read twice: the same as the first time, for scoring to refuse
            trial, note = taken
            return rollout if note is None else replace(rollout, trial=trial, metadata={**rollout.metadata, NOTE: note})
        group = rollout.key[:4]
        repeated = rollout.key in self._taken
        if repeated and self.unique:
            return rollout  # (unique) refused by scoring: both keep the identity
        if repeated:
            rollout = self._next_trial(rollout, self._highest[group] + 1)
        self._take(rollout.key, digest, rollout.metadata.get(NOTE) if repeated else None)
        return rollout

    def keeps(self, key: UnitKey, digest: str) -> bool:
        """Whether :meth:`number` returns a rollout of identity ``key`` and digest ``digest`` (as read) unchanged,
        as the first of both; if so, it is counted as :meth:`number` counts it. False (nothing counted) for a
        rollout read twice or an identity taken: :meth:`number` must see the rollout itself. For a rollout
        decoded in a worker process, which sends back only these (:mod:`prefix_exec.scoring.admission`)."""
        if digest in self._trials or key in self._taken:
            return False
        self._take(key, digest, None)
        return True

    def _take(self, key: UnitKey, digest: str, note: str | None) -> None:
        self._trials[digest] = (key[4], note)
        self._taken.add(key)
        self._highest[key[:4]] = max(self._highest.get(key[:4], -1), key[4])

    def rollouts(self, units: Iterable[Rollout | Skipped]) -> Iterator[Rollout | Skipped]:
        """``units`` with every rollout numbered, as they are asked for."""
        for unit in units:
            yield self.number(unit) if isinstance(unit, Rollout) else unit

    def _next_trial(self, rollout: Rollout, trial: int) -> Rollout:
        if rollout.trial_given:
            why = f"the input names trial {rollout.trial}, which an earlier, different rollout of this task has"
        else:
            why = "the input names no trial, and an earlier, different rollout of this task has trial 0"
        self.renumbered.append(
            _Renumbered(rollout.task_id, rollout.trial, trial, rollout.trial_given, where_read(rollout))
        )
        metadata = {**rollout.metadata, NOTE: f"trial {trial} by input order: {why}"}
        return replace(rollout, trial=trial, metadata=metadata)

    def describe(self) -> str | None:
        """One line saying which rollouts took another trial (a count and the first few), or ``None``."""
        if not self.renumbered:
            return None
        unnamed = sum(1 for r in self.renumbered if not r.given)
        tasks = len({r.task for r in self.renumbered})
        examples = "; ".join(
            f"task {r.task} trial {r.before} -> {r.after}{r.source}" for r in self.renumbered[:EXAMPLES]
        )
        more = f"; and {len(self.renumbered) - EXAMPLES} more" if len(self.renumbered) > EXAMPLES else ""
        return (
            f"{len(self.renumbered)} rollout(s) of {tasks} task(s) share their dataset, task, model, method and trial "
            f"with an earlier, different one ({unnamed} naming no trial, {len(self.renumbered) - unnamed} naming "
            f"one already taken): numbered as further trials in input order ({examples}{more}); each record says "
            "so in metadata.trial_note. --unique-task refuses them instead; --resume needs the inputs in the same "
            "order"
        )
