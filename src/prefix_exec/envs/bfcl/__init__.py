"""BFCL v3 multi-turn: a safe prefix-replay environment on BFCL's own API classes (its "backend").

- :mod:`.tasks` reads the tasks, ground truth and function docs shipped in ``bfcl-eval``;
- :mod:`.calls` decodes call strings with ``ast`` (literal arguments only, never ``eval``);
- :mod:`.api_classes` builds fresh, isolated API instances per rollout;
- :mod:`.invocation` invokes one call under a static cost bound and a wall-clock bound;
- :mod:`.labels` maps the APIs' errors to failure labels;
- :mod:`.environment` is the :class:`~prefix_exec.envs.base.Environment` (per-action checks);
- :mod:`.checker` is BFCL's final-success rule on the safe invocation;
- :mod:`.sample` is our deterministic 4 x 50 stratified sample (``stratified-200``; not the paper's ids).

``bfcl_eval`` is imported only when a task or API class is first needed.
"""

from prefix_exec.envs.bfcl.checker import Check, FinalSuccess
from prefix_exec.envs.bfcl.environment import BfclEnvironment, BfclSession
from prefix_exec.envs.bfcl.tasks import CATEGORIES, BfclTask, load_task

__all__ = ["CATEGORIES", "BfclEnvironment", "BfclSession", "BfclTask", "Check", "FinalSuccess", "load_task"]
