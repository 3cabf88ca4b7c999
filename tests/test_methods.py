"""Method names: the enum is the grid's allow-list, and free-form record names map onto a variant by prefix."""

from __future__ import annotations

import pytest

from prefix_exec.agents.variants import VARIANTS
from prefix_exec.methods import METHODS, Method, method_key, method_of


def test_every_method_has_a_variant_and_the_allow_list_is_the_enum() -> None:
    assert set(VARIANTS) == set(Method)
    assert METHODS == (
        "react",
        "prompt-planning",
        "plan-conditioned",
        "dual-loop",
        "dual-loop-accept-all",
        "guarded-react",
    )
    assert [m for m in Method if VARIANTS[m].prepare is not None] == [
        Method.PROMPT_PLANNING,
        Method.PLAN_CONDITIONED,
        Method.DUAL_LOOP,
        Method.DUAL_LOOP_ACCEPT_ALL,
    ]
    assert [m for m in Method if VARIANTS[m].guarded] == [Method.GUARDED_REACT]


#: A record's free-form method name -> the variant it maps onto (None: no variant).
NAMES: dict[str, Method | None] = {
    "react": Method.REACT,
    "ReAct (synthetic)": Method.REACT,
    "Plan-Cond. ReAct": Method.PLAN_CONDITIONED,
    "plan-conditioned": Method.PLAN_CONDITIONED,
    "dual-loop [verifier=M, K_val=3]": Method.DUAL_LOOP,
    "dual-loop-accept-all": Method.DUAL_LOOP_ACCEPT_ALL,  # the longest matching key wins
    "Dual Loop (accept all) [verifier=accept-all, K_val=3]": Method.DUAL_LOOP_ACCEPT_ALL,
    "dual-loop-accepted": Method.DUAL_LOOP,
    " Dual Loop ": Method.DUAL_LOOP,
    "prompt_planning": Method.PROMPT_PLANNING,
    "guarded-react": Method.GUARDED_REACT,
    "regraded": None,
    "planner": None,  # "plan" alone is no variant's prefix
    "": None,
}


@pytest.mark.parametrize(("name", "method"), NAMES.items())
def test_a_record_name_maps_onto_a_variant_by_its_key_prefix(name: str, method: Method | None) -> None:
    assert method_of(name) is method


def test_method_key() -> None:
    assert method_key("Plan-Cond. ReAct") == "plan_cond_react"
    assert Method.DUAL_LOOP.key == "dual_loop"
