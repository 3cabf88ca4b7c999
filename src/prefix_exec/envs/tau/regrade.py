"""Optional re-grade: the DB part of a tau2 reward, recomputed on the installed environment.

tau2's environment evaluator compares two end states by hash: the *predicted* one (the task's initial state,
then every recorded tool call of the simulation, failing ones included, since a failing call changes
nothing) and the *gold* one (the initial state, then the task's expected actions, errors ignored). Equal
hashes give ``db_match``. :func:`regrade_db` does the same with the installed tau2 toolkit (without tau2's
evaluator module, which would pull pandas and litellm) and reports simulations where it disagrees with the
recorded ``reward_info.db_check.db_match``. The other reward parts (communicate, NL assertions, action checks)
are not recomputed: the recorded reward stays Y.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TextIO

from prefix_exec.envs.tau.dispatch import invoke_tool
from prefix_exec.envs.tau.lazy import InvalidRecord
from prefix_exec.envs.tau.pooled import qualify
from prefix_exec.envs.tau.results import LoadedResults, ReadResults
from prefix_exec.envs.tau.session import TauEnvironment
from prefix_exec.envs.tau.state import RecordTexts, db_json, lazy_db, per_db_cache
from prefix_exec.envs.tau.tasks import expected_actions
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping
from prefix_exec.trajectory import Rollout, UnitKey


@dataclass(frozen=True)
class Regrade:
    """One simulation's recomputed DB check. ``recorded`` is ``None`` when the file has no db_check."""

    task_id: str
    trial: int
    simulation_id: str | None
    recorded: bool | None
    recomputed: bool
    reward: float | None

    @property
    def compared(self) -> bool:
        """Whether the file recorded a DB check to compare with (a missing one reproduces nothing)."""
        return self.recorded is not None

    @property
    def agrees(self) -> bool:
        """The recomputed check equals the recorded one (``False`` when nothing was recorded)."""
        return self.recorded is not None and self.recorded == self.recomputed

    def describe(self) -> str:
        return (
            f"task {self.task_id} trial {self.trial}: recorded db_match={self.recorded}, "
            f"recomputed db_match={self.recomputed} (recorded reward {self.reward})"
        )


#: The JSON of each base DB's records (:func:`~prefix_exec.envs.tau.state.db_json`), kept per DB by
#: :func:`~prefix_exec.envs.tau.state.per_db_cache`: one DB's text (~12 MB for airline), shared by every environment
#: of the domain and every task that starts from its base DB.
_BASE_TEXTS: dict[int, tuple[weakref.ref[Any], RecordTexts]] = {}


def _base_texts(base_db: Any) -> RecordTexts:
    texts: RecordTexts = per_db_cache(_BASE_TEXTS, base_db, {})
    return texts


def db_hash(env: TauEnvironment, task_id: str, calls: Iterable[tuple[str, JsonMapping]]) -> str:
    """The tau2 DB hash after running ``calls`` (name, arguments) from the task's initial state: tau2's
    ``get_dict_hash`` of the DB, the SHA-256 of :func:`~prefix_exec.envs.tau.state.db_json`."""
    initial = env.initial_db(task_id)
    # A task with its own initial DB (initialization data or actions) is written whole each time, as before.
    texts = _base_texts(initial) if initial is env.domain.base_db else {}
    db, flag = lazy_db(initial, initial=True)
    toolkit = env.domain.make_toolkit(db)
    for name, arguments in calls:
        spec = env.domain.tools.get(name)
        flag.call(read_only=spec is not None and spec.read_only)
        try:  # only the domain's tools run, calculate as our bounded version (dispatch.invoke_tool)
            invoke_tool(env.domain, toolkit, name, arguments if isinstance(arguments, Mapping) else {})
        except InvalidRecord:  # the domain's data is broken: no hash to compare
            raise
        except Exception:  # a failing call leaves the DB as tau2 leaves it; the evaluator ignores the error
            pass
        finally:
            flag.done()
    return hashlib.sha256(db_json(toolkit.db, texts).encode()).hexdigest()


def regrade_db(env: TauEnvironment, simulation: JsonMapping) -> Regrade:
    """Recompute ``db_match`` for one simulation of a results file (one the importer could read).

    An unknown task id or a malformed task raises :class:`~prefix_exec.errors.InputError`.
    """
    task_id = str(simulation["task_id"])
    try:
        task = env.task(task_id)
    except KeyError:
        raise InputError(f"environment {env.name!r} has no task {task_id!r}") from None
    predicted = [
        (str(call["name"]), call.get("arguments") or {})
        for message in simulation.get("messages") or []
        if message.get("role") in ("assistant", "user")
        for call in message.get("tool_calls") or []
    ]
    expected = [(str(action["name"]), action.get("arguments") or {}) for action in expected_actions(task)]
    match = db_hash(env, task_id, predicted) == db_hash(env, task_id, expected)
    reward_info = simulation.get("reward_info") or {}
    recorded = (reward_info.get("db_check") or {}).get("db_match")
    return Regrade(
        task_id=qualify(env.domain.name, task_id),
        trial=int(simulation.get("trial") or 0),
        simulation_id=simulation.get("id"),
        recorded=None if recorded is None else bool(recorded),
        recomputed=match,
        reward=reward_info.get("reward"),
    )


def regrades(
    files: Sequence[LoadedResults[Any]],
    scored: set[UnitKey],
    *,
    keep_going: bool,
    log: TextIO,
    skipped: list[str],
) -> Iterator[tuple[ReadResults, Rollout, Regrade]]:
    """The DB regrade of every scored simulation of ``files``, each on its file's environment, once per unit:
    those skipped while scoring and repeats of a unit are passed over. A simulation that cannot be regraded (a
    malformed task) is printed to ``log`` and appended to ``skipped``; without ``keep_going`` the first one
    raises :class:`InputError` instead."""
    done: set[UnitKey] = set()
    for loaded in files:
        results = loaded.results
        for rollout, simulation in zip(results.rollouts, results.raw_simulations, strict=True):
            if rollout.key not in scored or rollout.key in done:  # skipped while scoring, or a duplicate
                continue
            done.add(rollout.key)
            try:
                result = regrade_db(loaded.env, simulation)
            except InputError as exc:
                where = f"{results.path}: task {rollout.task_id} trial {rollout.trial}"
                if not keep_going:
                    raise InputError(
                        f"regrade: {where}: {exc.detail()}", hint="fix the task, or pass --keep-going"
                    ) from None
                skipped.append(where)
                print(f"prefix-exec: regrade: skipped {where}: {exc.detail()}", file=log)
                continue
            yield results, rollout, replace(result, trial=rollout.trial)  # the record's trial, as numbered


def regrade_files(
    files: Sequence[LoadedResults[Any]],
    scored: set[UnitKey],
    *,
    keep_going: bool,
    log: TextIO,
) -> int:
    """Recompute the DB check of every scored simulation of ``files`` on its file's environment; those skipped
    while scoring (listed there) and repeats of a unit are not. Each disagreement, each simulation that cannot
    be regraded and a closing count go to ``log``.

    Only simulations whose file records a ``db_check`` count as compared. Returns how many scored simulations
    could not be regraded (a malformed task): without ``keep_going`` the first one raises :class:`InputError`.
    """
    compared = reproduced = unrecorded = 0
    skipped: list[str] = []
    for results, _, result in regrades(files, scored, keep_going=keep_going, log=log, skipped=skipped):
        if not result.compared:
            unrecorded += 1
            continue
        compared += 1
        if result.agrees:
            reproduced += 1
        else:
            print(f"  regrade: {results.path}: {result.describe()}", file=log)
    text = f"prefix-exec: regrade: {reproduced}/{compared} recorded DB checks reproduced"
    if unrecorded:
        text += f"; {unrecorded} simulation(s) record no db_check, not compared"
    if skipped:
        text += f"; {len(skipped)} could not be regraded (listed above)"
    print(text, file=log)
    return len(skipped)
