"""Trial numbers: where a rollout's trial comes from, and how rollouts of one task read together get distinct ones.

A rollout's identity is (dataset, task, model, method, trial). Its trial comes from, first found:

1. ``--trial N``: every rollout the command reads;
2. ``--trial-field PATH``: a dotted path into each input unit (a tau2 simulation, a BFCL result line, a
   transcript, a canonical rollout row, an inspect sample, a ToolSandbox summary row); a numeric part indexes
   a list (``runs.0.n``). A unit without it is an input error;
3. the input's own field, where its format has one (tau2's and tau-bench's ``trial``, a transcript's ``trial``
   or ``metadata.trial``, a canonical row's ``trial``, inspect's epoch less one);
4. none: the trial is 0 and :attr:`~prefix_exec.trajectory.Rollout.trial_given` is False.

A trial is an integer >= 0 (a JSON ``true`` is not one).

:class:`Numbering` then tells apart, in input order, rollouts that share the whole identity:

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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonObject
from prefix_exec.records.codec import rollout_to_json
from prefix_exec.trajectory import Rollout, Skipped, UnitKey

#: Where tau2, tau-bench and canonical rows keep their trial.
OWN_FIELD = ("trial",)
#: The renumbered rollouts a summary names (the rest are counted).
EXAMPLES = 3
#: The metadata key of a renumbered rollout's note saying why.
NOTE = "trial_note"


class TrialError(ValueError):
    """A trial that cannot be read: the field ``--trial-field`` names is missing, or a value is no trial.
    ``field`` is its dotted path in the input unit; ``str()`` reads ``field 'x': message``."""

    def __init__(self, field: str, message: str, hint: str | None = None) -> None:
        self.field, self.message, self.hint = field, message, hint
        super().__init__(f"field {field!r}: {message}")

    def input_error(self, *, path: str | None = None, line: int | None = None, prefix: str = "") -> InputError:
        """This error as an :class:`InputError` at ``path``, ``line`` and the field under ``prefix``."""
        return InputError(self.message, path=path, line=line, field=prefix + self.field, hint=self.hint)


@dataclass(frozen=True)
class TrialSource:
    """Where each rollout's trial comes from: ``fixed`` (``--trial N``), else ``field`` (``--trial-field``),
    else the input's own fields (see the module docstring)."""

    fixed: int | None = None
    field: str | None = None

    def read(self, unit: Any, own: Sequence[str] = OWN_FIELD) -> int | None:
        """The trial of ``unit`` (a parsed JSON object), or ``None`` when it names none. ``own`` are the dotted
        paths where the input's format keeps it. Raises :class:`TrialError` for a missing ``--trial-field``
        or a value that is not an integer >= 0."""
        if self.fixed is not None:
            return self.fixed
        if self.field is not None:
            found, value = lookup(unit, self.field)
            if not found or value is None:
                hint = "--trial-field names where each input unit holds its trial"
                raise TrialError(self.field, "missing", hint=hint)
            return trial_number(value, self.field)
        for path in own:
            found, value = lookup(unit, path)
            if found and value is not None:
                return trial_number(value, path)
        return None


#: The trials the input itself gives (no ``--trial``, no ``--trial-field``): the importers' default.
FROM_INPUT = TrialSource()


def trial_number(value: Any, path: str) -> int:
    """``value`` as a trial; :class:`TrialError` naming ``path`` unless it is an integer >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TrialError(
            path,
            f"a trial must be an integer >= 0, got {value!r:.60}",
            hint="name another field with --trial-field PATH, or give every rollout one with --trial N",
        )
    return value


def trial_fields(trial: int | None) -> JsonObject:
    """A :class:`Rollout`'s ``trial`` and ``trial_given`` for what :meth:`TrialSource.read` returned."""
    return {"trial": trial or 0, "trial_given": trial is not None}


def lookup(data: Any, dotted: str) -> tuple[bool, Any]:
    """``(found, value)`` at a dotted path; a numeric part indexes a list (``scores.0.value``)."""
    node = data
    for part in dotted.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdecimal() and int(part) < len(node):  # not isdigit: "²" is no int
            node = node[int(part)]
        else:
            return False, None
    return True, node


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


def source_of(rollout: Rollout) -> str:
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
            _Renumbered(rollout.task_id, rollout.trial, trial, rollout.trial_given, source_of(rollout))
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
