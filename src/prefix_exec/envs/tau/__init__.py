"""tau3-bench (tau2-bench v1.0.x) airline and retail: live prefix replay on the tau2 package's environment.

- :mod:`.domain`: a tau2 domain parsed once per process, the lazily imported tau2 package and its data location;
- :mod:`.state`: copy-on-access DB copies, one per rollout;
- :mod:`.binding`: schema binding of a call, and tau2's calculator without ``eval``;
- :mod:`.dispatch`: the one way a tool name from a file reaches tau2's toolkit (the domain's allow-list);
- :mod:`.labels`: the table of tau2 error messages -> failure labels;
- :mod:`.information`: the information-availability check and the evidence timeline a session feeds it;
- :mod:`.session`: the environment and its sessions, strict (ours) and tau2's own (the
  :class:`~prefix_exec.envs.base.Session` contract);
- :mod:`.pool`: tau3's domains as one environment, a task id ``<domain>/<id>`` routed to its domain's
  (:mod:`prefix_exec.envs.tau.pooled`);
- :mod:`.consistency`: our verdicts against the recorded error flags, and the report ``score tau`` writes;
- :mod:`.mismatch`: whether a simulation's conversation fits the task it is filed under (``task_mismatch``);
- :mod:`.judge`: token counts of tau2's NL-assertion judge, which tau2's evaluator does not return;
- :mod:`.tasks`: the paper's task set, checked against a results file's embedded tasks; a task's initial state
  and expected actions;
- :mod:`.regrade`: the DB part of the reward, recomputed for every scored simulation of the results files.
- :mod:`.results`: a read results file matched with the installed tau2 (its environment, task-set check and
  provenance: :func:`~.results.load_results`, what ``score tau`` and ``score inspect`` both run).

Nothing here imports tau2 at module import time; the first environment built does. The names below are loaded
from their module on first use (as the package ``prefix_exec`` does): BFCL's information check shares
:mod:`.information`, and importing it must not import :mod:`.domain` (asyncio, importlib.metadata and tomllib,
70 ms of every ``score bfcl`` start and of each of its workers').
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefix_exec.envs.tau.domain import Domain, load_domain
    from prefix_exec.envs.tau.session import RolloutEnvironment, Tau2Session, TauEnvironment, TauSession

__all__ = ["Domain", "RolloutEnvironment", "Tau2Session", "TauEnvironment", "TauSession", "load_domain"]

#: The module each name of ``__all__`` is defined in.
HOMES: dict[str, str] = {
    **dict.fromkeys(("Domain", "load_domain"), "prefix_exec.envs.tau.domain"),
    **dict.fromkeys(
        ("RolloutEnvironment", "Tau2Session", "TauEnvironment", "TauSession"), "prefix_exec.envs.tau.session"
    ),
}


def __getattr__(name: str) -> Any:
    """A name of ``__all__``, imported from its module the first time it is asked for (then kept here)."""
    home = HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    __import__(home)
    value = getattr(sys.modules[home], name)
    globals()[name] = value
    return value
