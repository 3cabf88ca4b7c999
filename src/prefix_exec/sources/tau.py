"""tau2 results as units to score: ``score tau``'s results files and ``score inspect``'s tau2 logs (read as one).

:func:`tau_units` takes a loaded file (:func:`~prefix_exec.envs.tau.results.load_results`), gives its rollouts
distinct trials, says its task-set check (and what its tool names say) on the notes, and pairs every rollout with
the file's environment bound to it, which a worker process builds again from the file's recipe (the file is not
read again).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TextIO

from prefix_exec.envs.tau.results import LoadedResults, recipe
from prefix_exec.importers.tau import TauResults
from prefix_exec.scoring.numbering import Numbering
from prefix_exec.scoring.units import Scorable, with_environment
from prefix_exec.trajectory import Rollout, Skipped


def tau_units(
    loaded: LoadedResults[TauResults], numbering: Numbering, data: str | None, *, name: str, notes: TextIO
) -> tuple[LoadedResults[TauResults], list[Scorable | Skipped]]:
    """``loaded`` with its rollouts numbered by ``numbering`` (trials distinct across files, before the
    consistency and regrade checks key on them), and its units: every rollout paired with the file's environment
    (``data``: the tau2 data folder it was loaded with), then the simulations it could not read. Says what the
    reading decided (a policy variant read as its domain, ``--domain`` over the file's own), the file's task-set
    check, and a note on its unknown tool names when it has some, on ``notes`` as ``prefix-exec: NAME: ...``."""
    for note in loaded.results.notes:
        print(f"prefix-exec: {name}: note: {note}", file=notes)
    loaded = replace(loaded, results=loaded.results.numbered(numbering.number))
    print(f"prefix-exec: {name}: {loaded.check.describe()}", file=notes)
    if loaded.tools.note() is not None:
        print(f"prefix-exec: {name}: note: {loaded.tools.note()}", file=notes)
    units: list[Rollout | Skipped] = [*loaded.results.rollouts, *loaded.results.skipped]
    return loaded, list(with_environment(units, loaded.env.bind, recipe(loaded, data)))
