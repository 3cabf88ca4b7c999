"""inspect_evals' tau2 airline task under a policy variant's name, as a user's copy of the task with its own policy
would be named (tests/fakes/inspect_logs.py runs it with ``inspect eval``; this file is loaded by inspect, never by
pytest). The task is inspect_evals' own, so its samples, store and scorer are exactly those of ``tau2_airline``:
only the task's name, which is what ``score inspect`` reads the domain from, is the variant's.
"""

from inspect_ai import Task, task
from inspect_evals.tau2.tau2 import tau2_airline


@task
def tau2_airline_tighter_policy(shuffle: bool = False) -> Task:
    return tau2_airline(shuffle=shuffle)
