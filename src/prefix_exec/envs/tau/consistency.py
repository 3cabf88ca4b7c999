"""tau's consistency report: where our replay and the recorded run disagree on whether a call failed.

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

The report's machinery (:class:`~prefix_exec.records.consistency.Disagreement`, the collector
:class:`~prefix_exec.records.consistency.Consistency` and its file) is :mod:`prefix_exec.records.consistency`,
shared with the generic environment's report; tau's comparison is :func:`compare_tau` (a
:data:`~prefix_exec.records.consistency.Compare`): a ``score tau`` run collects ``Consistency(compare_tau)``.
"""

from __future__ import annotations

from prefix_exec.records.consistency import Disagreement
from prefix_exec.trajectory import PrefixRecord


def compare_tau(record: PrefixRecord) -> tuple[list[Disagreement], int]:
    """tau's comparison of one record (a :data:`prefix_exec.records.consistency.Compare`): the replayed calls of
    ``record`` whose verdict contradicts the recorded error flag, and how many calls were compared.

    Calls without a recorded observation (or whose log has no error flag) are not compared.
    """
    return _disagreements(record), _compared(record)


def _disagreements(record: PrefixRecord) -> list[Disagreement]:
    """The entries of :func:`compare_tau`."""
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
            Disagreement.of_call(
                record,
                depth,
                recorded_error=recorded_error,
                recorded_content=observation.content,
                replay_accepted=verdict.accepted,
                replay_label=verdict.label.value if verdict.label else None,
                replay_reason=verdict.reason,
                kind="extra-check" if extra else "env-skew",
            )
        )
    return found


def _compared(record: PrefixRecord) -> int:
    """How many replayed calls of ``record`` :func:`compare_tau` compares (those with a recorded error flag)."""
    if record.no_tool:
        return 0
    return sum(
        1
        for call, _ in zip(record.actions, record.verdicts, strict=False)
        if call.observation is not None and call.observation.error is not None
    )
