"""What to score: a benchmark's logs paired with the environments they replay on (``Scorable`` units).

Each command that scores logs builds its units here from the readers of :mod:`prefix_exec.importers` and the
environments of :mod:`prefix_exec.envs`, then hands them to :mod:`prefix_exec.scoring`.
"""
