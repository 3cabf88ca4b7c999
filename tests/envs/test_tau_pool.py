"""TauPool: a tau3 task id ``<domain>/<id>`` reaches its own domain's environment, never the other's."""

from __future__ import annotations

import pytest

from prefix_exec.envs.tau import TauEnvironment, load_domain
from prefix_exec.envs.tau.pool import TauPool


def test_colliding_ids_reach_their_own_domain() -> None:
    airline, retail = TauEnvironment(load_domain("airline")), TauEnvironment(load_domain("retail"))
    pool = TauPool({"airline": airline, "retail": retail})
    assert pool.part("airline/18") is airline
    assert pool.part("retail/18") is retail
    assert pool.part("airline/18").task("airline/18") == airline.tasks["18"]
    assert pool.part("retail/18").task("retail/18") == retail.tasks["18"]
    assert airline.tasks["18"] != retail.tasks["18"]  # the same bare id, two different tasks
    assert pool.start("retail/18").env is retail
    with pytest.raises(KeyError, match="names no domain"):
        pool.part("18")  # ambiguous in a pool of two
    with pytest.raises(KeyError, match="no telecom domain"):
        pool.part("telecom/1")
    with pytest.raises(KeyError, match="retail task, not airline"):
        airline.task("retail/18")
    alone = TauPool({"airline": airline})
    assert alone.part("18") is airline  # one domain: a bare id is that domain's
