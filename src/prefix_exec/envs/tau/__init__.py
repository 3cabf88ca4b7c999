"""tau3-bench (tau2-bench v1.0.x) airline and retail: live prefix replay on the tau2 package's environment.

- :mod:`.backend`: the lazily imported tau2 package, data location, and the domain parsed once per process;
- :mod:`.state`: copy-on-access DB copies, one per rollout;
- :mod:`.binding`: schema binding of a call, and tau2's calculator without ``eval``;
- :mod:`.labels`: the table of tau2 error messages -> failure labels;
- :mod:`.information`: the information-availability check;
- :mod:`.session`: the environment and session (the :class:`~prefix_exec.envs.base.Session` contract);
- :mod:`.consistency`: our verdicts against the recorded error flags;
- :mod:`.tasks`: the paper's task set, checked against a results file's embedded tasks;
- :mod:`.regrade`: the DB part of the reward, recomputed.

Nothing here imports tau2 at module import time; the first environment built does.
"""

from prefix_exec.envs.tau.backend import Domain, load_domain
from prefix_exec.envs.tau.session import RolloutEnvironment, TauEnvironment, TauSession

__all__ = ["Domain", "RolloutEnvironment", "TauEnvironment", "TauSession", "load_domain"]
