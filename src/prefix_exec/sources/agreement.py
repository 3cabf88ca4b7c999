"""Regrades of logs whose Y another harness computed (inspect logs): our rule beside the log's score.

Y of an imported inspect sample is the log's score. The regrade recomputes it, or the part we can, with our
environment, and the ``score inspect`` command reports how often the two agree:

- BFCL: the whole of BFCL's multi-turn rule (:class:`~prefix_exec.envs.bfcl.FinalSuccess`) on the rollout's
  calls, stored in each record as ``metadata.regrade = {success, reason?}``. inspect_evals' scorer replays only
  the calls its tools executed (a call inspect refused, say an unknown tool or arguments its schema rejects, is
  not replayed), while BFCL's rule executes every call: such samples can differ, and are listed.
- tau2 airline/retail: the DB check (:func:`~prefix_exec.envs.tau.regrade.regrade_db`). inspect_evals' Y is DB
  match *and* communicated info, so a sample with Y = 1 whose DB does not match is a disagreement, while Y = 0
  with a matching DB is counted apart (the communicated-info part may be what failed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from prefix_exec.envs.bfcl import FinalSuccess
from prefix_exec.envs.bfcl.tasks import load_task
from prefix_exec.envs.tau.regrade import regrades
from prefix_exec.envs.tau.results import LoadedResults
from prefix_exec.errors import ReplayError
from prefix_exec.trajectory import PrefixRecord, Rollout, UnitKey

REGRADE = "regrade"


@dataclass
class Agreement:
    """How a regrade compares with the logs' Y over the scored units."""

    what: str
    compared: int = 0
    agreed: int = 0
    apart: int = 0
    apart_note: str = ""
    differing: list[str] = field(default_factory=list)

    def describe(self) -> str:
        text = f"prefix-exec: regrade ({self.what}): {self.agreed}/{self.compared} agree with the log's Y"
        if self.apart:
            text += f"; {self.apart} {self.apart_note}"
        return text

    def write(self, log: TextIO) -> None:
        print(self.describe(), file=log)
        for line in self.differing:
            print(f"  regrade: {line}", file=log)


def with_bfcl_regrade(rollout: Rollout, checker: FinalSuccess) -> Rollout:
    """``rollout`` with BFCL's rule on its calls in ``metadata.regrade`` (its Y stays the log's)."""
    try:
        task = load_task(rollout.task_id)
    except KeyError:
        raise ReplayError(f"BFCL has no task {rollout.task_id} ({rollout.metadata.get('source', 'input')})") from None
    check = checker.check_rollout(task, rollout)
    regrade = {"success": int(check.success), **({"reason": check.reason} if check.reason else {})}
    return replace(rollout, metadata={**rollout.metadata, REGRADE: regrade})


def bfcl_agreement(records: Iterable[PrefixRecord]) -> Agreement:
    """The BFCL regrade of every record that carries one, against its Y."""
    agreement = Agreement("BFCL's multi-turn rule")
    for record in records:
        regrade = record.metadata.get(REGRADE)
        if record.dataset != "bfcl" or not isinstance(regrade, Mapping) or "success" not in regrade:
            continue
        agreement.compared += 1
        if int(regrade["success"]) == record.success:
            agreement.agreed += 1
        else:
            reason = f" ({regrade['reason']})" if regrade.get("reason") else ""
            agreement.differing.append(
                f"{record.task_id} trial {record.trial}: log Y={record.success}, BFCL's rule Y={regrade['success']}"
                + reason
            )
    return agreement


def tau_agreement(
    files: Sequence[LoadedResults[Any]],
    scored: set[UnitKey],
    *,
    keep_going: bool,
    log: TextIO,
) -> tuple[Agreement, int]:
    """The DB check of every scored tau2 sample, recomputed, against its Y; and how many could not be
    regraded (a malformed task: without ``keep_going`` the first raises :class:`InputError`)."""
    agreement = Agreement("tau2 DB check", apart_note="with Y = 0 match the DB (another reward part failed)")
    skipped: list[str] = []
    for _, rollout, result in regrades(files, scored, keep_going=keep_going, log=log, skipped=skipped):
        agreement.compared += 1
        if result.recomputed == bool(rollout.success):
            agreement.agreed += 1
        elif result.recomputed:
            agreement.apart += 1
        else:
            agreement.differing.append(
                f"{rollout.dataset} task {rollout.task_id} trial {rollout.trial}: log Y=1, but the DB does not "
                "match the task's expected actions"
            )
    return agreement, len(skipped)
