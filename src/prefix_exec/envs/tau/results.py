"""A read tau2 results file matched with the installed tau2: its environment, its task-set check, its provenance.

``score tau`` (a results file) and ``score inspect`` (an inspect_evals tau2 log, read as one) both go through
:func:`load_results`: the domain's environment built on the file's embedded tasks, those tasks checked against the
paper's selection and the installed definitions (:func:`~prefix_exec.envs.tau.tasks.check_embedded`), and every
rollout stamped with the installed tau2 and whether its task's embedded definition differs
(``with_provenance``). Reading the file is the importers' (:mod:`prefix_exec.importers.tau`,
:mod:`prefix_exec.importers.inspect_tau`): what they give is seen here through :class:`ReadResults`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self

from prefix_exec.envs.tau.consistency import Disagreement
from prefix_exec.envs.tau.domain import Provenance, load_domain
from prefix_exec.envs.tau.mismatch import task_mismatch
from prefix_exec.envs.tau.session import TauEnvironment
from prefix_exec.envs.tau.tasks import TaskSetCheck, check_embedded
from prefix_exec.trajectory import Rollout


class ReadResults(Protocol):
    """A read results file (:class:`prefix_exec.importers.tau.TauResults`): its path and domain, its embedded
    tasks (task id -> raw tau2 task), its rollouts with the simulation each came from (``sources``, aligned),
    and a copy of it with provenance stamped on."""

    @property
    def path(self) -> str: ...

    @property
    def domain(self) -> str: ...

    @property
    def tasks(self) -> Mapping[str, Mapping[str, Any]]: ...

    @property
    def rollouts(self) -> Sequence[Rollout]: ...

    @property
    def sources(self) -> Sequence[Mapping[str, Any]]: ...

    def with_provenance(self, provenance: Provenance, differing: tuple[str, ...] = ()) -> Self:
        """A copy whose rollouts name the installed tau2 and task set; ``differing``: the task ids whose
        embedded definition differs from the installed one."""
        ...


@dataclass(frozen=True)
class LoadedResults[R: ReadResults]:
    """A results file ready to score: ``results`` with provenance on every rollout, the ``env`` they replay on
    (bind it to a rollout: :meth:`TauEnvironment.bind`), and the ``check`` of its embedded tasks."""

    results: R
    env: TauEnvironment
    check: TaskSetCheck

    def mismatches(self) -> list[Disagreement]:
        """``task_mismatch`` entries (:mod:`.mismatch`): the rollouts whose conversation does not fit their task.
        A rollout of a task the environment does not know, or without a transcript, is passed over (an unknown
        task is reported when scoring)."""
        found = []
        for rollout in self.results.rollouts:
            if not self.env.knows(rollout.task_id) or rollout.transcript is None:
                continue
            entry = task_mismatch(
                self.env.task(rollout.task_id),
                rollout.transcript,
                dataset=rollout.dataset,
                task_id=rollout.task_id,
                trial=rollout.trial,
            )
            if entry is not None:
                found.append(entry)
        return found


def load_results[R: ReadResults](results: R, data: str | None = None, *, sequential: bool = False) -> LoadedResults[R]:
    """Match ``results`` with the installed tau2 (``data``: the ``--tau2-data`` folder, ``None`` for the default).

    ``sequential``: calls logged in one assistant message see each other's results (``--parallel-calls
    sequential``). A domain replay does not model, or data that cannot be read or checked, raises
    :class:`~prefix_exec.errors.InputError`.
    """
    env = TauEnvironment(load_domain(results.domain, data), results.tasks, sequential_calls=sequential)
    check = check_embedded(env.domain, results.tasks)
    return LoadedResults(results.with_provenance(env.domain.provenance, check.differing), env, check)
