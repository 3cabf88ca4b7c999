"""Trial numbers as the input gives them: where a rollout's trial comes from (:class:`TrialRule`).

A rollout's identity is (dataset, task, model, method, trial). Its trial comes from, first found:

1. ``--trial N``: every rollout the command reads;
2. ``--trial-field PATH``: a dotted path into each input unit (a tau2 simulation, a BFCL result line, a
   transcript, a canonical rollout row, an inspect sample, a ToolSandbox summary row); a numeric part indexes
   a list (``runs.0.n``). A unit without it is an input error;
3. the input's own field, where its format has one (tau2's and tau-bench's ``trial``, a transcript's ``trial``
   or ``metadata.trial``, a canonical row's ``trial``, inspect's epoch less one);
4. none: the trial is 0 and :attr:`~prefix_exec.trajectory.Rollout.trial_given` is False.

A trial is an integer from 0 to 2^31 - 1 (a JSON ``true`` is not one).

Rollouts of one task read together that share the whole identity are then told apart, in input order, by
scoring's :class:`~prefix_exec.scoring.numbering.Numbering`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonObject

#: The largest trial number: a repetition index, kept within a signed 32-bit integer (and away from the digit
#: limit that would fail its formatting).
MAX_TRIAL = 2**31 - 1
#: Where tau2, tau-bench and canonical rows keep their trial.
OWN_FIELD = ("trial",)


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
class TrialRule:
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
FROM_INPUT = TrialRule()


def trial_number(value: Any, path: str) -> int:
    """``value`` as a trial; :class:`TrialError` naming ``path`` unless it is an integer from 0 to :data:`MAX_TRIAL`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TRIAL:
        big = isinstance(value, int) and value > MAX_TRIAL
        shown = f"an integer of about {int(value.bit_length() * 0.30103)} digits" if big else f"{value!r:.60}"
        raise TrialError(
            path,
            f"a trial must be an integer >= 0{f' and at most {MAX_TRIAL:,}' if big else ''}, got {shown}",
            hint="name another field with --trial-field PATH, or give every rollout one with --trial N",
        )
    return value


def trial_fields(trial: int | None) -> JsonObject:
    """A :class:`Rollout`'s ``trial`` and ``trial_given`` for what :meth:`TrialRule.read` returned."""
    return {"trial": trial or 0, "trial_given": trial is not None}


def lookup(data: Any, dotted: str) -> tuple[bool, Any]:
    """``(found, value)`` at a dotted path; a numeric part indexes a list (``scores.0.value``)."""
    node = data
    for part in dotted.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        # isdecimal, not isdigit ("²" is no int), and short (int() refuses 4,300 digits; no list is that long)
        elif isinstance(node, list) and part.isdecimal() and len(part) <= 18 and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node
