"""A read tau2 results file matched with the installed tau2: its environment, its task-set check, its provenance.

``score tau`` (a results file) and ``score inspect`` (an inspect_evals tau2 log, read as one) both go through
:func:`load_results`: the domain's environment built on the file's embedded tasks, those tasks checked against the
paper's selection and the installed definitions (:func:`~prefix_exec.envs.tau.tasks.check_embedded`), and every
rollout stamped with the installed tau2 and whether its task's embedded definition differs
(``with_provenance``). Reading the file is the importers' (:mod:`prefix_exec.importers.tau`,
:mod:`prefix_exec.importers.inspect.tau`): what they give is seen here through :class:`ReadResults`.

A file must belong to its domain (the one it names, or ``--domain``): :func:`check_tools` compares its tool names
(the agent's calls, and the tools the file lists as offered) with the domain's tools. An agent may call a tool
that does not exist (a schema failure, scored); a file of another domain (a medical one given ``--domain
airline``) has mostly names the domain lacks. So the file is refused, naming them, when its unknown distinct
names are more than half of its distinct names, whatever their number (1 of 1 included: a file of another
domain whose agent called one tool, and which lists none as offered, is still another domain's); fewer are
listed in a note. On the shared real files no name is unknown (17 airline and retail files), a retail file read
as airline has 12 of 15 unknown, a medical file read as airline 2 of 2, and an agent that invents a tool or two
stays far below half of a file's names (a tau2 file lists the tools it offered).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self

from prefix_exec.envs.recipe import Recipe
from prefix_exec.envs.tau.domain import DOMAINS, Domain, Provenance, load_domain
from prefix_exec.envs.tau.mismatch import task_mismatch
from prefix_exec.envs.tau.session import RolloutEnvironment, TauEnvironment
from prefix_exec.envs.tau.tasks import TaskSetCheck, check_embedded
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping
from prefix_exec.records.consistency import Disagreement
from prefix_exec.trajectory import Rollout

#: Unknown names a message lists (the rest are counted).
LISTED_NAMES = 12


class ReadResults(Protocol):
    """A read results file (:class:`prefix_exec.importers.tau.TauResults`): its path and domain, its embedded
    tasks (task id -> raw tau2 task), its rollouts with the simulation each came from (``raw_simulations``, aligned),
    and a copy of it with provenance stamped on."""

    @property
    def path(self) -> str: ...

    @property
    def domain(self) -> str: ...

    @property
    def tasks(self) -> Mapping[str, JsonMapping]: ...

    @property
    def rollouts(self) -> Sequence[Rollout]: ...

    @property
    def raw_simulations(self) -> Sequence[JsonMapping]: ...

    @property
    def offered_tools(self) -> Sequence[str]:
        """The tool names the file lists as offered to the agent; empty when it lists none."""
        ...

    def with_provenance(self, provenance: Provenance, differing: tuple[str, ...] = ()) -> Self:
        """A copy whose rollouts name the installed tau2 and task set; ``differing``: the task ids whose
        embedded definition differs from the installed one."""
        ...


@dataclass(frozen=True)
class ToolCheck:
    """The tool names of a file against its domain's: ``names``, every distinct name the agent called or the file
    lists as offered, and ``unknown``, those the domain lacks (both sorted)."""

    domain: str
    names: tuple[str, ...]
    unknown: tuple[str, ...]

    @property
    def foreign(self) -> bool:
        """Whether the file is another domain's: its unknown names are more than half of its names (however
        few: 1 of 1 is another domain's)."""
        return 2 * len(self.unknown) > len(self.names)

    def listed(self) -> str:
        """The unknown names, the first :data:`LISTED_NAMES` of them."""
        more = len(self.unknown) - LISTED_NAMES
        return ", ".join(self.unknown[:LISTED_NAMES]) + (f" and {more} more" if more > 0 else "")

    def note(self) -> str | None:
        """What to say of the unknown names of a file that is not refused, or ``None`` without any."""
        if not self.unknown:
            return None
        return (
            f"{len(self.unknown)} of its {len(self.names)} tool names are not {self.domain} tools "
            f"({self.listed()}): calls of them are schema failures"
        )


def check_tools(results: ReadResults, domain: Domain) -> ToolCheck:
    """The tool names of ``results`` (its rollouts' calls and its offered list) against ``domain``'s tools."""
    names = {action.name for rollout in results.rollouts for action in rollout.actions}
    names.update(results.offered_tools)
    return ToolCheck(domain.name, tuple(sorted(names)), tuple(sorted(names - set(domain.tools))))


def check_override(results: ReadResults, named: str, data: str | None = None) -> None:
    """``--domain`` over a file that names another domain replay knows: an :class:`InputError` when the file's
    tool names fit the domain it names better (fewer unknown names) than the one given, since then the override
    is a mistake, not a variant read as its domain. A file naming a domain replay does not know is left to the
    usual rule (:attr:`ToolCheck.foreign`)."""
    if not named or named == results.domain or named not in DOMAINS:
        return
    own = check_tools(results, load_domain(named, data))
    given = check_tools(results, load_domain(results.domain, data))
    if len(own.unknown) < len(given.unknown):
        raise InputError(
            f"--domain {results.domain}, but the file's tools are {named}'s, as it says: {len(given.unknown)} of "
            f"its {len(given.names)} tool names are unknown in {results.domain} ({given.listed()}), "
            f"{len(own.unknown)} in {named}",
            path=results.path,
            hint=f"drop --domain for this file (it is read as {named}), or score it on its own",
        )


@dataclass(frozen=True)
class LoadedResults[R: ReadResults]:
    """A results file ready to score: ``results`` with provenance on every rollout, the ``env`` they replay on
    (bind it to a rollout: :meth:`TauEnvironment.bind`), the ``check`` of its embedded tasks and the ``tools``
    check of its tool names."""

    results: R
    env: TauEnvironment
    check: TaskSetCheck
    tools: ToolCheck

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
                model=rollout.model,
                method=rollout.method,
                trial=rollout.trial,
            )
            if entry is not None:
                found.append(entry)
        return found


def load_results[R: ReadResults](results: R, data: str | None = None, *, sequential: bool = False) -> LoadedResults[R]:
    """Match ``results`` with the installed tau2 (``data``: the ``--tau2-data`` folder, ``None`` for the default).

    ``sequential``: calls logged in one assistant message see each other's results (``--parallel-calls
    sequential``). A domain replay does not model, a file of another domain (:class:`ToolCheck`), or data that
    cannot be read or checked, raises :class:`~prefix_exec.errors.InputError`.
    """
    domain = load_domain(results.domain, data)
    tools = check_tools(results, domain)
    if tools.foreign:
        raise InputError(
            f"the file's tools are not {domain.name}'s: {len(tools.unknown)} of its {len(tools.names)} tool names "
            f"are unknown in {domain.name} ({tools.listed()})",
            path=results.path,
            hint="is it a results file of another domain? give its own with --domain (prefix-exec replays "
            "airline and retail), or leave it out",
        )
    env = TauEnvironment(domain, results.tasks, sequential_calls=sequential)
    check = check_embedded(env.domain, results.tasks)
    return LoadedResults(results.with_provenance(env.domain.provenance, check.differing), env, check, tools)


def bound_environment(
    domain: str, data: str | None, tasks: Mapping[str, JsonMapping], sequential: bool
) -> Callable[[Rollout], RolloutEnvironment]:
    """The environment each rollout of a results file replays on (``TauEnvironment.bind``) from the domain's name,
    the tau2 data folder, the file's tasks and ``sequential``, as :func:`load_results` builds it: what a worker
    process of ``score --workers N`` builds from :func:`recipe` (the domain is parsed once per process)."""
    return TauEnvironment(load_domain(domain, data), tasks, sequential_calls=sequential).bind


def recipe(loaded: LoadedResults[Any], data: str | None) -> Recipe:
    """How a worker process builds ``loaded``'s environment (``data``: the tau2 data folder it was loaded with)."""
    env = loaded.env
    return Recipe(bound_environment, (env.domain.name, data, loaded.results.tasks, env.sequential_calls))
